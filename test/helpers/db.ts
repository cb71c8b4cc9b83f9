import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, expect, inject } from 'vitest';
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

/**
 * A migrated database of this test file's own: created before its tests, dropped after them.
 * Call at the top of the file: `const db = useTestDatabase();`.
 */
export function useTestDatabase(): TestDatabase {
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  const current = () => db ?? expect.unreachable('the test database exists only while the tests run');
  return {
    get pool() {
      return current().pool;
    },
    get url() {
      return current().url;
    },
    get name() {
      return current().name;
    },
    drop: () => current().drop(),
  };
}
