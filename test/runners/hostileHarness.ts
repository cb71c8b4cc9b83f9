// A worker-like process for the hostile-agent test: it runs a victim agent and, while the victim
// works, the hostile agent (hostileAgent.sh), both through the real command runner, and prints
// what the hostile agent reported as one JSON line. It runs as its own process so that its
// initial environment (what /proc/<pid>/environ shows) holds the canary the test looks for.
// Usage: node --import tsx hostileHarness.ts '<HarnessConfig JSON>'
import { timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type http from 'node:http';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { AgentApi } from '../../src/api/agentApi.js';
import { UnauthenticatedError } from '../../src/api/errors.js';
import { problemOf } from '../../src/api/problems.js';
import { newTokenSecret } from '../../src/api/tokenSecret.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { InvalidInputError, NotFoundError } from '../../src/errors.js';
import { resolveAgentIsolation, type AgentIsolationOptions } from '../../src/runners/isolation/agentIsolation.js';
import { createCommandRunner } from '../../src/runners/commandRunner.js';
import type { RunContext } from '../../src/runners/types.js';
import type { Claim } from '../../src/tasks/types.js';
import { taskIdOf } from '../../src/tasks/taskId.js';
import type { ToolCallInput, ToolCallResult } from '../../src/tools/types.js';

export interface HarnessConfig {
  /** Isolation as the worker would resolve it; `off` is the deliberately weakened set-up (agents as the worker's user, in worktrees). */
  isolation: AgentIsolationOptions | 'off';
  repo: string;
  workDir: string;
  /** The baton home, with `canary-secret` in it (also `BATON_HOME` of this process). */
  home: string;
  /** A folder of the worker's that no agent may write. */
  outside: string;
  graphId: string;
  /**
   * For the store attacks: where the test's database is and which submitted task to forge. No
   * credential: the harness holds one only in its own environment (`DATABASE_URL`, as a worker does).
   */
  store?: StoreTarget;
}

export interface StoreTarget {
  host: string;
  port: number;
  database: string;
  taskId: string;
  claimVersion: number;
  revision: string;
  /** A shared object another agent holds, and that agent's name. */
  object: string;
  actor: string;
}

export interface HarnessReport {
  attacks: Record<string, { outcome: 'succeeded' | 'blocked'; evidence: string }>;
  victimTokenSha: string;
  /** Tool calls the victim's endpoint performed (with the victim's token): the victim itself makes none. */
  victimToolCalls: ToolCallInput[];
  hostileRevision?: string;
  hostileError?: string;
  hostileUid?: number;
  victimUid?: number;
}

const SCRIPT = fileURLToPath(new URL('./hostileAgent.sh', import.meta.url));
/** baton's own source tree (and its `.baton` folder): where an attacker looks for defaults. */
const BATON_SRC = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
/** The victim keeps working until the hostile agent is done; then it is cancelled. */
const VICTIM_COMMAND = [
  'echo "victim secret $BATON_TASK_ID" > victim-secret.txt',
  'echo "VICTIM_DIR $PWD"',
  'echo "UID $(id -u)"',
  'echo "VICTIM_TOKEN_SHA $(printf %s "$BATON_TOKEN" | sha256sum | cut -c1-64)"',
  'while :; do sleep 0.2; done',
].join('\n');

const toolResult = (call: ToolCallInput): ToolCallResult => ({
  key: call.step,
  tool: call.tool,
  step: call.step,
  status: 'succeeded',
  result: { ok: true },
  attempts: 1,
  sentNow: 1,
  reconciled: false,
});

/**
 * A stand-in for the agent API a run's endpoint serves (src/api/agentApi.ts), for runs built by
 * hand without a store. The harness tests isolation (can an agent reach another run's endpoint,
 * token or files), not the store: the store's own token checks (run tokens bound to a claim, other
 * runs' tokens refused) are tested against the real API and Postgres in test/api and
 * test/tools/agentAccess.test.ts. Like the real one, it performs `tool.call` with this run's
 * `callTool` only for a bearer of this run's own random token, and answers anything else with a
 * problem (401 for a wrong or missing token), so a call that succeeds proves the caller had the token.
 */
function standInAgentApi(token: string, callTool: ((call: ToolCallInput) => Promise<ToolCallResult>) | undefined): AgentApi {
  const isToken = (secret: string) => secret.length === token.length && timingSafeEqual(Buffer.from(secret), Buffer.from(token));
  async function perform(secret: string, operation: string, input: unknown): Promise<unknown> {
    if (!isToken(secret)) throw new UnauthenticatedError('unauthenticated', "the token is not this run's");
    if (operation !== 'tool.call') throw new NotFoundError(`this stand-in serves tool.call only, not ${JSON.stringify(operation)}`);
    const call = (input ?? {}) as Partial<ToolCallInput>;
    if (typeof call.tool !== 'string' || typeof call.step !== 'string') throw new InvalidInputError('tool.call needs tool and step');
    if (!callTool) throw new InvalidInputError("this run's worker has no tools configured");
    return callTool({ tool: call.tool, step: call.step, params: call.params ?? null });
  }
  function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const fail = (error: unknown) => {
      const problem = problemOf(error);
      if (!res.headersSent) res.writeHead(problem.status, { 'content-type': 'application/problem+json' }).end(JSON.stringify(problem));
    };
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('error', fail);
    req.once('end', () => {
      const secret = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (secret === undefined || !isToken(secret))
        return fail(new UnauthenticatedError('unauthenticated', "an Authorization: Bearer <this run's token> header is required"));
      if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://run').pathname !== '/v1/tool.call') {
        return fail(new NotFoundError(`no route ${req.method} ${req.url}: this stand-in serves POST /v1/tool.call only`));
      }
      let input: unknown;
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      } catch {
        return fail(new InvalidInputError('the body is not JSON'));
      }
      perform(secret, 'tool.call', input)
        .then((result) => {
          if (!res.headersSent) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
        })
        .catch(fail);
    });
  }
  return { perform, handle };
}

