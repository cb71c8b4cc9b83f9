import { randomBytes } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { GROUP_ROLES, RolesMissingError, type GroupRole } from '../../src/db/roles.js';
import { taskClaimNext } from '../../src/db/sql/claims.js';
import { taskSetStatus } from '../../src/db/sql/graphs.js';
import { taskSubmit } from '../../src/db/sql/ownerWrites.js';
import { eventRead, taskRead } from '../../src/db/sql/reads.js';
import { verificationRecord, verificationStart } from '../../src/db/sql/verification.js';
import { InsufficientPrivilegeError, mapDatabaseErrors } from '../../src/errors.js';
import { createObject } from '../../src/objects/objectStore.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, useTestDatabase } from '../helpers/db.js';
import { artifact, insertTask, LEASE_MS } from '../helpers/tasks.js';

const db = useTestDatabase();

/** A login of its own in `group`, as a component would have (made once, dropped with the database). */
const as = async (group: GroupRole) => (await db.login(group)).pool;

/** The rows a refused call must leave alone: the task and its record. */
const state = async (taskId: string) => ({
  task: (await db.pool.query('SELECT * FROM baton.tasks WHERE id = $1', [taskId])).rows,
  events: (await db.pool.query("SELECT * FROM baton.events WHERE subject_kind = 'task' AND subject_id = $1 ORDER BY id", [taskId])).rows,
});

async function refused(call: () => Promise<unknown>): Promise<void> {
  await expect(mapDatabaseErrors(call)).rejects.toBeInstanceOf(InsufficientPrivilegeError);
}

