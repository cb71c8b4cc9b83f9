// S1-S4 from an agent's seat: the hostile agent (hostileAgent.sh) against the store. The worker-like
// process (hostileHarness.ts) holds a Postgres URL in its own environment, as a worker does; the
// agent hunts for any credential (its environment, every /proc/*/environ and cmdline, the baton
// home, the repository, baton's tree and .baton, the old literal passwords, trust and peer) and,
// with one that logs in, forges a verification of a submitted task, disables the event log's
// append-only trigger, sets the task verified and deletes the event log.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { insertTask } from '../helpers/tasks.js';
import type { HarnessConfig, HarnessReport } from './hostileHarness.js';
import { runHarness, useHostileScene, workerFolders } from './hostileScene.js';
import { requireIsolationHost } from './isolationHost.js';

const STORE_ATTACKS = [
  'store_login',
  'store_forge_verification',
  'store_act_as_other',
  'store_disable_trigger',
  'store_update_task',
  'store_delete_events',
] as const;
/** A shared object another agent created and holds: the hostile agent tries to act as that agent on it. */
const VICTIM_OBJECT = 'shared-plan';
const VICTIM_ACTOR = 'victim-agent';

const scene = useHostileScene('hostile-store');

/** Everything an attack could change: the task, its events, the whole log's size, the trigger. */
async function storeState(db: TestDatabase, taskId: string) {
  const task = await db.pool.query('SELECT * FROM baton.tasks WHERE id = $1', [taskId]);
  const events = await db.pool.query('SELECT * FROM baton.events WHERE subject_id = $1 ORDER BY id', [taskId]);
  const count = await db.pool.query<{ count: string }>('SELECT count(*) FROM baton.events');
  const verifications = await db.pool.query('SELECT * FROM baton.verifications WHERE task_id = $1 ORDER BY id', [taskId]);
  const trigger = await db.pool.query<{ tgenabled: string }>("SELECT tgenabled FROM pg_trigger WHERE tgname = 'events_append_only'");
  const object = await db.pool.query('SELECT * FROM baton.objects WHERE key = $1', [VICTIM_OBJECT]);
  const permissions = await db.pool.query('SELECT * FROM baton.object_permissions ORDER BY 1, 2');
  return {
    task: task.rows,
    events: events.rows,
    eventCount: Number(count.rows[0]!.count),
    verifications: verifications.rows,
    trigger: trigger.rows.map((r) => r.tgenabled),
    object: object.rows,
    permissions: permissions.rows,
  };
}

interface Scenario {
  report: HarnessReport;
  before: Awaited<ReturnType<typeof storeState>>;
  after: Awaited<ReturnType<typeof storeState>>;
  adminUser: string;
  harnessPid: number;
}

/**
 * A database of its own with a submitted task; the harness gets `credential` (a full Postgres URL)
 * as its own DATABASE_URL and nothing else that could log in, runs the victim and the hostile agent,
 * and the database is dropped afterwards.
 */
async function attackStore(isolation: HarnessConfig['isolation'], credential: (db: TestDatabase) => Promise<string>): Promise<Scenario> {
  const db = await createTestDatabase();
  try {
    const task = await insertTask(db.pool, { status: 'submitted', owner: 'agent-1' });
    await db.pool.query('SELECT baton.object_create($1, $2, 60000)', [VICTIM_OBJECT, VICTIM_ACTOR]);
    await db.pool.query('SELECT baton.object_take($1, $2)', [VICTIM_OBJECT, VICTIM_ACTOR]);
    const before = await storeState(db, task.id);
    expect(before.object[0]).toMatchObject({ holder: VICTIM_ACTOR });
    expect(before.task[0]).toMatchObject({ status: 'submitted' });
    expect(before.trigger).toEqual(['O']);
    const url = new URL(db.url);
    const folders = await workerFolders(scene.scratch, 'x');
    // An agent root of its own: a `user: worker` run makes the shared default root 0700
    // (src/runners/isolation/workspace.ts), which would lock out per-run agents of another test file.
    const agents = path.join(scene.scratch, `agents-${randomUUID().slice(0, 8)}`);
    const config: HarnessConfig = {
      isolation: isolation === 'off' ? 'off' : { ...isolation, root: agents },
      repo: scene.repo,
      ...folders,
      graphId: `store-${randomUUID().slice(0, 8)}`,
      store: {
        host: url.hostname,
        port: Number(url.port || 5432),
        database: url.pathname.slice(1),
        taskId: task.id,
        claimVersion: Number(before.task[0]!.claim_version),
        revision: (before.task[0]!.artifact as { revision: string }).revision,
        object: VICTIM_OBJECT,
        actor: VICTIM_ACTOR,
      },
    };
    // The worker's environment: the test's own, minus every Postgres credential, plus the one given.
    const env: NodeJS.ProcessEnv = { ...process.env, BATON_HOME: folders.home, DATABASE_URL: await credential(db) };
    for (const key of Object.keys(env)) if (/^PG[A-Z]*$/.test(key)) delete env[key];
    const { report, pid } = await runHarness(config, env);
    const after = await storeState(db, task.id);
    return { report, before, after, adminUser: decodeURIComponent(url.username), harnessPid: pid };
  } finally {
    await db.drop();
  }
}

