import { createHash, randomUUID } from 'node:crypto';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { run } from '../dev/run.js';
import { isRemoteRepo, REMOTE_PROTOCOLS } from '../tasks/repoLocation.js';
import { git, resolveCommit } from './git.js';

/** How long one fetch or push may take before the worker gives up on the remote. (Default: 10 min) */
const REMOTE_TIMEOUT_MS = 600_000;
/** A full object name: what a fetch by revision asks the remote for. */
const OBJECT_NAME = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
/** What git says when the remote answers but has no such revision (as opposed to being out of reach). */
const NOT_ON_REMOTE = /not our ref|couldn't find remote ref|no such remote ref|unadvertised object/i;
/** What git says when a fetched object fails its checks (`fetch.fsckObjects`): a `.git` entry, a `..` path. */
const FSCK_REFUSED = /fsck error in|error: object [0-9a-f]{40,}: \w+:/;

/** A commit on the remote holds objects no checkout may (git's fsck refuses them): whoever pushed it gamed it (S6). */
export class RefusedObjectsError extends Error {
  constructor(revision: string, detail: string) {
    super(`commit ${revision} on the graph's remote holds objects git refuses (fsck): ${detail}`);
  }
}

/**
 * The git repository a run or a verification works in. For a graph whose `repo` is a path, the
 * path itself (one machine). For a remote, this worker's mirror of it, under its work folder: the
 * mirror fetches what a run needs (the base, the pinned upstream revisions, the artifact to
 * verify) and publishes the agent's commit, so no two workers share a file system.
 */
interface WorkRepository {
  /** Where git runs: the graph's path, or the mirror (a bare repository). */
  dir: string;
  /** The graph's remote, when its `repo` is one. */
  remote?: string;
  /** The commit `revision` (a branch, a tag, HEAD, an object name) names now; on a remote, fetched. */
  resolve(revision: string): Promise<string>;
  /** Brings each revision the remote has into the mirror; one it lacks stays missing, for the checks to name. */
  fetch(revisions: readonly string[]): Promise<void>;
  /**
   * Publishes `revision` as branch `branch` of the remote, named by task and claim version: only that
   * claim's owner publishes there, so whatever the branch held (someone with push access squatting
   * the name of a coming claim) is replaced rather than left to refuse the push and wedge the task.
   */
  publish(branch: string, revision: string): Promise<void>;
}

export interface RepositoryMirrors {
  /** The repository to work in for a graph whose `repo` is this. */
  open(repo: string): Promise<WorkRepository>;
}

/** A path as the repository itself: nothing to fetch, nothing to publish (the run's branch is already in it). */
function localRepository(dir: string): WorkRepository {
  return {
    dir,
    resolve: (revision) => resolveCommit(dir, revision),
    fetch: async () => {},
    publish: async () => {},
  };
}

/**
 * Mirrors of remote repositories, one per remote, kept in `dir` (a folder of this worker's own, in
 * its work folder). The worker reaches each remote with its own credentials (SSH keys, a credential
 * helper); agents get clones of the mirror and never talk to the remote. Every object a mirror
 * fetches is checked as strictly as a push (`fetch.fsckObjects`), and git never prompts.
 */
export function repositoryMirrors(dir: string): RepositoryMirrors {
  const mirrors = new Map<string, Promise<WorkRepository>>();
  return {
    open(repo) {
      if (!isRemoteRepo(repo)) return Promise.resolve(localRepository(repo));
      let mirror = mirrors.get(repo);
      if (!mirror) {
        mirror = openMirror(dir, repo);
        mirrors.set(repo, mirror);
        mirror.catch(() => mirrors.delete(repo)); // the next run tries again
      }
      return mirror;
    },
  };
}

async function openMirror(mirrorsDir: string, remote: string): Promise<WorkRepository> {
  const name =
    remote
      .replace(/\.git$/, '')
      .split(/[/:]/)
      .filter(Boolean)
      .pop() ?? 'repo';
  const dir = path.join(
    mirrorsDir,
    `${name.replace(/[^A-Za-z0-9._-]/g, '_')}-${createHash('sha256').update(remote).digest('hex').slice(0, 12)}.git`,
  );
  const ready = await access(path.join(dir, 'HEAD')).then(
    () => true,
    () => false,
  );
  if (!ready) {
    // Made aside and moved into place, so a worker stopped half-way leaves nothing that looks finished.
    await mkdir(mirrorsDir, { recursive: true, mode: 0o700 });
    const making = path.join(mirrorsDir, `.making-${randomUUID()}`);
    try {
      await git(mirrorsDir, ['init', '--quiet', '--bare', making]);
      await git(making, ['remote', 'add', 'origin', remote]);
      await git(making, ['config', 'fetch.fsckObjects', 'true']);
      // What it fetched stays: objects fetched by name have no branch of the remote's to keep them.
      await git(making, ['config', 'gc.auto', '0']);
      await rename(making, dir).catch(async (error: NodeJS.ErrnoException) => {
        // Another run of this worker made it first.
        if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      });
    } finally {
      await rm(making, { recursive: true, force: true });
    }
  }
  const withRemote = serialized();
  const remoteGit = (args: string[]) =>
    run('git', ['-C', dir, ...args], {
      timeoutMs: REMOTE_TIMEOUT_MS,
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ALLOW_PROTOCOL: REMOTE_PROTOCOLS.join(':'), LC_ALL: 'C' },
    });
  const present = (revision: string) =>
    git(dir, ['cat-file', '-e', `${revision}^{commit}`]).then(
      () => true,
      () => false,
    );
  const fetchOne = async (revision: string): Promise<void> => {
    if (await present(revision)) return;
    await remoteGit([
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
      'origin',
      `${revision}:refs/baton/fetched/${revision}`,
    ]).catch((error: Error) => {
      if (FSCK_REFUSED.test(error.message)) throw new RefusedObjectsError(revision, error.message.split('\n').slice(-3).join(' | '));
      if (!NOT_ON_REMOTE.test(error.message)) throw remoteError(remote, error);
    });
  };
  return {
    dir,
    remote,
    resolve: (revision) =>
      withRemote(async () => {
        if (OBJECT_NAME.test(revision)) {
          await fetchOne(revision);
          return resolveCommit(dir, revision);
        }
        // A branch or tag is asked of the remote each time: the base moves on.
        await remoteGit(['fetch', '--quiet', '--no-tags', 'origin', '--end-of-options', revision]).catch((error: Error) => {
          throw remoteError(remote, error);
        });
        const commit = await resolveCommit(dir, 'FETCH_HEAD');
        await git(dir, ['update-ref', `refs/baton/fetched/${commit}`, commit]);
        return commit;
      }),
    fetch: (revisions) =>
      withRemote(async () => {
        for (const revision of revisions) if (OBJECT_NAME.test(revision)) await fetchOne(revision);
      }),
    publish: (branch, revision) =>
      withRemote(async () => {
        await remoteGit(['push', '--quiet', '--no-verify', 'origin', `+${revision}:refs/heads/${branch}`]).catch((error: Error) => {
          throw remoteError(remote, error);
        });
      }),
  };
}

function remoteError(remote: string, error: Error): Error {
  return new Error(`the graph's remote ${remote}: ${error.message}`);
}

/** Runs one call at a time, in order: fetches and pushes into one mirror never race on its refs. */
function serialized(): <T>(fn: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const next = last.then(fn, fn);
    last = next.catch(() => undefined);
    return next;
  };
}
