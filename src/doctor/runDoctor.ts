import type { Queryable } from '../db/queryable.js';
import type { AgentIsolationStatus } from '../runners/agentIsolation.js';
import type { TemporalSettings } from '../temporal/connection.js';
import { checkDatabase } from './databaseChecks.js';
import type { Finding } from './types.js';

/**
 * Everything `baton doctor` looks at (SPEC S5): the database as the deployment's login sees it,
 * how command agents are isolated, and whether the Temporal server they could reach asks for
 * credentials.
 */
export async function runDoctor(input: { db: Queryable; temporal: TemporalSettings; isolation: AgentIsolationStatus }): Promise<Finding[]> {
  const findings = await checkDatabase(input.db);
  for (const message of input.isolation.findings) {
    findings.push({ check: 'agent_isolation', message, fix: 'see docs/isolation.md' });
  }
  const { address, apiKey, tls } = input.temporal.connectionOptions;
  if (!apiKey && !tls && input.isolation.network !== 'none') {
    findings.push({
      check: 'temporal_open',
      message:
        `the Temporal server at ${address ?? 'localhost:7233'} takes connections without credentials, and command agents share ` +
        "the worker's network: an agent could start, signal or cancel workflows",
      fix: 'give Temporal mTLS or an API key (TEMPORAL_TLS*, TEMPORAL_API_KEY), or run agents with --agent-network none',
    });
  }
  return findings;
}
