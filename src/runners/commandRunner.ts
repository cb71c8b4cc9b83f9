import { appendFile, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Artifact } from '../tasks/types.js';
import { AGENT_SOCKET_ENV, AGENT_TOKEN_ENV, AGENT_URL_ENV, startAgentServer, type AgentServer } from '../api/agentServer.js';
import { AGENT_LIMITS_DEFAULT } from './isolation/limits.js';
import { CLAIM_MARKER_ENV, claimMarker } from './isolation/claimMarker.js';
import { openRunCheckout, protectWorkerFiles, type AgentCheckout } from './agentCheckout.js';
import { git } from './git.js';
import type { AgentIsolation } from './isolation/agentIsolation.js';
import { childEnv, runShell } from './processes.js';
import { AgentFailedError, type RunContext, type Runner } from './types.js';

/** Lines of the agent's output each heartbeat carries (`progress.tail`), and how much of each. */
const PROGRESS_TAIL_LINES = 12;
const PROGRESS_LINE_CHARS_MAX = 200;

/** How often the command runner heartbeats while its agent runs. (Default: 1s) */
const COMMAND_HEARTBEAT_INTERVAL_MS_DEFAULT = 1_000;

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
 * The agent gets the agent API on an endpoint of its run (BATON_URL) with a token bound to its
 * claim (BATON_TOKEN), `baton` on its PATH (`baton tool call`, `baton api`, `baton mcp`), and a
 * ready `.mcp.json` for MCP clients; never database credentials. Isolated (S2), the agent runs
 * under a uid of its own and/or in a sandbox, in a private clone, and reaches the endpoint through
 * a Unix socket in its folder (BATON_SOCKET).
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

      const checkout = await openRunCheckout({
        isolation: options.isolation,
        workDir: options.workDir,
        repo: ctx.repo,
        base: ctx.base,
        claim,
      });
      try {
        let agentProgress: Record<string, unknown> | undefined;
        const access = ctx.openAgentApi
          ? await agentAccess(
              ctx,
              checkout,
              (progress) => (agentProgress = progress),
              options.isolation?.limits.connections ?? AGENT_LIMITS_DEFAULT.connections,
            )
          : undefined;
        if (access?.replacedMcpConfig) {
          await log(`replaced the .mcp.json the repository holds with baton's own: nothing committed by an agent runs for the next one`);
        }
        // The last lines of the agent's output travel with each heartbeat, so the operator's page can
        // show them wherever the worker runs (its whole log stays in the worker's work folder).
        const tail: string[] = [];
        let lines = 0;
        let pid: number | undefined;
        const beat = async () =>
          ctx.heartbeat({
            host: hostname(),
            pid,
            lines,
            lastLine: (tail.at(-1) ?? '').slice(0, 200),
            tail,
            ...(agentProgress ? { agent: agentProgress } : {}),
          });
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
                [CLAIM_MARKER_ENV]: claimMarker(claim.taskId, claim.claimVersion),
                BATON_CLAIM_VERSION: String(claim.claimVersion),
                BATON_UPSTREAM_REVISIONS: JSON.stringify(claim.upstreamRevisions),
                ...access?.env,
              }),
            ),
            onStart: (p) => {
              pid = p;
              void log(`agent started: pid ${p}${checkout.user ? ` uid ${checkout.user.uid}` : ''}: ${command}`);
              void beat().catch(() => undefined);
            },
            onLine: (line) => {
              lines++;
              tail.push(line.slice(0, PROGRESS_LINE_CHARS_MAX));
              if (tail.length > PROGRESS_TAIL_LINES) tail.shift();
              ctx.log(line);
              void log(line);
            },
          });
          // An agent that finished on its own still gets its submit tried even if a heartbeat was
          // refused meanwhile: the fence decides, and a refused submit is recorded.
          if (outcome.exitCode !== 0) {
            throw new AgentFailedError(
              claim.taskId,
              `agent exited ${outcome.exitCode}: ${outcome.outputTail.trim().split('\n').slice(-3).join(' | ')}`,
            );
          }
          const revision = await checkout.commit().catch((error: Error) => {
            throw new AgentFailedError(claim.taskId, `could not take the agent's commit: ${error.message}`);
          });
          if (revision === undefined) throw new AgentFailedError(claim.taskId, 'agent exited 0 but committed nothing');
          await log(`agent finished: commit ${revision}`);
          return {
            revision,
            baseRevision: checkout.baseRevision,
            baseCommit: checkout.baseCommit,
            testCommand: claim.spec.verify.command ?? claim.spec.verify.function ?? '',
            agentResult: { exitCode: outcome.exitCode, outputDigest: outcome.outputDigest },
          };
        } finally {
          clearInterval(timer);
          ctx.signal.removeEventListener('abort', onCancel);
          await access?.server.close();
        }
      } finally {
        await checkout.close();
      }
    },
  };
}

