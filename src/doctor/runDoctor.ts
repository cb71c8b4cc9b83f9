import type { Queryable } from '../db/queryable.js';
import type { AgentIsolationStatus } from '../runners/isolation/agentIsolation.js';
import type { TemporalSettings } from '../temporal/connection.js';
import { checkDatabase } from './databaseChecks.js';
import type { Finding } from './types.js';

/**
 * Everything `baton doctor` looks at (SPEC S5): the database as the deployment's login sees it,
 * how command agents are isolated, and whether the Temporal server they could reach asks for
 * credentials.
 */
export async function runDoctor(input: {
  db: Queryable;
  /** A login that may read the server's authentication rules (pg_hba_file_rules), when `db` may not. */
  administrator?: Queryable;
  temporal: TemporalSettings;
  isolation: AgentIsolationStatus;
}): Promise<Finding[]> {
  const findings = await checkDatabase(input.db, { administrator: input.administrator });
  for (const message of input.isolation.findings) {
    findings.push({ check: 'agent_isolation', message, fix: 'see docs/isolation.md' });
  }
  const { address, apiKey, tls } = input.temporal.connectionOptions;
  const reachable = agentsReach(input.isolation.network, address ?? 'localhost:7233');
  if (!apiKey && !tls && reachable) {
    findings.push({
      check: 'temporal_open',
      message: `the Temporal server at ${address ?? 'localhost:7233'} takes connections without credentials, and ${reachable}: an agent could start, signal or cancel workflows`,
      fix: 'give Temporal mTLS or an API key (TEMPORAL_TLS*, TEMPORAL_API_KEY), or run agents on the outside network (root worker, bubblewrap, slirp4netns) or with --agent-network none',
    });
  }
  return findings;
}

/** How command agents could reach a server at `address` (host:port), or undefined when they cannot. */
function agentsReach(network: AgentIsolationStatus['network'], address: string): string | undefined {
  if (network === 'none') return undefined;
  if (network === 'outside') {
    // The outside network has no way to the worker's loopback, and only there.
    const host = address.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
    return host === 'localhost' || /^127\./.test(host) || host === '::1'
      ? undefined
      : `command agents on the outside network can reach ${host}`;
  }
  return "command agents share the worker's network";
}