function claimOf(graphId: string, key: string, command: string): Claim {
  return {
    taskId: taskIdOf(graphId, key),
    graphId,
    key,
    claimVersion: 1,
    spec: { run: { command }, verify: { command: 'true' } },
    upstreamRevisions: {},
  } as unknown as Claim;
}

async function main(config: HarnessConfig): Promise<HarnessReport> {
  const isolation = config.isolation === 'off' ? undefined : await resolveAgentIsolation(config.isolation);
  const runner = createCommandRunner({ workDir: config.workDir, isolation });
  const tcp = net.createServer((socket) => socket.end());
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  // "Outside": a service on this host's own non-loopback address, as far out as a test can reach here.
  const outsideHost = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  if (!outsideHost) throw new Error('this host has no non-loopback IPv4 address to stand for the outside network');
  const outside = net.createServer((socket) => socket.end());
  await new Promise<void>((resolve) => outside.listen(0, outsideHost, resolve));

  const victimLines: string[] = [];
  const victimToolCalls: ToolCallInput[] = [];
  let victimPid: number | undefined;
  const victimAbort = new AbortController();
  const context = (
    claim: Claim,
    lines: string[],
    onPid: (pid: number) => void,
    signal: AbortSignal,
    calls?: ToolCallInput[],
  ): RunContext => ({
    claim,
    repo: config.repo,
    base: 'main',
    signal,
    log: (line) => lines.push(line),
    heartbeat: async (progress) => {
      if (typeof progress.pid === 'number') onPid(progress.pid);
    },
    callTool: async (call) => {
      calls?.push(call);
      return toolResult(call);
    },
    // Each run's endpoint serves a stand-in of the agent API with a random token of that run's own (see standInAgentApi).
    openAgentApi: async (run) => {
      const token = newTokenSecret();
      return { api: standInAgentApi(token, run.callTool), token };
    },
  });
  const victimRun = runner.run(
    context(
      claimOf(config.graphId, 'victim', VICTIM_COMMAND),
      victimLines,
      (pid) => (victimPid = pid),
      victimAbort.signal,
      victimToolCalls,
    ),
  );
  victimRun.catch(() => undefined);
  const hostileLines: string[] = [];
  const report: HarnessReport = { attacks: {}, victimTokenSha: '', victimToolCalls };
  // Whatever fails on the way, the victim is stopped and the listeners closed.
  try {
    await waitFor(
      'the victim agent',
      async () => {
        if (!(victimPid && victimLines.some((l) => l.startsWith('VICTIM_TOKEN_SHA'))))
          throw new Error(`not started yet: ${victimLines.join('\n')}`);
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    const victimDir = victimLines.find((l) => l.startsWith('VICTIM_DIR '))!.slice('VICTIM_DIR '.length);

    const inputs = {
      WORKER_PID: process.pid,
      VICTIM_DIR: victimDir,
      VICTIM_PID: victimPid,
      VICTIM_BRANCH: `baton/${config.graphId}/victim/v1`,
      BATON_HOME_DIR: config.home,
      WORK_DIR: config.workDir,
      REPO: config.repo,
      OUTSIDE_DIR: config.outside,
      TCP_PORT: (tcp.address() as net.AddressInfo).port,
      OUTSIDE_HOST: outsideHost,
      OUTSIDE_PORT: (outside.address() as net.AddressInfo).port,
      BATON_SRC,
      ...(config.store && {
        STORE_HOST: config.store.host,
        STORE_PORT: config.store.port,
        STORE_DB: config.store.database,
        STORE_TASK: config.store.taskId,
        STORE_CLAIM: config.store.claimVersion,
        STORE_REVISION: config.store.revision,
        STORE_OBJECT: config.store.object,
        STORE_ACTOR: config.store.actor,
      }),
    };
    const command = `${Object.entries(inputs)
      .map(([k, v]) => `${k}='${v}'`)
      .join('\n')}\n${await readFile(SCRIPT, 'utf8')}`;
    try {
      const artifact = await runner.run(
        context(claimOf(config.graphId, 'hostile', command), hostileLines, () => undefined, new AbortController().signal),
      );
      report.hostileRevision = artifact.revision;
    } catch (error) {
      report.hostileError = (error as Error).message;
    }
  } finally {
    victimAbort.abort(new Error('the test is over'));
    await victimRun.catch(() => undefined);
    tcp.close();
    outside.close();
  }
  for (const line of hostileLines) {
    const match = /^ATTACK (\S+) (succeeded|blocked) ?(.*)$/.exec(line);
    if (match) report.attacks[match[1]!] = { outcome: match[2] as 'succeeded' | 'blocked', evidence: match[3]! };
  }
  report.victimTokenSha = victimLines.find((l) => l.startsWith('VICTIM_TOKEN_SHA '))?.slice('VICTIM_TOKEN_SHA '.length) ?? '';
  const uidOf = (lines: string[]) => Number(lines.find((l) => l.startsWith('UID '))?.slice(4)) || undefined;
  report.hostileUid = uidOf(hostileLines);
  report.victimUid = uidOf(victimLines);
  return report;
}

const report = await main(JSON.parse(process.argv[2]!) as HarnessConfig);
process.stdout.write(`${JSON.stringify(report)}\n`);