describe('least-privilege roles (S1)', () => {
  it('tells a migrator that may not set up roles exactly what an administrator must run, and works once that is done', async () => {
    const scratch = await createTestDatabase({ migrate: false });
    const name = `migrator_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(18).toString('base64url');
    await db.pool.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'`);
    const url = new URL(scratch.url);
    [url.username, url.password] = [name, password];
    const migrator = createPool(url.toString(), { max: 1 });
    try {
      const error = (await migrate(migrator).catch((e: unknown) => e)) as RolesMissingError;
      expect(error).toBeInstanceOf(RolesMissingError);
      expect(error.missing).toEqual([`${name} is not a member of baton_owner`, `baton_owner may not create in database ${scratch.name}`]);
      expect((await scratch.pool.query("SELECT 1 FROM pg_namespace WHERE nspname = 'baton'")).rowCount).toBe(0);
      // The administrator (here the test's own login) runs what the error printed.
      for (const statement of error.statements) await scratch.pool.query(statement);
      expect((await migrate(migrator)).definitionsApplied).toBe(true);
      const { rows } = await scratch.pool.query("SELECT pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = 'baton'");
      expect(rows).toEqual([{ owner: 'baton_owner' }]);
    } finally {
      await migrator.end();
      await scratch.drop();
      await db.pool.query(`DROP ROLE IF EXISTS ${name}`);
    }
  });

  it('lets a worker claim, run and verify, and nothing it does not need', async () => {
    const graphId = await insertGraph(db.pool, { t: [] });
    const worker = await as('baton_worker');
    const claim = (await taskClaimNext(worker, 'worker-a', LEASE_MS, graphId))!;
    const fence = { taskId: claim.taskId, owner: 'worker-a', claimVersion: claim.claimVersion };
    await taskSubmit(worker, fence, artifact('rev-1'));
    const started = await verificationStart(worker, claim.taskId, 'worker-a/verifier');
    await verificationRecord(worker, {
      taskId: claim.taskId,
      verifier: 'worker-a/verifier',
      claimVersion: started.claimVersion,
      revision: 'rev-1',
      command: 'check',
      exitCode: 0,
      outputDigest: 'sha256:x',
      outputTail: '',
    });
    expect((await taskRead(worker, claim.taskId)).status).toBe('verified');

    const before = await state(claim.taskId);
    await refused(() => insertGraph(worker, { x: [] }));
    await refused(() => worker.query("UPDATE baton.tasks SET status = 'ready' WHERE id = $1", [claim.taskId]));
    await refused(() => worker.query('SELECT * FROM baton.tasks'));
    await refused(() => worker.query('DELETE FROM baton.events'));
    await refused(() => worker.query('ALTER TABLE baton.events DISABLE TRIGGER events_append_only'));
    await refused(() => worker.query('DROP FUNCTION baton.task_check_change() CASCADE'));
    await refused(() => worker.query("SELECT baton.event_append('task', $1, 'verified', 'forger')", [claim.taskId]));
    await refused(() => worker.query('CREATE TABLE baton.mine (id int)'));
    expect(await state(claim.taskId)).toEqual(before);
  });

  it('lets a client submit, rerun and read, but never claim, run or verify', async () => {
    const client = await as('baton_client');
    const graphId = await insertGraph(client, { t: [] });
    const taskId = `${graphId}/t`;
    expect((await taskRead(client, taskId)).status).toBe('ready');
    const before = await state(taskId);
    await refused(() => taskClaimNext(client, 'client-as-owner', LEASE_MS, graphId));
    await refused(() => verificationStart(client, taskId, 'forged-verifier'));
    await refused(() =>
      verificationRecord(client, {
        taskId,
        verifier: 'forged-verifier',
        claimVersion: 0,
        revision: 'x',
        command: 'c',
        exitCode: 0,
        outputDigest: 'd',
        outputTail: '',
      }),
    );
    await refused(() => client.query("UPDATE baton.tasks SET status = 'verified' WHERE id = $1", [taskId]));
    // A status change may not dress itself up as a verification in the record.
    await expect(taskSetStatus(client, { taskId, actor: 'operator', to: 'cancelled', kind: 'verified', reason: 'forged' })).rejects.toThrow(
      /unknown status change kind verified/,
    );
    expect(await state(taskId)).toEqual(before);
    await taskSetStatus(client, { taskId, actor: 'operator', to: 'cancelled', kind: 'cancelled', reason: 'not needed' });
    expect((await taskRead(client, taskId)).status).toBe('cancelled');
  });

  it('lets a reader read and nothing else', async () => {
    const reader = await as('baton_reader');
    const task = await insertTask(db.pool, { status: 'running', owner: 'someone' });
    expect((await taskRead(reader, task.id)).owner).toBe('someone');
    expect((await eventRead(reader, 'task', task.id)).map((e) => e.kind)).toEqual(['created', 'claimed']);
    const before = await state(task.id);
    await refused(() => insertGraph(reader, { x: [] }));
    await refused(() => taskSetStatus(reader, { taskId: task.id, actor: 'reader', to: 'cancelled', kind: 'cancelled', reason: 'x' }));
    await refused(() => taskClaimNext(reader, 'reader', LEASE_MS));
    await refused(() => createObject(reader, 'reader', { key: 'plans/reader.md' }));
    await refused(() => reader.query('SELECT * FROM baton.events'));
    expect(await state(task.id)).toEqual(before);
  });

  it('gives the agent service nothing yet, and no group any table privilege', async () => {
    const agent = await as('baton_agent');
    const task = await insertTask(db.pool, { status: 'submitted', owner: 'agent-1' });
    await refused(() => taskRead(agent, task.id));
    await refused(() => verificationStart(agent, task.id, 'agent-2'));
    await refused(() => createObject(agent, 'agent-1', { key: 'plans/agent.md' }));
    const { rows } = await db.pool.query(
      `SELECT c.relname, r.rolname FROM pg_class c CROSS JOIN pg_roles r
        WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind IN ('r', 'v', 'S') AND r.rolname = ANY($1)
          AND (has_table_privilege(r.oid, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
               OR (c.relkind = 'S' AND has_sequence_privilege(r.oid, c.oid, 'USAGE, SELECT, UPDATE')))`,
      [Object.keys(GROUP_ROLES)],
    );
    expect(rows).toEqual([]);
  });

  it('baton login makes a component login in one group, with the password from the environment only', async () => {
    const name = `reader_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(18).toString('base64url');
    const withoutPassword = await runCli(['login', name, '--role', 'reader'], cleanEnv({ DATABASE_URL: db.url }));
    expect(withoutPassword.code).toBe(1);
    expect(withoutPassword.output).toMatch(/BATON_LOGIN_PASSWORD is not set/);
    for (const [taken, why] of [
      ['baton_owner', /one of baton's own roles/],
      [new URL(db.url).username, /is not a baton_reader login \(it is this login\)/],
    ] as const) {
      const refused = await runCli(
        ['login', taken, '--role', 'reader'],
        cleanEnv({ DATABASE_URL: db.url, BATON_LOGIN_PASSWORD: password }),
      );
      expect(refused.code).toBe(2);
      expect(refused.output).toMatch(why);
    }
    const made = await runCli(['login', name, '--role', 'reader'], cleanEnv({ DATABASE_URL: db.url, BATON_LOGIN_PASSWORD: password }));
    expect(made.code, made.output).toBe(0);
    expect(made.output).not.toContain(password);
    const url = new URL(db.url);
    [url.username, url.password] = [name, password];
    const reader = createPool(url.toString(), { max: 1 });
    try {
      const task = await insertTask(db.pool, { status: 'ready' });
      expect((await taskRead(reader, task.id)).status).toBe('ready');
      await refused(() => taskClaimNext(reader, name, LEASE_MS));
      const { rows } = await db.pool.query('SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = $1', [name]);
      expect(rows).toEqual([{ rolsuper: false, rolcreaterole: false, rolcreatedb: false }]);
    } finally {
      await reader.end();
      await db.pool.query(`DROP ROLE IF EXISTS ${name}`);
    }
  });

  it('worker, serve and check refuse at start a login outside their group; migrate on one says the schema is current', async () => {
    const client = await db.login('baton_client');
    const env = cleanEnv({ DATABASE_URL: client.url, TEMPORAL_ADDRESS: inject('temporalAddress') });
    for (const [args, group] of [
      [['worker', '--task-queue', 'never-polled'], 'baton_worker'],
      [['check'], 'baton_worker'],
      [['serve', '--port', '0'], 'baton_agent'],
    ] as const) {
      const result = await runCli([...args], env);
      expect(result.code, `baton ${args[0]}: ${result.output}`).toBe(2);
      expect(result.output).toContain(`${client.name} is not a member of ${group}`);
      expect(result.output).toContain(`baton login <name> --role ${group.replace('baton_', '')}`);
      expect(result.output).not.toMatch(/polling|listening|\n\s+at /);
    }
    const migrated = await runCli(['migrate'], env);
    expect(migrated.code, migrated.output).toBe(0);
    expect(migrated.output).toContain('This login may not migrate (it is not the schema owner); the schema is current.');
    expect(migrated.output).not.toMatch(/TypeError/);
  });
});
