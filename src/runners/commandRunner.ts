import { appendFile, mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Artifact } from '../tasks/types.js';
import { startToolEndpoint, type ToolEndpoint } from '../tools/agentEndpoint.js';
import { ensureBatonShim } from './batonShim.js';
import { addWorktree, git, removeWorktree } from './git.js';
import { childEnv, runShell } from './processes.js';
import { AgentFailedError, type RunContext, type Runner } from './types.js';

/** How often the command runner heartbeats while its agent runs. (Default: 1s) */
export const COMMAND_HEARTBEAT_INTERVAL_MS_DEFAULT = 1_000;

export interface CommandRunnerOptions {
  /** Folder for per-task worktrees and logs. */
  workDir: string;
  /** (Default: 1s) */
  heartbeatIntervalMs?: number;
}

/**
 * T10: starts the task's agent command in a per-task git worktree (on a branch from the graph's
 * base with the pinned upstream revisions merged in), streams its output to the task's log,
 * heartbeats with progress, kills it on cancellation, and turns its commit into the artifact.
 * When the worker has tools, the agent gets a local endpoint bound to its claim (BATON_TOOL_URL,
 * BATON_TOOL_TOKEN) and `baton` on its PATH for `baton tool call`; never database credentials.
 */
export function createCommandRunner(options: CommandRunnerOptions): Runner {
  return {
    async run(ctx: RunContext): Promise<Artifact> {
      const { claim } = ctx;
      const command = claim.spec.run.command;
      if (!command) throw new AgentFailedError(claim.taskId, 'the command runner needs run.command');
      if (!ctx.repo) throw new AgentFailedError(claim.taskId, 'the graph names no repo for the command runner');
      const dir = path.join(options.workDir, 'worktrees', claim.graphId, `${claim.key}-v${claim.claimVersion}`);
      const logFile = path.join(options.workDir, 'logs', claim.graphId, `${claim.key}.log`);
      await mkdir(path.dirname(logFile), { recursive: true });
      const log = (line: string) => appendFile(logFile, `[v${claim.claimVersion}] ${line}\n`);

      await addWorktree(ctx.repo, dir, `baton/${claim.graphId}/${claim.key}/v${claim.claimVersion}`, ctx.base);
      try {
        for (const [key, revision] of Object.entries(claim.upstreamRevisions).sort()) {
          await git(dir, ['merge', '--no-edit', '-m', `baton: merge verified ${key} at ${revision}`, revision]).catch((error: Error) => {
            throw new AgentFailedError(claim.taskId, `merging upstream ${key} at ${revision} failed: ${error.message}`);
          });
        }
        const baseRevision = await git(dir, ['rev-parse', 'HEAD']);
        const tools = ctx.callTool ? await agentToolAccess(ctx.callTool, options.workDir) : undefined;
        let lastLine = '';
        let lines = 0;
        let pid: number | undefined;
        const beat = async () => ctx.heartbeat({ host: hostname(), pid, lines, lastLine: lastLine.slice(0, 200) });
        const agentAbort = new AbortController();
        const onCancel = () => agentAbort.abort(ctx.signal.reason);
        ctx.signal.addEventListener('abort', onCancel, { once: true });
        if (ctx.signal.aborted) onCancel(); // cancelled while the worktree was being set up
        const timer = setInterval(() => {
          beat().catch((error: unknown) => {
            // A refused heartbeat means the claim is gone: stop the agent at once.
            agentAbort.abort(error);
          });
        }, options.heartbeatIntervalMs ?? COMMAND_HEARTBEAT_INTERVAL_MS_DEFAULT);
        try {
          const outcome = await runShell(command, {
            cwd: dir,
            signal: agentAbort.signal,
            env: childEnv({
              BATON_TASK_ID: claim.taskId,
              BATON_TASK_KEY: claim.key,
              BATON_CLAIM: `${claim.taskId}@${claim.claimVersion}`,
              BATON_CLAIM_VERSION: String(claim.claimVersion),
              BATON_UPSTREAM_REVISIONS: JSON.stringify(claim.upstreamRevisions),
              ...tools?.env,
            }),
            onStart: (p) => {
              pid = p;
              void log(`agent started: pid ${p}: ${command}`);
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
          const revision = await git(dir, ['rev-parse', 'HEAD']);
          if (revision === baseRevision) throw new AgentFailedError(claim.taskId, 'agent exited 0 but committed nothing');
          await log(`agent finished: commit ${revision}`);
          return {
            revision,
            baseRevision,
            testCommand: claim.spec.verify.command ?? claim.spec.verify.function ?? '',
            agentResult: { exitCode: outcome.exitCode, outputDigest: outcome.outputDigest },
          };
        } finally {
          clearInterval(timer);
          ctx.signal.removeEventListener('abort', onCancel);
          await tools?.endpoint.close();
        }
      } finally {
        // The branch keeps the commit reachable; the worktree itself is scratch space.
        await removeWorktree(ctx.repo, dir);
      }
    },
  };
}

/** The endpoint for this run's tool calls, and the agent environment that reaches it. */
async function agentToolAccess(callTool: NonNullable<RunContext['callTool']>, workDir: string): Promise<{ endpoint: ToolEndpoint; env: Record<string, string> }> {
  const shimDir = await ensureBatonShim(workDir);
  const endpoint = await startToolEndpoint(callTool);
  return { endpoint, env: { ...endpoint.env, PATH: `${shimDir}${path.delimiter}${process.env.PATH ?? ''}` } };
}
