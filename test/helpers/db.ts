import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { inject } from 'vitest';
import { createPool, dropDatabase, ensureDatabase, withDatabase } from '../../src/db/pool.js';
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
  await ensureDatabase(adminUrl, name);
  const url = withDatabase(adminUrl, name);
  const pool = createPool(url);
  if (options.migrate !== false) await migrate(pool);
  return {
    pool,
    url,
    name,
    drop: async () => {
      await pool.end();
      await dropDatabase(adminUrl, name);
    },
  };
}
