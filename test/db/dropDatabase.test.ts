// Dropping a test database waits out a session its administrator may not end. PostgreSQL 15 refuses
// DROP DATABASE ... WITH (FORCE) outright while a session of a role the caller is not a member of is
// in the database (an autovacuum worker is one; the suite's administrator is no superuser), and a
// suite run once failed on exactly that when a file's database was dropped. On the embedded
// Postgres the administrator is its superuser, so there the drop is made by the database's owner.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { asLogin } from '../../src/db/logins.js';
import { createPool, dropDatabase } from '../../src/db/pool.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { createTestDatabase } from '../helpers/db.js';

/**
 * A test database, the administrator's pool, the URL of a login that owns the database and may end
 * no one else's session (`ownerUrl`), and a new login (`role`, `password`) that neither owns nor may
 * end anything.
 */
async function withStrangerLogin(prefix: string) {
  const adminUrl = inject('databaseUrl');
  const db = await createTestDatabase({ migrate: false });
  const admin = createPool(adminUrl, { max: 1 });
  const newLogin = async (kind: string, options = '') => {
    const role = `t_${prefix}_${kind}_${randomBytes(6).toString('hex')}`;
    const password = randomBytes(18).toString('base64url');
    await admin.query(`CREATE ROLE ${role} LOGIN ${options} PASSWORD '${password}'`);
    return { role, password };
  };
  const { role, password } = await newLogin('stranger');
  const roles = [role];
  let ownerUrl = adminUrl;
  const { rows } = await admin.query<{ rolsuper: boolean }>('SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
  if (rows[0]!.rolsuper) {
    // The embedded Postgres's administrator is its superuser, who may end any session: the
    // database goes to a login with no more rights than the suite's administrator elsewhere.
    const owner = await newLogin('owner', 'CREATEDB');
    roles.push(owner.role);
    await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(db.name)} OWNER TO ${owner.role}`);
    ownerUrl = asLogin(adminUrl, owner.role, owner.password);
  }
  const cleanUp = async () => {
    await dropDatabase(adminUrl, db.name);
    for (const r of roles) await admin.query(`DROP ROLE IF EXISTS ${r}`);
    await admin.end();
  };
  return { adminUrl, ownerUrl, db, admin, role, password, cleanUp };
}

describe('dropDatabase', () => {
  it('waits for a session it may not end to leave, then drops the database', async () => {
    const { ownerUrl, db, admin, role: stranger, password, cleanUp } = await withStrangerLogin('stranger');
    const session = new pg.Client({ connectionString: asLogin(db.url, stranger, password) });
    try {
      await session.connect();
      await db.pool.end();
      let settled: string | undefined;
      const dropping = dropDatabase(ownerUrl, db.name).then(
        () => (settled = 'dropped'),
        (error: Error) => (settled = `refused: ${error.message}`),
      );
      // The drop was tried and refused (its session's last statement is the drop, and the stranger is
      // still in); while the stranger stays, it neither succeeds nor gives up.
      const drop = `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(db.name)} WITH (FORCE)`;
      await waitFor(
        'the drop to be tried',
        async () => {
          const { rowCount } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()', [drop]);
          if (!rowCount) throw new Error('not tried yet');
        },
        { timeoutMs: 120_000, intervalMs: 50 },
      );
      expect(settled).toBeUndefined();
      await session.end();
      await dropping;
      expect(settled).toBe('dropped');
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [db.name]);
      expect(rowCount).toBe(0);
    } finally {
      await session.end().catch(() => undefined);
      await cleanUp();
    }
  });

  it('throws the refusal of a login that may not drop the database, and leaves the database there', async () => {
    const { adminUrl, db, admin, role: outsider, password, cleanUp } = await withStrangerLogin('outsider');
    try {
      await db.pool.end();
      await expect(dropDatabase(asLogin(adminUrl, outsider, password), db.name)).rejects.toThrow(/must be owner of database/);
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [db.name]);
      expect(rowCount).toBe(1);
    } finally {
      await cleanUp();
    }
  });
});
