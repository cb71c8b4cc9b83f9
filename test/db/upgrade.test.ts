import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checksum, DatabaseNotMigratedError, loadMigrations, migrate, requireMigrated, type MigrateResult } from '../../src/db/migrate.js';
import { dumpSchema, SCHEMA_SNAPSHOT_PATH } from '../../src/db/schemaSnapshot.js';
import { taskClaimNext, toClaim, type ClaimRecord } from '../../src/db/sql/claims.js';
import { taskHeartbeat, taskSubmit } from '../../src/db/sql/ownerWrites.js';
import { taskRead } from '../../src/db/sql/reads.js';
import { toolCallBegin } from '../../src/db/sql/toolCalls.js';
import { verificationRecord, verificationStart } from '../../src/db/sql/verification.js';
import { callStore, callStoreValue } from '../../src/db/storeCall.js';
import { StaleClaimError } from '../../src/errors.js';
import { createObject, readObject, takeObject } from '../../src/objects/objectStore.js';
import { parseGraphSpec } from '../../src/tasks/graphSpec.js';
import { functionGraph, uniqueGraphId } from '../../src/testkit/graphs.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { artifact, LEASE_MS } from '../helpers/tasks.js';

// The numbered migrations as version 0.1 shipped them, functions and all, exactly as databases
// recorded them (the state machine's rows already written in).
const VERSION_0_1_MIGRATIONS = 'test/fixtures/migrations-0.1';

/** Migrates the way baton 0.1 did: each file once, its checksum recorded; no definitions. */
async function migrateAsVersion01(db: TestDatabase): Promise<void> {
  await db.pool.query('CREATE SCHEMA baton');
  await db.pool.query(`CREATE TABLE baton.migrations (
    id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), checksum text)`);
  for (const m of await loadMigrations(VERSION_0_1_MIGRATIONS)) {
    await db.pool.query(m.sql);
    await db.pool.query('INSERT INTO baton.migrations (id, name, checksum) VALUES ($1, $2, $3)', [m.id, m.name, checksum(m.sql)]);
  }
}

const rowsOf = async (db: TestDatabase, table: string, order: string) =>
  (await db.pool.query(`SELECT * FROM baton.${table} ORDER BY ${order}`)).rows;

let db: TestDatabase;
let graphId: string;
let fence: { taskId: string; owner: string; claimVersion: number };
let before: Record<string, unknown[]>;
let upgrade: MigrateResult;
let refusedBeforeUpgrade: unknown;

beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  await migrateAsVersion01(db);
  // In flight when the upgrade lands: a running claim with a tool call under way, a blocked
  // dependent, and a shared object with a holder.
  // Written and claimed through 0.1's functions, by the names they had then (graph_submit and
  // task_claim today).
  const graph = parseGraphSpec(functionGraph(uniqueGraphId('g'), { build: [], test: ['build'] }));
  graphId = graph.id;
  const tasks = graph.tasks.map((t) => ({ key: t.key, spec: t.spec, dependsOn: t.dependsOn }));
  await callStoreValue(db.pool, 'submit_graph', [graph.id, 'testkit', graph, JSON.stringify(tasks)]);
  const claim = toClaim((await callStore<ClaimRecord>(db.pool, 'claim_task', [`${graphId}/build`, 'worker-a', LEASE_MS]))[0]!);
  fence = { taskId: claim.taskId, owner: 'worker-a', claimVersion: claim.claimVersion };
  await toolCallBegin(db.pool, fence, { step: 'open-pr', tool: 'code-host', paramsHash: `sha256:${'a'.repeat(64)}` });
  await createObject(db.pool, 'planner', { key: `plan-${graphId}`, content: 'v1', defaultAccess: 'write' });
  await takeObject(db.pool, 'writer', { key: `plan-${graphId}` });
  before = {
    tasks: await rowsOf(db, 'tasks', 'id'),
    events: await rowsOf(db, 'events', 'id'),
    objects: await rowsOf(db, 'objects', 'key'),
    tool_calls: await rowsOf(db, 'tool_calls', 'task_id, step'),
  };
  refusedBeforeUpgrade = await requireMigrated(db.pool).catch((error: unknown) => error);
  upgrade = await migrate(db.pool);
});

