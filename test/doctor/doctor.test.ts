import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.js';
import { checkDatabase } from '../../src/doctor/databaseChecks.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { useTestDatabase } from '../helpers/db.js';

const db = useTestDatabase();

/** A pool logged in as a new member of `group`, and how to drop it. */
async function loginAs(group: string) {
  const name = `doctor_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(18).toString('base64url');
  await db.pool.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}' IN ROLE ${group}`);
  const url = new URL(db.url);
  [url.username, url.password] = [name, password];
  const pool = createPool(url.toString(), { max: 1, applicationName: 'baton worker' });
  return { pool, url: url.toString(), close: async () => (await pool.end(), await db.pool.query(`DROP ROLE ${name}`)) };
}

/** The findings, less what the test's own admin session (a member of baton_owner) causes. */
const notAboutAdmin = (findings: { check: string; message: string }[]) =>
  findings.filter((f) => f.check !== 'authentication_unknown' && !f.message.includes(` as ${new URL(db.url).username},`));
const checks = (findings: { check: string; message: string }[]) => notAboutAdmin(findings).map((f) => f.check);

describe('baton doctor: the database', () => {
  it('finds nothing wrong with a migrated schema seen from a worker login', async () => {
    const worker = await loginAs('baton_worker');
    try {
      expect(checks(await checkDatabase(worker.pool))).toEqual([]);
    } finally {
      await worker.close();
    }
  });

  it('names each weakening: a table grant, a function anyone may call, an unpinned granted function, an owner login', async () => {
    await db.pool.query('GRANT SELECT ON baton.tasks TO baton_reader');
    await db.pool.query('GRANT EXECUTE ON FUNCTION baton.event_append TO PUBLIC');
    await db.pool.query('ALTER FUNCTION baton.task_claim(text, text, integer, integer) RESET search_path');
    const worker = await loginAs('baton_worker');
    const owner = await loginAs('baton_owner');
    try {
      const findings = await checkDatabase(worker.pool);
      expect(findings.map((f) => f.message)).toEqual(
        expect.arrayContaining([
          "baton_reader holds SELECT on baton.tasks: writes and reads must go through baton's functions",
          'anyone may call baton.event_append(text,text,text,text,bigint,bigint,text,jsonb)',
          'baton.task_claim(text,text,integer,integer) may be called by others but has no pinned search_path',
        ]),
      );
      const asOwner = await checkDatabase(owner.pool);
      expect(notAboutAdmin(asOwner).find((f) => f.check === 'privileged_login')?.message).toMatch(
        /this command connects as doctor_\w+, a member of baton_owner/,
      );
      // A worker login looking around sees the owner's open session too.
      const held = await owner.pool.connect();
      try {
        expect(notAboutAdmin(await checkDatabase(worker.pool)).find((f) => f.check === 'privileged_login')?.message).toMatch(
          /a session( 'baton worker')? is connected as doctor_\w+, a member of baton_owner/,
        );
      } finally {
        held.release();
      }
    } finally {
      await worker.close();
      await owner.close();
      await db.pool.query('REVOKE SELECT ON baton.tasks FROM baton_reader');
      await db.pool.query('REVOKE EXECUTE ON FUNCTION baton.event_append FROM PUBLIC');
      await db.pool.query('ALTER FUNCTION baton.task_claim(text, text, integer, integer) SET search_path = pg_catalog, baton, pg_temp');
    }
  });
});

describe('baton doctor: the command', () => {
  const doctor = async (login: { url: string }, env: Record<string, string>) => {
    const result = await runCli(['doctor', '--json'], cleanEnv({ DATABASE_URL: login.url, TEMPORAL_ADDRESS: '127.0.0.1:7233', ...env }));
    // No fallback for empty output: a doctor that crashed must not pass for one that found nothing.
    return {
      code: result.code,
      output: result.output,
      findings: notAboutAdmin(JSON.parse(result.stdout) as { check: string; message: string }[]),
    };
  };

  it('exits 0 with no findings for a worker login whose agents are isolated with no network', async () => {
    const worker = await db.login('baton_worker');
    const result = await doctor(worker, { BATON_AGENT_NETWORK: 'none' });
    expect(result.findings).toEqual([]);
  });

  it('finds nothing about Temporal on 127.0.0.1 under the default (outside) agent network, but names one agents can reach', async () => {
    const worker = await db.login('baton_worker');
    const local = await doctor(worker, {});
    expect(local.findings).toEqual([]);
    const remote = await doctor(worker, { TEMPORAL_ADDRESS: '192.0.2.10:7233' });
    expect(remote.code).toBe(1);
    expect(remote.findings).toEqual([
      expect.objectContaining({
        check: 'temporal_open',
        message: expect.stringContaining('command agents on the outside network can reach 192.0.2.10'),
      }),
    ]);
  });

  it('exits 1 and names each finding: an owner login, agents on the host network with Temporal open to them', async () => {
    const owner = await loginAs('baton_owner');
    try {
      const result = await doctor(owner, { BATON_AGENT_NETWORK: 'host' });
      expect(result.code).toBe(1);
      expect(result.findings.map((f) => f.check)).toEqual(expect.arrayContaining(['privileged_login', 'temporal_open']));
    } finally {
      await owner.close();
    }
  });
});
