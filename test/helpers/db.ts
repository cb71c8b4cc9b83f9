import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { copyDatabase, createPool, dropDatabase, ensureDatabase, withDatabase } from '../../src/db/pool.js';
import { asLogin, ensureComponentLogin } from '../../src/db/logins.js';
import { migrate } from '../../src/db/migrate.js';
import type { GroupRole } from '../../src/db/roles.js';

/** A login of a component: a new LOGIN role in one group role, as a deployment gives each component. */
export interface TestLogin {
  pool: pg.Pool;
  url: string;
  name: string;
}

export interface TestDatabase {
  /** The test's own administrator (it migrated the schema, so it may touch tables directly). */
  pool: pg.Pool;
  url: string;
  name: string;
  /** A login in `group` on this database, made on first call per group and dropped with it. */
  login(group: GroupRole): Promise<TestLogin>;
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file, dropped afterwards. */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject('databaseUrl');
  const name = `baton_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  if (options.migrate === false) await ensureDatabase(adminUrl, name);
  else await copyDatabase(adminUrl, inject('templateDatabase'), name);
  const url = withDatabase(adminUrl, name);
  const pool = createPool(url);
  // On a copy, a no-op but for what a copy does not carry: the database's own grants (to baton_owner).
  if (options.migrate !== false) await migrate(pool);
  const logins = new Map<GroupRole, Promise<TestLogin>>();
  const makeLogin = async (group: GroupRole): Promise<TestLogin> => {
    const login = `${name.replace('baton_test_', 't_')}_${group.replace('baton_', '')}`;
    const password = randomBytes(18).toString('base64url');
    await ensureComponentLogin(pool, login, group, password);
    const loginUrl = asLogin(url, login, password);
    return { pool: createPool(loginUrl), url: loginUrl, name: login };
  };
  return {
    pool,
    url,
    name,
    login: (group) => {
      if (!logins.has(group)) logins.set(group, makeLogin(group));
      return logins.get(group)!;
    },
    drop: async () => {
      const made = await Promise.all(logins.values());
      await Promise.all(made.map((l) => l.pool.end()));
      // A session of a login may outlive its pool (an activity still finishing on a busy machine).
      // DROP DATABASE ... WITH (FORCE) ends it only for a member of its role (PostgreSQL 15 gives a
      // CREATEROLE administrator no such right), so the administrator joins each login first.
      // Roles belong to the server, not the database: granted and dropped from the server's own database.
      const server = made.length ? createPool(adminUrl, { max: 1 }) : undefined;
      for (const l of made) await server!.query(`GRANT ${l.name} TO CURRENT_USER`);
      await pool.end();
      await dropDatabase(adminUrl, name);
      if (server) {
        for (const l of made) await server.query(`DROP ROLE IF EXISTS ${l.name}`);
        await server.end();
      }
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
    login: (group) => current().login(group),
    drop: () => current().drop(),
  };
}
