// A stack whose process was killed (SIGKILL, a crash) leaves its servers running: the embedded
// Postgres and the Temporal dev server are processes of their own. The next start in the same
// home stops them, so it starts on its own data rather than beside, or against, the old servers.
import { SERVER_READY_TIMEOUT_MS_DEFAULT } from '../config.js';
import type { Log } from '../log.js';
import type { DevStackState } from './devStackState.js';
import { postmasterPidIn } from './embeddedPostgres.js';
import { processAlive, run } from './run.js';
import { waitFor } from './waitFor.js';

/**
 * Stops what a stack that is gone left running in its home: the Temporal dev server its state
 * file names (when that process is still a `temporal server start-dev`), and a postmaster still
 * running in `postgresDataDir`. Call it only holding the home (`claimDevStackHome`).
 */
export async function stopLeftoverServers(options: { stale?: DevStackState; postgresDataDir?: string; log: Log }): Promise<void> {
  const by = options.stale ? `, left running by \`${options.stale.command}\` (pid ${options.stale.pid}),` : '';
  const temporal = options.stale?.temporal;
  const temporalPort = temporal?.address.split(':').pop();
  // A process id may have been reused since: stop only what is still that server.
  if (temporal?.pid && (await isRunning(temporal.pid, ['start-dev', `--port ${temporalPort} `]))) {
    await stopProcess(temporal.pid, 'SIGTERM', 'the Temporal dev server', by, options.log);
  }
  const postmaster = options.postgresDataDir ? await postmasterPidIn(options.postgresDataDir) : undefined;
  // SIGINT is Postgres's fast shutdown: sessions end, the data is checkpointed.
  if (postmaster && (await isRunning(postmaster, [`-D ${options.postgresDataDir} `]))) {
    await stopProcess(postmaster, 'SIGINT', `the embedded Postgres in ${options.postgresDataDir}`, by, options.log);
  }
}

async function stopProcess(pid: number, signal: NodeJS.Signals, what: string, by: string, log: Log): Promise<void> {
  log(`Stopping ${what} (pid ${pid})${by} ...`);
  process.kill(pid, signal);
  await waitFor(
    `${what} (pid ${pid}) to stop`,
    async () => {
      if (await processAlive(pid)) throw new Error('still running');
    },
    { timeoutMs: SERVER_READY_TIMEOUT_MS_DEFAULT },
  );
}

/** Whether `pid` runs with a command line that contains each of `parts`. */
async function isRunning(pid: number, parts: string[]): Promise<boolean> {
  if (!(await processAlive(pid))) return false;
  const { stdout } = await run('ps', ['-o', 'args=', '-p', String(pid)]).catch(() => ({ stdout: '' }));
  const args = `${stdout.trim()} `;
  return parts.every((part) => args.includes(part));
}
