import { appendFile, mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Artifact } from '../tasks/types.js';
import { startToolEndpoint, type ToolEndpoint } from '../tools/agentEndpoint.js';
import { openRunCheckout, protectWorkerFiles, type AgentCheckout } from './agentCheckout.js';
import type { AgentIsolation } from './agentIsolation.js';
import { childEnv, runShell } from './processes.js';
import { AgentFailedError, type RunContext, type Runner } from './types.js';

/** How often the command runner heartbeats while its agent runs. (Default: 1s) */
export const COMMAND_HEARTBEAT_INTERVAL_MS_DEFAULT = 1_000;

export interface CommandRunnerOptions {
  /** Folder for per-task worktrees (unisolated agents) and logs. */
  workDir: string;
  /** (Default: 1s) */
  heartbeatIntervalMs?: number;
  /**
   * How agents are kept from the worker and each other, as resolved by `resolveAgentIsolation`
   * (docs/isolation.md). (Default: none: agents run as the worker's user, in worktrees)
   */
  isolation?: AgentIsolation;
}

/**
 * T10: starts the task's agent command in a per-task checkout (on a branch from the graph's
 * base with the pinned upstream revisions merged in), streams its output to the task's log,
 * heartbeats with progress, kills it on cancellation, and turns its commit into the artifact.
 * When the worker has tools, the agent gets a local endpoint bound to its claim (BATON_TOOL_URL,
 * BATON_TOOL_TOKEN) and `baton` on its PATH for `baton tool call`; never database credentials.
 * Isolated (S2), the agent runs under a uid of its own and/or in a sandbox, in a private clone,
 * and reaches the endpoint through a Unix socket in its folder (BATON_TOOL_SOCKET).
 */
export function createCommandRunner(options: CommandRunnerOptions): Runner {
  const workDirReady = protectWorkerFiles(options.workDir, options.isolation);
  workDirReady.catch(() => undefined); // reported by the first run that awaits it
  return {
    async run(ctx: RunContext): Promise<Artifact> {
      const { claim } = ctx;
      const command = claim.spec.run.command;
      if (!command) throw new AgentFailedError(claim.taskId, 'the command runner needs run.command');
      if (!ctx.repo) throw new AgentFailedError(claim.taskId, 'the graph names no repo for the command runner');
      await workDirReady;
      const logFile = path.join(options.workDir, 'logs', claim.graphId, `${claim.key}.log`);
      await mkdir(path.dirname(logFile), { recursive: true });
      const log = (line: string) => appendFile(logFile, `[v${claim.claimVersion}] ${line}\n`);

      const checkout = await openRunCheckout({ isolation: options.isolation, workDir: options.workDir, repo: ctx.repo, base: ctx.base, claim });
      try {
        const tools = ctx.callTool ? await agentToolAccess(ctx.callTool, checkout) : undefined;
        let lastLine = '';
        let lines = 0;
        let pid: number | undefined;
        const beat = async () => ctx.heartbeat({ host: hostname(), pid, lines, lastLine: lastLine.slice(0, 200) });
        const agentAbort = new AbortController();
        const onCancel = () => agentAbort.abort(ctx.signal.reason);
        ctx.signal.addEventListener('abort', onCancel, { once: true });
        if (ctx.signal.aborted) onCancel(); // cancelled while the checkout was being set up
        const timer = setInterval(() => {
          beat().catch((error: unknown) => {
            // A refused heartbeat means the claim is gone: stop the agent at once.
            agentAbort.abort(error);
          });
        }, options.heartbeatIntervalMs ?? COMMAND_HEARTBEAT_INTERVAL_MS_DEFAULT);
        try {
          const outcome = await runShell(command, {
            cwd: checkout.dir,
            signal: agentAbort.signal,
            confinement: checkout.confinement,
            env: checkout.env(
              childEnv({
                BATON_TASK_ID: claim.taskId,
                BATON_TASK_KEY: claim.key,
                BATON_CLAIM: `${claim.taskId}@${claim.claimVersion}`,
                BATON_CLAIM_VERSION: String(claim.claimVersion),
                BATON_UPSTREAM_REVISIONS: JSON.stringify(claim.upstreamRevisions),
                ...tools?.env,
              }),
            ),
            onStart: (p) => {
              pid = p;
              void log(`agent started: pid ${p}${checkout.user ? ` uid ${checkout.user.uid}` : ''}: ${command}`);
              void beat().catch(() => undefined);
            },
            onLine: (line) => {
              lines++;
              lastLine = line;
              ctx.log(line);
              void log(line);
            },
          });
          // An agent that finished on its own still gets its submit tried even if a heartbeat was
          // refused meanwhile: the fence decides, and a refused submit is recorded.
          if (outcome.exitCode !== 0) {
            throw new AgentFailedError(claim.taskId, `agent exited ${outcome.exitCode}: ${outcome.outputTail.trim().split('\n').slice(-3).join(' | ')}`);
          }
          const revision = await checkout.commit().catch((error: Error) => {
            throw new AgentFailedError(claim.taskId, `could not take the agent's commit: ${error.message}`);
          });
          if (revision === undefined) throw new AgentFailedError(claim.taskId, 'agent exited 0 but committed nothing');
          await log(`agent finished: commit ${revision}`);
          return {
            revision,
            baseRevision: checkout.baseRevision,
            testCommand: claim.spec.verify.command ?? claim.spec.verify.function ?? '',
            agentResult: { exitCode: outcome.exitCode, outputDigest: outcome.outputDigest },
          };
        } finally {
          clearInterval(timer);
          ctx.signal.removeEventListener('abort', onCancel);
          await tools?.endpoint.close();
        }
      } finally {
        await checkout.close();
      }
    },
  };
}

/** The endpoint for this run's tool calls, and the agent environment that reaches it. */
async function agentToolAccess(callTool: NonNullable<RunContext['callTool']>, checkout: AgentCheckout): Promise<{ endpoint: ToolEndpoint; env: Record<string, string> }> {
  const endpoint = await startToolEndpoint(callTool, { socketPath: checkout.socketPath, owner: checkout.user });
  return { endpoint, env: { ...endpoint.env, PATH: `${checkout.shimDir}${path.delimiter}${process.env.PATH ?? ''}` } };
}
