import { randomUUID } from 'node:crypto';
import { chmod, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { batonHome } from '../config.js';
import type { Claim } from '../tasks/types.js';
import type { AgentIsolation } from './isolation/agentIsolation.js';
import { openAgentWorkspace, type AgentWorkspace } from './isolation/workspace.js';
import { ensureBatonShim } from './batonShim.js';
import {
  addDetachedWorktree,
  addWorktree,
  cloneAt,
  fetchAgentCommit,
  git,
  pinsInMergeOrder,
  removeWorktree,
  resolveCommit,
  runBranch,
} from './git.js';
import type { Confinement } from './isolation/confinement.js';
import { AgentFailedError } from './types.js';

/** Where one run's agent (or one verification) works, and how it is started there. */
export interface AgentCheckout {
  /** The folder the command runs in. */
  dir: string;
  /** HEAD before the agent ran: the base with the pinned upstream revisions merged in. */
  baseRevision: string;
  /** The commit the graph's base named when the checkout was made. */
  baseCommit: string;
  /** Folder of the `baton` shim for the agent's PATH. */
  shimDir: string;
  /** Where the run's tool endpoint listens when the agent is isolated: a Unix socket in its folder. */
  socketPath?: string;
  /** The run's own user, when agents run as per-run users. */
  user?: { uid: number; gid: number };
  confinement?: Confinement;
  /** The command's environment, from the scrubbed `base`. */
  env(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** The agent's commit, in the repository on the run's branch; undefined when it committed nothing. */
  commit(): Promise<string | undefined>;
  close(): Promise<void>;
}

/**
 * The checkout a command agent works in for `claim`: the graph's base with the pinned upstream
 * revisions merged in, on branch `baton/<graph>/<key>/v<claim>`. Unisolated, a worktree under
 * `<workDir>/worktrees`; isolated, a clone in a workspace of the run's own (docs/isolation.md),
 * whose commit is fetched into the repository when the agent is done.
 */
export async function openRunCheckout(options: {
  isolation?: AgentIsolation;
  workDir: string;
  repo: string;
  base: string;
  claim: Claim;
}): Promise<AgentCheckout> {
  const { claim, repo, isolation } = options;
  const branch = runBranch(claim);
  const upstream = pinsInMergeOrder(claim.upstreamRevisions);
  const mergeUpstream = async (dir: string) => {
    for (const [key, revision] of upstream) {
      await git(dir, ['merge', '--no-edit', '-m', `baton: merge verified ${key} at ${revision}`, revision]).catch((error: Error) => {
        throw new AgentFailedError(claim.taskId, `merging upstream ${key} at ${revision} failed: ${error.message}`);
      });
    }
    return git(dir, ['rev-parse', 'HEAD']);
  };

  const baseCommit = await resolveCommit(repo, options.base);
  if (!isolation?.isolated) {
    const dir = path.join(options.workDir, 'worktrees', claim.graphId, `${claim.key}-v${claim.claimVersion}`);
    await addWorktree(repo, dir, branch, baseCommit);
    try {
      const baseRevision = await mergeUpstream(dir);
      const shimDir = await ensureBatonShim(options.workDir);
      return {
        dir,
        baseRevision,
        baseCommit,
        shimDir,
        env: (base) => base,
        commit: async () => {
          const head = await git(dir, ['rev-parse', 'HEAD']);
          return head === baseRevision ? undefined : head;
        },
        // The branch keeps the commit reachable; the worktree itself is scratch space.
        close: () => removeWorktree(repo, dir),
      };
    } catch (error) {
      await removeWorktree(repo, dir);
      throw error;
    }
  }

  const workspace = await openAgentWorkspace(isolation, [options.workDir, repo]);
  try {
    await cloneAt(repo, workspace.checkout, baseCommit, branch);
    const baseRevision = await mergeUpstream(workspace.checkout);
    const shimDir = await ensureBatonShim(workspace.dir);
    await workspace.handOver();
    const bundles = path.join(options.workDir, 'bundles');
    return {
      ...isolatedParts(workspace),
      baseRevision,
      baseCommit,
      shimDir,
      socketPath: path.join(workspace.dir, 'baton.sock'),
      commit: async () => {
        await mkdir(bundles, { recursive: true, mode: 0o700 });
        return fetchAgentCommit({
          repo,
          checkout: workspace.checkout,
          confinement: workspace.offline,
          env: workspace.env({ PATH: process.env.PATH ?? '/usr/bin:/bin' }),
          branch,
          unchanged: baseRevision,
          known: [baseCommit, ...upstream.map(([, revision]) => revision)],
          bundleFile: path.join(bundles, `${randomUUID()}.bundle`),
        });
      },
    };
  } catch (error) {
    await workspace.close();
    throw error;
  }
}

/**
 * T7: a clean checkout of exactly `revision` for the verify command, which runs the repository's
 * code and so is as untrusted as the agent: isolated the same way when agents are.
 */
export async function openVerifyCheckout(options: {
  isolation?: AgentIsolation;
  workDir: string;
  repo: string;
  taskId: string;
  revision: string;
}): Promise<AgentCheckout> {
  const { isolation, repo } = options;
  if (!isolation?.isolated) {
    const dir = path.join(options.workDir, 'verify', `${options.taskId.replaceAll('/', '_')}-${randomUUID().slice(0, 8)}`);
    await addDetachedWorktree(repo, dir, options.revision);
    return {
      dir,
      baseRevision: options.revision,
      baseCommit: options.revision,
      shimDir: '',
      env: (base) => base,
      commit: async () => undefined,
      close: () => removeWorktree(repo, dir),
    };
  }
  const workspace = await openAgentWorkspace(isolation, [options.workDir, repo]);
  try {
    await cloneAt(repo, workspace.checkout, options.revision);
    await workspace.handOver();
    return {
      ...isolatedParts(workspace),
      baseRevision: options.revision,
      baseCommit: options.revision,
      shimDir: '',
      commit: async () => undefined,
    };
  } catch (error) {
    await workspace.close();
    throw error;
  }
}

/**
 * The work folder holds logs, worktrees and bundles; agents running as other users have no
 * business there, so with per-run users it is the worker's alone (0700). When it lies in the
 * baton home (the default), the home is made unreadable and unwritable by others too; it stays
 * searchable, because the embedded Postgres's OS user reaches its data folder through it.
 */
export async function protectWorkerFiles(workDir: string, isolation: AgentIsolation | undefined): Promise<void> {
  await mkdir(workDir, { recursive: true });
  if (isolation?.user !== 'per-run') return;
  await chmod(workDir, 0o700);
  const home = batonHome();
  if (!path.resolve(workDir).startsWith(`${home}${path.sep}`)) return;
  const info = await stat(home);
  if (info.uid === process.geteuid?.()) await chmod(home, info.mode & 0o7711);
}

function isolatedParts(workspace: AgentWorkspace) {
  return {
    dir: workspace.checkout,
    ...(workspace.user ? { user: workspace.user } : {}),
    confinement: workspace.confinement,
    env: workspace.env,
    close: () => workspace.close(),
  };
}
