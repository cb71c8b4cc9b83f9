import { mkdir, open, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { run } from '../dev/run.js';
import type { Claim } from '../tasks/types.js';
import type { Confinement } from './isolation/confinement.js';
import { runConfined } from './processes.js';

// Merge commits made by baton itself need an identity; agents commit with their own.
const GIT_IDENTITY = ['-c', 'user.name=baton', '-c', 'user.email=baton@localhost'];
/** How long git may take, run as an agent, to hand over the agent's commits. (Default: 10 min) */
const COLLECT_TIMEOUT_MS = 600_000;

/** git in a folder baton trusts: the shared repository, or a clone it made and has not handed over. */
export function git(repo: string, args: string[]): Promise<string> {
  return run('git', ['-C', repo, ...GIT_IDENTITY, ...args]).then((r) => r.stdout.trim());
}

/** How many times `ensureGitConfig` writes a setting another writer's lock on the config kept out. */
const CONFIG_WRITE_ATTEMPTS = 20;

/**
 * Makes `key` of `repo`'s config `value`, leaving it alone when it already is. Runs of one
 * repository start together (a graph's independent tasks), and git refuses a config write while
 * another holds the config's lock: a refused write is tried again until the setting is in place.
 */
export async function ensureGitConfig(repo: string, key: string, value: string): Promise<void> {
  const current = () => git(repo, ['config', '--get', key]).catch(() => undefined);
  for (let attempt = 1; ; attempt++) {
    if ((await current()) === value) return;
    try {
      await git(repo, ['config', key, value]);
      return;
    } catch (error) {
      if (attempt >= CONFIG_WRITE_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}

/** The branch a claim's work is kept on: in the repository, and on the graph's remote when it has one. */
export function runBranch(claim: Pick<Claim, 'graphId' | 'key' | 'claimVersion'>): string {
  return `baton/${claim.graphId}/${claim.key}/v${claim.claimVersion}`;
}

/** A task's pins in the order its checkout merges them (and the verifier rebuilds that merge): by upstream key. */
export function pinsInMergeOrder(pins: Record<string, string>): [string, string][] {
  return Object.entries(pins).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The commit `revision` (a branch, a tag, HEAD) names in `repo` now. */
export function resolveCommit(repo: string, revision: string): Promise<string> {
  return git(repo, ['rev-parse', '--verify', '--end-of-options', `${revision}^{commit}`]);
}

/** Creates a worktree at `dir` on a new branch from `base`; a leftover worktree there is replaced. */
export async function addWorktree(repo: string, dir: string, branch: string, base: string): Promise<void> {
  await removeWorktree(repo, dir);
  await mkdir(path.dirname(dir), { recursive: true });
  await git(repo, ['worktree', 'add', '--force', '-B', branch, dir, base]);
}

/** A detached, clean checkout of exactly `revision`. */
export async function addDetachedWorktree(repo: string, dir: string, revision: string): Promise<void> {
  await removeWorktree(repo, dir);
  await mkdir(path.dirname(dir), { recursive: true });
  await git(repo, ['worktree', 'add', '--force', '--detach', dir, revision]);
}

export async function removeWorktree(repo: string, dir: string): Promise<void> {
  await git(repo, ['worktree', 'remove', '--force', dir]).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
  await git(repo, ['worktree', 'prune']).catch(() => undefined);
}

/**
 * A clone of `repo` at `dir` with `revision` checked out, on `branch` or detached. An isolated
 * agent gets a clone rather than a worktree: a worktree's `.git` points into the shared
 * repository, which the agent would need to write (objects, refs), and so could rewrite every
 * other task's branch. A local clone hard-links the repository's objects, so it costs about what
 * a worktree's checkout costs (docs/isolation.md).
 */
export async function cloneAt(repo: string, dir: string, revision: string, branch?: string): Promise<void> {
  await git(path.dirname(dir), ['clone', '--quiet', '--no-checkout', '--', repo, dir]);
  await git(dir, ['checkout', '--quiet', ...(branch ? ['-B', branch] : ['--detach']), revision]);
}

/**
 * Brings an isolated agent's commit into `repo` as `branch` and returns its revision, or undefined
 * when HEAD adds nothing to `known`. The worker never runs git itself in the agent's clone (its
 * config and hooks are the agent's: `core.fsmonitor` alone would run the agent's code as the
 * worker, which is why `safe.directory` is no answer): git runs confined as the agent to write a
 * bundle of what HEAD adds to `known` into a file of the worker's, and the repository fetches
 * what it holds with every object checked (`transfer.fsckObjects`), as a push would be (S6).
 */
export async function fetchAgentCommit(options: {
  repo: string;
  checkout: string;
  confinement: Confinement;
  env: NodeJS.ProcessEnv;
  branch: string;
  /** The checkout's HEAD before the agent ran (a merge of the upstream revisions, made in the clone): nothing committed. */
  unchanged: string;
  /** Revisions the repository has (the base and the merged upstream revisions). */
  known: string[];
  /** Where the bundle is written: a folder only the worker can reach. */
  bundleFile: string;
}): Promise<string | undefined> {
  const { checkout, confinement } = options;
  const env = { ...options.env, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0' };
  const asAgent = (args: string[], stdout?: number) =>
    runConfined(confinement, ['git', '-C', checkout, ...args], { cwd: checkout, env, timeoutMs: COLLECT_TIMEOUT_MS, stdout });
  const head = (await asAgent(['rev-parse', '--verify', 'HEAD^{commit}'])).trim();
  if (head === options.unchanged || options.known.includes(head)) return undefined;
  const file = await open(options.bundleFile, 'w', 0o600);
  try {
    await asAgent(['bundle', 'create', '--quiet', '-', 'HEAD', ...options.known.map((r) => `^${r}`)], file.fd);
  } finally {
    await file.close();
  }
  // git does not check the objects of a bundle it fetches (as of 2.39), so the bundle is unpacked
  // into a quarantine of the worker's first (it borrows the repository's objects), and the repository
  // fetches from there as from any remote, which checks every object it receives as strictly as a push.
  const quarantine = `${options.bundleFile}.quarantine`;
  try {
    await git(path.dirname(quarantine), ['init', '--quiet', '--bare', quarantine]);
    const objects = await git(options.repo, ['rev-parse', '--path-format=absolute', '--git-path', 'objects']);
    await writeFile(path.join(quarantine, 'objects', 'info', 'alternates'), `${objects}\n`);
    await git(quarantine, ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', options.bundleFile, '+HEAD:refs/heads/agent']);
    await git(options.repo, [
      '-c',
      'transfer.fsckObjects=true',
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
      quarantine,
      `+refs/heads/agent:refs/heads/${options.branch}`,
    ]);
  } finally {
    await rm(options.bundleFile, { force: true });
    await rm(quarantine, { recursive: true, force: true });
  }
  return git(options.repo, ['rev-parse', '--verify', `refs/heads/${options.branch}^{commit}`]);
}