afterAll(async () => {
  await db?.drop();
});

describe('upgrading a database migrated by baton 0.1', () => {
  it('accepts the old migrations as they were recorded and re-creates every definition', () => {
    expect(upgrade.applied.map((m) => m.id)).toEqual([7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27]); // the migrations added since 0.1
    expect(upgrade.upgraded).toEqual([2, 3, 4, 5, 6]);
    expect(upgrade.definitionsApplied).toBe(true);
  });

  it('the fixture is what 0.1 recorded: its checksums are the ones the migrator accepts', async () => {
    const { rows } = await db.pool.query('SELECT id, checksum FROM baton.migrations ORDER BY id');
    const current = await loadMigrations();
    expect(rows).toEqual(current.map((m) => ({ id: m.id, checksum: checksum(m.sql) })));
  });

  it('loses no data: tasks, events, objects and tool calls are as they were', async () => {
    // Migration 0019 gives every task its concurrency limits: none; 0025 counts every claim as a run's.
    expect(await rowsOf(db, 'tasks', 'id')).toEqual(before.tasks!.map((t) => ({ ...(t as object), limits: null, store_claim: false })));
    expect(await rowsOf(db, 'events', 'id')).toEqual(before.events);
    // Migration 0018 gives every object its reserved paths: none.
    expect(await rowsOf(db, 'objects', 'key')).toEqual(before.objects!.map((o) => ({ ...(o as object), paths: [] })));
    expect(await rowsOf(db, 'tool_calls', 'task_id, step')).toEqual(before.tool_calls);
  });

  it('ends with exactly the schema of a fresh database', async () => {
    expect(await dumpSchema(db.pool)).toEqual(await readFile(SCHEMA_SNAPSHOT_PATH, 'utf8'));
  });

  it('finishes the in-flight lifecycle under the same claim, and still refuses a stale owner', async () => {
    await taskHeartbeat(db.pool, fence, LEASE_MS, { step: 'after upgrade' });
    await expect(taskSubmit(db.pool, { ...fence, owner: 'worker-b' }, artifact('rev-x'))).rejects.toBeInstanceOf(StaleClaimError);
    await taskSubmit(db.pool, fence, artifact('rev-1'));
    const { claimVersion } = await verificationStart(db.pool, fence.taskId, 'verifier');
    const outcome = await verificationRecord(db.pool, {
      taskId: fence.taskId,
      verifier: 'verifier',
      claimVersion,
      revision: 'rev-1',
      command: 'check',
      exitCode: 0,
      outputDigest: 'sha256:x',
      outputTail: '',
    });
    expect(outcome).toMatchObject({ status: 'verified', released: [`${graphId}/test`] });
    const next = await taskClaimNext(db.pool, 'worker-b', LEASE_MS, graphId);
    expect(next).toMatchObject({ taskId: `${graphId}/test`, claimVersion: 1, upstreamRevisions: { build: 'rev-1' } });
    expect((await taskRead(db.pool, fence.taskId)).status).toBe('verified');
    expect((await readObject(db.pool, 'writer', { key: `plan-${graphId}` })).content).toBe('v1');
  });

  it('is refused by commands that do not migrate until it is upgraded, and by them again when a function file changes', async () => {
    expect(refusedBeforeUpgrade).toBeInstanceOf(DatabaseNotMigratedError);
    await expect(requireMigrated(db.pool)).resolves.toBeUndefined();
    await db.pool.query("UPDATE baton.definitions SET checksum = 'edited' WHERE file = 'claims.sql'");
    await expect(requireMigrated(db.pool)).rejects.toThrow(/missing functions\/claims.sql\): run `baton migrate`/);
    expect((await migrate(db.pool)).definitionsApplied).toBe(true);
  });

  it('changes nothing on a second run', async () => {
    expect(await migrate(db.pool)).toMatchObject({ applied: [], upgraded: [], definitionsApplied: false });
  });
});