const storeOutcomes = (report: HarnessReport) => Object.fromEntries(STORE_ATTACKS.map((name) => [name, report.attacks[name]?.outcome]));
const allBlocked = Object.fromEntries(STORE_ATTACKS.map((name) => [name, 'blocked']));
const workerLogin = async (db: TestDatabase) => (await db.login('baton_worker')).url;

function expectNothingReached(scenario: Scenario) {
  const { report, before, after } = scenario;
  expect(report.hostileError, report.hostileError).toBeUndefined();
  expect(storeOutcomes(report), JSON.stringify(report.attacks, null, 2)).toEqual(allBlocked);
  // It did try: the old literals and no-password logins alone are dozens of candidates.
  expect(Number(/^(\d+) candidates/.exec(report.attacks.store_login!.evidence)?.[1])).toBeGreaterThan(10);
  expect(after).toEqual(before);
}

describe('S1/S4: a hostile agent against the store, under the defaults of a root worker (per-run user, bubblewrap, outside network)', () => {
  requireIsolationHost({ root: true, bubblewrap: true, slirp4netns: true });
  it('finds no credential that logs in to Postgres, not even the worker login the worker holds; the store is unchanged', async () => {
    expectNothingReached(await attackStore({}, workerLogin));
  });
});

describe('S1/S4: a hostile agent against the store, under per-run users with no sandbox (it can reach Postgres)', () => {
  requireIsolationHost({ root: true });
  it('finds no credential that logs in; the store is unchanged', async () => {
    expectNothingReached(await attackStore({ sandbox: 'none' }, workerLogin));
  });
});

describe('S1/S4: a hostile agent against the store, in the bubblewrap sandbox', () => {
  requireIsolationHost({ root: true, bubblewrap: true });
  it('with --agent-network none: nothing logs in; the store is unchanged', async () => {
    expectNothingReached(await attackStore({ network: 'none' }, workerLogin));
  });

  it("as the worker's own user (a non-root worker with bubblewrap): nothing logs in; the store is unchanged", async () => {
    expectNothingReached(await attackStore({ user: 'worker', sandbox: 'bubblewrap' }, workerLogin));
  });
});

describe('the hostile agent against the store of a deliberately weakened set-up (isolation off, the admin login in the worker)', () => {
  it("finds the admin URL in the worker's /proc/<pid>/environ and forges a verification, which proves the tests above can fail", async () => {
    const { report, before, after, adminUser, harnessPid } = await attackStore('off', async (db) => db.url);
    expect(report.hostileError, report.hostileError).toBeUndefined();
    const attacks = report.attacks;
    // The first credential it tried that logged in came from the worker's own environment.
    expect(attacks.store_login, JSON.stringify(attacks, null, 2)).toEqual({
      outcome: 'succeeded',
      evidence: `${adminUser} from /proc/${harnessPid}/environ`,
    });
    expect(attacks.store_forge_verification).toMatchObject({ outcome: 'succeeded', evidence: expect.stringContaining('record: verified') });
    // Named as the object's holder, it gave itself write access: nothing but the name was asked for.
    expect(attacks.store_act_as_other).toEqual({ outcome: 'succeeded', evidence: 'ok=true ' });
    expect(after.permissions).toEqual(
      expect.arrayContaining([expect.objectContaining({ actor: 'hostile', access: 'write', granted_by: VICTIM_ACTOR })]),
    );
    // The owner's member: it may also switch off the trigger and then rewrite and empty the log.
    expect(storeOutcomes(report), JSON.stringify(attacks, null, 2)).toEqual(
      Object.fromEntries(STORE_ATTACKS.map((name) => [name, 'succeeded'])),
    );
    expect(attacks.store_disable_trigger!.evidence).toBe('tgenabled=D ');
    expect(attacks.store_update_task!.evidence).toBe(`updated ${before.task[0]!.id} `);
    expect(attacks.store_delete_events!.evidence).toMatch(/^deleted [1-9]\d* $/);
    expect(after.task[0]).toMatchObject({ status: 'verified', verifier: 'forger', verified_revision: before.task[0]!.artifact.revision });
    expect(after.trigger).toEqual(['D']);
    expect(after.eventCount).toBe(0);
    expect(after).not.toEqual(before);
  });
});
