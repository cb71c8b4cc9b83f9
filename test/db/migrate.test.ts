import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
});

afterAll(async () => {
  await db?.drop();
});

async function migrationsDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-migrations-'));
  for (const [name, sql] of Object.entries(files)) await writeFile(path.join(dir, name), sql);
  return dir;
}

describe('migrations', () => {
  it('applies each file exactly once when many migrators race, and nothing on a second run', async () => {
    const migrations = await loadMigrations();
    expect(migrations.length).toBeGreaterThan(0);
    // Separate pools, so the racers really are separate sessions contending for the lock.
    const pools = Array.from({ length: 6 }, () => createPool(db.url, { max: 1 }));
    try {
      const results = await Promise.all(pools.map((p) => migrate(p)));
      const appliedCounts = results.map((r) => r.applied.length).sort();
      expect(appliedCounts).toEqual([0, 0, 0, 0, 0, migrations.length]);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    const { rows } = await db.pool.query('SELECT id FROM baton.migrations ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual(migrations.map((m) => m.id));
    expect((await migrate(db.pool)).applied).toEqual([]);
  });

  it('rolls back a failing migration entirely and records nothing for it', async () => {
    const dir = await migrationsDir({
      '0001_ok.sql': 'CREATE TABLE baton.first_ok (id int);',
      '0002_broken.sql': 'CREATE TABLE baton.half_done (id int); SELECT no_such_function();',
    });
    const scratch = await createTestDatabase({ migrate: false });
    try {
      await expect(migrate(scratch.pool, await loadMigrations(dir))).rejects.toThrow(/migration 2_broken failed: .*no_such_function/);
      const { rows } = await scratch.pool.query('SELECT id FROM baton.migrations');
      expect(rows.map((r) => r.id)).toEqual([1]);
      const { rows: tables } = await scratch.pool.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'baton' ORDER BY table_name",
      );
      expect(tables.map((t) => t.table_name)).toEqual(['first_ok', 'migrations']);
    } finally {
      await scratch.drop();
    }
  });

  it('refuses to run against a database where an applied migration has since been edited', async () => {
    const edited = (await loadMigrations()).map((m) => (m.id === 2 ? { ...m, sql: `${m.sql}\n-- edited` } : m));
    await expect(migrate(db.pool, edited)).rejects.toThrow(/migration 2_events was changed after it was applied/);
    expect((await migrate(db.pool)).applied).toEqual([]);
  });

  it('refuses misnamed or non-consecutive migration files', async () => {
    await expect(loadMigrations(await migrationsDir({ '0001_a.sql': '', '0003_c.sql': '' }))).rejects.toThrow(
      /0003_c.sql: expected number 2/,
    );
    await expect(loadMigrations(await migrationsDir({ 'first.sql': '' }))).rejects.toThrow(/must be named NNNN_snake_case.sql/);
  });
});
