import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { run } from '../dev/run.js';

// Merge commits made by baton itself need an identity; agents commit with their own.
const GIT_IDENTITY = ['-c', 'user.name=baton', '-c', 'user.email=baton@localhost'];

export function git(repo: string, args: string[]): Promise<string> {
  return run('git', ['-C', repo, ...GIT_IDENTITY, ...args]).then((r) => r.stdout.trim());
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
