import pg from 'pg';

// Postgres int8 (bigint) columns hold claim versions and event ids; they fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/** Pool size baton opens unless told otherwise. */
export const POOL_SIZE_DEFAULT = 10;

/** Opens a pool against `connectionString`; a bad URL fails on first use with pg's own error. */
export function createPool(connectionString: string, options: { max?: number; applicationName?: string } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? POOL_SIZE_DEFAULT,
    application_name: options.applicationName ?? 'baton',
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

/** Drops `database` on the server at `url`, closing its connections; nothing when it is gone. */
export async function dropDatabase(url: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** Creates `database` on the server at `url` unless it exists. */
export async function ensureDatabase(url: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`).catch((error: { code?: string }) => {
        // Someone else created it between our check and our CREATE.
        if (error.code !== '42P04' && error.code !== '23505') throw error;
      });
    }
  } finally {
    await client.end();
  }
}
