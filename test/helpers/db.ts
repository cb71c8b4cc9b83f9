import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createPool, withDatabase } from '../../src/db/pool.js';
import { migrate } from '../../src/db/migrate.js';

export interface TestDatabase {
  pool: pg.Pool;
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file, dropped afterwards. */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject('databaseUrl');
  const name = `baton_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = withDatabase(adminUrl, name);
  const pool = createPool(url);
  if (options.migrate !== false) await migrate(pool);
  return {
    pool,
    url,
    name,
    drop: async () => {
      await pool.end();
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
