// A scratch database for a benchmark of the agent API: made from DATABASE_URL (a login that may
// create databases and roles, as the test suite's), migrated, with a baton_agent login as `baton
// serve` has; dropped with that login afterwards, whatever happened.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { readEnv } from '../src/config.js';
import { asLogin, ensureComponentLogin } from '../src/db/logins.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, dropDatabase, ensureDatabase, withDatabase } from '../src/db/pool.js';

/** Runs `fn` with the scratch database's administrator pool and a pool on its baton_agent login. */
export async function withScratchAgentDatabase<T>(prefix: string, fn: (db: { admin: pg.Pool; agent: pg.Pool }) => Promise<T>): Promise<T> {
  const adminUrl = readEnv('DATABASE_URL');
  if (!adminUrl) throw new Error('DATABASE_URL is not set: a login that may create a scratch database and roles');
  const name = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  await ensureDatabase(adminUrl, name);
  const admin = createPool(withDatabase(adminUrl, name));
  const login = `${name}_agent`;
  const password = randomBytes(18).toString('base64url');
  try {
    await migrate(admin);
    await ensureComponentLogin(admin, login, 'baton_agent', password);
    const agent = createPool(asLogin(withDatabase(adminUrl, name), login, password), { max: 4 });
    try {
      return await fn({ admin, agent });
    } finally {
      await agent.end();
    }
  } finally {
    await admin.end();
    await dropDatabase(adminUrl, name);
    const cleanup = createPool(adminUrl, { max: 1 });
    await cleanup.query(`DROP ROLE IF EXISTS ${login}`).catch(() => undefined);
    await cleanup.end();
  }
}
