import pg from 'pg';
import { readEnv } from '../config.js';
import { SQLSTATE } from '../errors.js';

const parseInt8 = (value: string) => Number(value);

/**
 * The type parsers of the pools `createPool` opens (and of `migrate`'s connection, which copies its
 * pool's options): int8 (bigint: claim versions, event ids, object versions, which stay far below
 * 2^53) as a number, anything else as pg parses it. Given per pool (pg's `types` option), never set
 * on `pg.types`, so importing baton leaves the host process's own parsing alone. A host may give
 * its own pool the same: `new pg.Pool({ ..., types: BATON_PG_TYPES })`.
 */
export const BATON_PG_TYPES: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) => (oid === pg.types.builtins.INT8 && format !== 'binary' ? parseInt8 : pg.types.getTypeParser(oid, format)),
};

/** Pool size baton opens unless told otherwise. */
export const POOL_SIZE_DEFAULT = 10;

/**
 * How long one query may wait for its answer before it fails (and its connection is dropped). A
 * server that stops answering without closing the connection (a partition, a frozen host) must fail
 * a call in seconds, not when TCP gives up a quarter of an hour later: a run whose heartbeats cannot
 * reach Postgres then goes silent to Temporal too and is recovered elsewhere. Longer than any query
 * baton makes. (Default: 60 s; `BATON_QUERY_TIMEOUT_MS`)
 */
const QUERY_TIMEOUT_MS_DEFAULT = 60_000;
const QUERY_TIMEOUT_ENV = 'BATON_QUERY_TIMEOUT_MS';
/** How long opening a connection may take. (Default: 15 s, or the query timeout if shorter) */
const CONNECT_TIMEOUT_MS_DEFAULT = 15_000;

/** Opens a pool against `connectionString`; a bad URL fails on first use with pg's own error. */
export function createPool(
  connectionString: string,
  options: { max?: number; applicationName?: string; queryTimeoutMs?: number } = {},
): pg.Pool {
  const fromEnv = Number(readEnv(QUERY_TIMEOUT_ENV));
  const queryTimeoutMs = options.queryTimeoutMs ?? (Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : QUERY_TIMEOUT_MS_DEFAULT);
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? POOL_SIZE_DEFAULT,
    application_name: options.applicationName ?? 'baton',
    query_timeout: queryTimeoutMs,
    // A connection that takes longer to open than a query may take to answer is as lost.
    connectionTimeoutMillis: Math.min(CONNECT_TIMEOUT_MS_DEFAULT, queryTimeoutMs),
    // The kernel notices a dead peer of an idle connection too.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    types: BATON_PG_TYPES,
  });
  // An idle client losing its server (Postgres restarted) must not crash the process; the next
  // query reconnects. Say so once per error rather than staying silent.
  pool.on('error', (error) => process.emitWarning(`baton: idle Postgres connection lost: ${error.message}`));
  return pool;
}

/** Returns `url` with its database name replaced. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * Runs `fn` on a client of its own connected to `url` (an administrator's, for statements that
 * cannot run in a transaction or a pool's session: CREATE and DROP DATABASE), and closes it.
 */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** How long a database statement refused for a session that leaves by itself is tried again. */
const SESSION_WAIT_MS = 60_000;

/**
 * Runs `sql`, again every `intervalMs` for up to `SESSION_WAIT_MS` while `passing(error)` says what
 * refused it will pass (a session that leaves by itself); any other refusal is thrown at once.
 */
async function whilePassing(
  client: pg.Client,
  sql: string,
  passing: (error: unknown) => Promise<boolean>,
  intervalMs: number,
): Promise<void> {
  const deadline = Date.now() + SESSION_WAIT_MS;
  for (;;) {
    try {
      await client.query(sql);
      return;
    } catch (error) {
      if (Date.now() > deadline || !(await passing(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}

const codeOf = (error: unknown) => (error as { code?: string }).code;

/** The sessions in `database` other than `client`'s own. */
async function sessionsIn(client: pg.Client, database: string): Promise<{ pid: number; who: string }[]> {
  const { rows } = await client.query<{ pid: number; who: string }>(
    'SELECT pid, coalesce(usename, backend_type) AS who FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [database],
  );
  return rows;
}

/**
 * Drops `database` on the server at `url`, closing its connections; nothing when it is gone.
 * `WITH (FORCE)` ends only sessions of roles the caller belongs to: a non-superuser administrator
 * cannot end an autovacuum worker that happens to be in the database, and PostgreSQL 15 refuses the
 * whole drop (insufficient_privilege). Such a session leaves by itself, so the drop is tried again
 * while one is there, and the error names what stayed if it never leaves. Any other refusal (say,
 * a login that does not own the database) is thrown at once, or at the second try when it looks like
 * that one (insufficient_privilege with nobody else in the database).
 */
export async function dropDatabase(url: string, database: string): Promise<void> {
  await withClient(url, async (client) => {
    const drop = `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`;
    // A refusal with nobody else in the database is final (a login that may not drop it at all),
    // but only the second time: the session that caused the first may have left before we looked.
    let refusedAlone = 0;
    const sessionStays = async (error: unknown) =>
      codeOf(error) === SQLSTATE.insufficientPrivilege && ((await sessionsIn(client, database)).length > 0 || ++refusedAlone < 2);
    await whilePassing(client, drop, sessionStays, 250).catch(async (error: unknown) => {
      throw await withSessions(client, database, error);
    });
  });
}

/**
 * Creates `database` as a copy of `template` (CREATE DATABASE ... TEMPLATE copies its files). No
 * session may be in the template meanwhile; one that is just closing (say, the one that filled it)
 * is waited out (object_in_use).
 */
export async function copyDatabase(url: string, template: string, database: string): Promise<void> {
  const copy = `CREATE DATABASE ${pg.escapeIdentifier(database)} TEMPLATE ${pg.escapeIdentifier(template)}`;
  await withClient(url, (client) => whilePassing(client, copy, async (error) => codeOf(error) === SQLSTATE.objectInUse, 100));
}

/** `error` with the sessions still in `database` added to its message, for a drop that gave up. */
async function withSessions(client: pg.Client, database: string, error: unknown): Promise<unknown> {
  if (!(error instanceof Error)) return error;
  const sessions = await sessionsIn(client, database).catch(() => []);
  if (sessions.length) error.message += ` (still in database ${database}: ${sessions.map((r) => `pid ${r.pid} (${r.who})`).join(', ')})`;
  return error;
}

/** Creates `database` on the server at `url` unless it exists. */
export async function ensureDatabase(url: string, database: string): Promise<void> {
  await withClient(url, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`).catch((error: { code?: string }) => {
        // Someone else created it between our check and our CREATE.
        if (error.code !== '42P04' && error.code !== '23505') throw error;
      });
    }
  });
}