/** MCP clients (Claude Code and others read `.mcp.json`) start `baton mcp`, which reaches the run's endpoint. */
const MCP_CONFIG = { mcpServers: { baton: { command: 'baton', args: ['mcp'] } } };

/**
 * This run's endpoint of the agent API and the environment that reaches it. The MCP config holds
 * no secret (the token is in the environment) and is kept out of the agent's commits.
 */
async function agentAccess(
  ctx: RunContext,
  checkout: AgentCheckout,
  reportProgress: (progress: Record<string, unknown>) => void,
  connections: number,
): Promise<{ server: AgentServer; env: Record<string, string>; replacedMcpConfig: boolean }> {
  const { api, token } = await ctx.openAgentApi!({ callTool: ctx.callTool, reportProgress });
  const server = await startAgentServer(
    api,
    checkout.socketPath ? { socketPath: checkout.socketPath, owner: checkout.user } : { port: 0, host: '127.0.0.1' },
    {
      // S6: an agent cannot hold thousands of idle connections to its endpoint.
      maxConnections: connections,
    },
  );
  let replacedMcpConfig: boolean;
  try {
    replacedMcpConfig = await writeMcpConfig(checkout.dir, ctx.repo!);
  } catch (error) {
    await server.close();
    throw error;
  }
  return {
    replacedMcpConfig,
    server,
    env: {
      [AGENT_URL_ENV]: server.url,
      [AGENT_TOKEN_ENV]: token,
      ...(server.socketPath ? { [AGENT_SOCKET_ENV]: server.socketPath } : {}),
      PATH: `${checkout.shimDir}${path.delimiter}${process.env.PATH ?? ''}`,
    },
  };
}

/**
 * Writes the run's `.mcp.json` and keeps it out of the agent's commits (`info/exclude`). One the
 * repository holds (committed by an earlier agent, say, to start a server of its own for the next
 * one: T12) is removed first, and the run says so: true when it was. Never written through a link.
 */
async function writeMcpConfig(dir: string, repo: string): Promise<boolean> {
  const file = path.join(dir, '.mcp.json');
  const replaced = await rm(file, { force: false, recursive: true }).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false;
      throw error;
    },
  );
  await writeFile(file, `${JSON.stringify(MCP_CONFIG, null, 2)}\n`, { mode: 0o644, flag: 'wx' });
  // A private clone has its own .git folder (the agent has not run in it yet); a worktree shares its repository's.
  const ownGit = path.join(dir, '.git');
  const gitDir = (await stat(ownGit)).isDirectory() ? ownGit : path.resolve(repo, await git(repo, ['rev-parse', '--git-common-dir']));
  const exclude = path.join(gitDir, 'info', 'exclude');
  await mkdir(path.dirname(exclude), { recursive: true });
  const excluded = await readFile(exclude, 'utf8').catch(() => '');
  if (!excluded.split('\n').includes('/.mcp.json')) await appendFile(exclude, '\n/.mcp.json\n');
  return replaced;
}
