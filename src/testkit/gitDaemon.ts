// `git daemon` on a loopback port, serving the bare repositories of one folder for fetch and push:
// a remote that baton's workers reach only over the network, for the production-topology test and
// the remote-repository benchmark.
import { spawn } from 'node:child_process';
import { freePort } from '../dev/freePort.js';
import { run } from '../dev/run.js';
import { waitFor } from '../dev/waitFor.js';
import { watchChild } from './workerProcess.js';

/** How long the daemon may take to answer its first `ls-remote` on a busy machine. */
const START_TIMEOUT_MS = 60_000;

export interface GitDaemon {
  /** `git://127.0.0.1:<port>/<name>`: the URL of `<dir>/<name>`. */
  url(name: string): string;
  stop(): Promise<void>;
}

/**
 * Serves every bare repository under `dir` (`--export-all`), pushes included (`receive-pack`; git
 * daemon has no authentication, so this is for loopback and tests only), and waits until it answers
 * for `probe`, a repository under `dir`.
 */
export async function startGitDaemon(dir: string, probe: string): Promise<GitDaemon> {
  const port = await freePort();
  const child = spawn(
    'git',
    ['daemon', '--reuseaddr', '--export-all', '--enable=receive-pack', '--listen=127.0.0.1', `--port=${port}`, `--base-path=${dir}`, dir],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const { output, exited } = watchChild(child);
  let gone = false;
  void exited.then(() => (gone = true));
  const url = (name: string) => `git://127.0.0.1:${port}/${name}`;
  const stop = async () => {
    if (!gone) child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitFor('git daemon to serve', () => run('git', ['ls-remote', url(probe)]), {
      timeoutMs: START_TIMEOUT_MS,
      intervalMs: 100,
      abort: () => (gone ? new Error(`git daemon exited: ${output().trim()}`) : undefined),
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}
