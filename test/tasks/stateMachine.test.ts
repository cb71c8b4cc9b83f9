import { describe, expect, it } from 'vitest';
import { taskClaimNext, taskClaim, claimRelease } from '../../src/db/sql/claims.js';
import { taskNoteAdd, taskHeartbeat, taskSubmit } from '../../src/db/sql/ownerWrites.js';
import { eventRead, taskRead } from '../../src/db/sql/reads.js';
import { verificationRecord, verificationStart } from '../../src/db/sql/verification.js';
import { AppendOnlyError, IllegalTransitionError, InvalidInputError, mapDatabaseErrors, StaleClaimError } from '../../src/errors.js';
import { TASK_TRANSITIONS } from '../../src/tasks/states.js';
import { graphSubmit, taskSetStatus } from '../../src/db/sql/graphs.js';
import { parseGraphSpec } from '../../src/tasks/graphSpec.js';
import { functionGraph, insertGraph, uniqueGraphId } from '../../src/testkit/graphs.js';
import { useTestDatabase } from '../helpers/db.js';
import { artifact, insertTask, LEASE_MS, makeSelectionOfTasks, snapshot } from '../helpers/tasks.js';

const db = useTestDatabase();

const kinds = async (taskId: string) => (await eventRead(db.pool, 'task', taskId)).map((e) => e.kind);

describe('the state machine, enforced by Postgres', () => {
  it('holds exactly the transitions defined in TypeScript', async () => {
    const { rows } = await db.pool.query('SELECT from_status, to_status FROM baton.task_transitions ORDER BY 1, 2');
    expect(rows.map((r) => `${r.from_status}->${r.to_status}`)).toEqual(TASK_TRANSITIONS.map(([f, t]) => `${f}->${t}`).sort());
  });

  it('refuses a skipped state with a specific error and changes nothing', async () => {
    const { claimable, leased, expired, finished } = await makeSelectionOfTasks(db.pool);
    const before = await snapshot(db.pool, [claimable.id, leased.id, expired.id, finished.id]);
    const error = await mapDatabaseErrors(() =>
      db.pool.query("UPDATE baton.tasks SET status = 'verified' WHERE id = $1", [claimable.id]),
    ).catch((e) => e);
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect(error.message).toMatch(/ready -> verified is not an allowed transition/);
    expect(await snapshot(db.pool, [claimable.id, leased.id, expired.id, finished.id])).toEqual(before);
  });

  it('refuses to lower a claim version or to change it outside a claim', async () => {
    const leased = await insertTask(db.pool, { status: 'running' });
    await expect(
      mapDatabaseErrors(() => db.pool.query('UPDATE baton.tasks SET claim_version = 0 WHERE id = $1', [leased.id])),
    ).rejects.toThrow(/may not go back/);
    await expect(
      mapDatabaseErrors(() => db.pool.query('UPDATE baton.tasks SET claim_version = 7 WHERE id = $1', [leased.id])),
    ).rejects.toThrow(IllegalTransitionError);
    expect((await taskRead(db.pool, leased.id)).claimVersion).toBe(1);
  });

  it('refuses to make a dependent ready before its dependencies are verified, whoever writes', async () => {
    const graphId = await insertGraph(db.pool, { up: [], down: ['up'] });
    const error = await mapDatabaseErrors(() =>
      db.pool.query("UPDATE baton.tasks SET status = 'ready' WHERE id = $1", [`${graphId}/down`]),
    ).catch((e) => e);
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect(error.message).toMatch(/before its dependencies are verified: up \(ready\)/);
    expect((await taskRead(db.pool, `${graphId}/down`)).status).toBe('blocked');
  });

  it('refuses to verify a task by a status change, with no passed verification of its artifact', async () => {
    const task = await insertTask(db.pool, { status: 'submitted' });
    await expect(taskSetStatus(db.pool, { taskId: task.id, actor: 'x', to: 'verifying', kind: 'k', reason: 'r' })).rejects.toThrow(
      /goes through a claim, its owner or a verifier/,
    );
    await db.pool.query("SELECT * FROM baton.verification_start($1, 'verifier')", [task.id]);
    const direct = await mapDatabaseErrors(() =>
      db.pool.query("UPDATE baton.tasks SET status = 'verified' WHERE id = $1", [task.id]),
    ).catch((e) => e);
    expect(direct).toBeInstanceOf(IllegalTransitionError);
    expect(direct.message).toMatch(/verified needs a passed verification of revision rev-1/);
    expect((await taskRead(db.pool, task.id)).status).toBe('verifying');
  });

  it('treats a repeated status change as done: no second event', async () => {
    const task = await insertTask(db.pool, { status: 'rejected' });
    for (let i = 0; i < 2; i++)
      await taskSetStatus(db.pool, { taskId: task.id, actor: 'policy', to: 'failed', kind: 'failed', reason: 'r' });
    expect((await kinds(task.id)).filter((k) => k === 'failed')).toHaveLength(1);
    await expect(
      taskSetStatus(db.pool, { taskId: task.id, actor: 'x', to: 'bogus' as never, kind: 'k', reason: 'r' }),
    ).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('keeps the event log append-only', async () => {
    const task = await insertTask(db.pool);
    await expect(
      mapDatabaseErrors(() => db.pool.query("UPDATE baton.events SET actor = 'x' WHERE subject_id = $1", [task.id])),
    ).rejects.toBeInstanceOf(AppendOnlyError);
    await expect(
      mapDatabaseErrors(() => db.pool.query('DELETE FROM baton.events WHERE subject_id = $1', [task.id])),
    ).rejects.toBeInstanceOf(AppendOnlyError);
    expect(await kinds(task.id)).toEqual(['created']);
  });
});

describe('claims (T3)', () => {
  it('claims only the ready task, bumps its claim version on the database clock, and leaves the others alone', async () => {
    const { claimable, leased, expired, finished } = await makeSelectionOfTasks(db.pool);
    const before = await snapshot(db.pool, [leased.id, expired.id, finished.id]);
    for (const t of [leased, expired, finished]) expect(await taskClaim(db.pool, t.id, 'me', LEASE_MS)).toBeUndefined();
    const claim = (await taskClaim(db.pool, claimable.id, 'me', LEASE_MS))!;
    expect(claim).toMatchObject({ taskId: claimable.id, claimVersion: 1, attempts: 1 });
    const { rows } = await db.pool.query(
      'SELECT lease_expires_at - claimed_at AS lease, claimed_at <= now() AS past FROM baton.tasks WHERE id = $1',
      [claimable.id],
    );
    expect(rows[0]).toMatchObject({ past: true });
    expect(rows[0].lease.seconds ?? rows[0].lease.minutes * 60).toBe(60);
    expect(await snapshot(db.pool, [leased.id, expired.id, finished.id])).toEqual(before);
    expect(await kinds(claimable.id)).toEqual(['created', 'claimed']);
  });

  it('returns nothing when no task is ready, and never invents an assignment', async () => {
    const graphId = await insertGraph(db.pool, { only: [] });
    expect(await taskClaimNext(db.pool, 'me', LEASE_MS, graphId)).toMatchObject({ taskId: `${graphId}/only` });
    expect(await taskClaimNext(db.pool, 'me', LEASE_MS, graphId)).toBeUndefined();
  });

  it('refuses a lease that is not a positive number of milliseconds, and claims nothing', async () => {
    const task = await insertTask(db.pool);
    await expect(taskClaim(db.pool, task.id, 'me', 0)).rejects.toBeInstanceOf(InvalidInputError);
    expect((await taskRead(db.pool, task.id)).status).toBe('ready');
  });

  it('takes a claim handed back only from its owner, and gives the attempt back with it', async () => {
    const task = await insertTask(db.pool, { status: 'running', owner: 'leaving' });
    const handBack = (actor: string) =>
      claimRelease(db.pool, { taskId: task.id, claimVersion: 1, actor, kind: 'handed_back', reason: 'shutting down' });
    await expect(handBack('someone-else')).rejects.toThrow(/someone-else may not hand back claim version 1 of task .*: leaving holds it/);
    expect(await taskRead(db.pool, task.id)).toMatchObject({ status: 'running', owner: 'leaving', attempts: 1 });
    expect(await handBack('leaving')).toBe(true);
    expect(await taskRead(db.pool, task.id)).toMatchObject({ status: 'ready', owner: null, claimVersion: 1, attempts: 0 });
    expect((await eventRead(db.pool, 'task', task.id)).at(-1)).toMatchObject({ kind: 'handed_back', actor: 'leaving', fence: 1 });
    // The next claim bumps the version as any claim does; the attempt it counts is its own.
    expect(await taskClaim(db.pool, task.id, 'next', LEASE_MS)).toMatchObject({ claimVersion: 2, attempts: 1 });
    expect(await handBack('leaving')).toBe(false);
  });
});

describe('fenced writes (T4)', () => {
  it("accepts the owner's heartbeat and refuses, logs and reports everyone else's", async () => {
    const task = await insertTask(db.pool, { status: 'running', owner: 'owner' });
    await taskHeartbeat(db.pool, { taskId: task.id, owner: 'owner', claimVersion: 1 }, LEASE_MS, { step: 2 });
    expect((await taskRead(db.pool, task.id)).progress).toEqual({ step: 2 });
    for (const fence of [
      { owner: 'intruder', claimVersion: 1 },
      { owner: 'owner', claimVersion: 2 },
    ]) {
      const error = await taskHeartbeat(db.pool, { taskId: task.id, ...fence }, LEASE_MS, { step: 99 }).catch((e) => e);
      expect(error).toBeInstanceOf(StaleClaimError);
      expect(error).toMatchObject({
        taskId: task.id,
        owner: fence.owner,
        claimVersion: fence.claimVersion,
        current: { owner: 'owner', claimVersion: 1 },
      });
    }
    expect((await taskRead(db.pool, task.id)).progress).toEqual({ step: 2 });
    expect((await kinds(task.id)).filter((k) => k === 'stale_write_refused')).toHaveLength(2);
  });

  it("after a reclaim refuses the old owner's submit and notes, and accepts the new owner's", async () => {
    const task = await insertTask(db.pool, { status: 'running', owner: 'old' });
    expect(
      await claimRelease(db.pool, { taskId: task.id, claimVersion: 1, actor: 'baton', kind: 'reclaimed_after_silence', reason: 'silent' }),
    ).toBe(true);
    // Releasing the same claim twice changes nothing the second time.
    expect(
      await claimRelease(db.pool, { taskId: task.id, claimVersion: 1, actor: 'baton', kind: 'reclaimed_after_silence', reason: 'again' }),
    ).toBe(false);
    const claim = (await taskClaim(db.pool, task.id, 'new', LEASE_MS))!;
    expect(claim.claimVersion).toBe(2);
    await expect(taskSubmit(db.pool, { taskId: task.id, owner: 'old', claimVersion: 1 }, artifact('old'))).rejects.toBeInstanceOf(
      StaleClaimError,
    );
    await expect(taskNoteAdd(db.pool, task.id, 'old', 'I am still on it', 1)).rejects.toBeInstanceOf(StaleClaimError);
    await taskNoteAdd(db.pool, task.id, 'reviewer', 'a free note is never ownership');
    await taskSubmit(db.pool, { taskId: task.id, owner: 'new', claimVersion: 2 }, artifact('new'));
    expect(await taskRead(db.pool, task.id)).toMatchObject({ status: 'submitted', owner: 'new', artifact: { revision: 'new' } });
    expect(await kinds(task.id)).toEqual([
      'created',
      'claimed',
      'reclaimed_after_silence',
      'claimed',
      'stale_write_refused',
      'stale_write_refused',
      'submitted',
    ]);
  });
});

describe('verification (T7) and release (T8)', () => {
  it("hands the run its graph's repository and base with the claim, and the verifier with the start", async () => {
    const source = { repo: 'https://git.example.invalid/team/app.git', base: 'trunk' };
    const graphId = uniqueGraphId('source');
    await graphSubmit(db.pool, parseGraphSpec({ ...functionGraph(graphId, { only: [] }), ...source }), 'test');
    const taskId = `${graphId}/only`;
    const claim = (await taskClaim(db.pool, taskId, 'agent', LEASE_MS))!;
    expect(claim.source).toEqual(source);
    await taskSubmit(db.pool, { taskId, owner: 'agent', claimVersion: claim.claimVersion }, artifact('r1'));
    expect((await verificationStart(db.pool, taskId, 'verifier')).source).toEqual(source);
    // A graph without a repository: its runs work in their agent's own directory.
    const local = await insertGraph(db.pool, { only: [] });
    expect((await taskClaim(db.pool, `${local}/only`, 'agent', LEASE_MS))!.source).toEqual({ base: 'HEAD' });
  });

  it('answers a start of a decided verification (a retry after its outcome was recorded) with the task as it is, changing nothing', async () => {
    for (const status of ['verified', 'rejected'] as const) {
      const task = await insertTask(db.pool, { status });
      const eventsBefore = await kinds(task.id);
      expect(await verificationStart(db.pool, task.id, 'verifier')).toMatchObject({
        status,
        claimVersion: task.claimVersion,
        artifact: { revision: 'rev-1' },
        graphId: task.graphId,
        key: 't',
        upstreamRevisions: {},
      });
      expect(await taskRead(db.pool, task.id)).toEqual(task);
      expect(await kinds(task.id)).toEqual(eventsBefore);
    }
  });

  it('refuses the agent as its own verifier', async () => {
    const task = await insertTask(db.pool, { status: 'submitted', owner: 'agent' });
    await expect(verificationStart(db.pool, task.id, 'agent')).rejects.toThrow(/agent produced the artifact and may not verify it/);
    expect((await taskRead(db.pool, task.id)).status).toBe('submitted');
  });

  it('refuses a verification of a different revision than the artifact', async () => {
    const task = await insertTask(db.pool, { status: 'verifying' });
    const wrong = verificationRecord(db.pool, {
      taskId: task.id,
      verifier: 'verifier',
      claimVersion: 1,
      revision: 'other',
      command: 'c',
      exitCode: 0,
      outputDigest: 'd',
      outputTail: '',
    });
    await expect(wrong).rejects.toBeInstanceOf(IllegalTransitionError);
    expect((await taskRead(db.pool, task.id)).status).toBe('verifying');
  });

  it('marks a dependent stale when its upstream is re-run and verified at a new revision', async () => {
    const graphId = await insertGraph(db.pool, { up: [], down: ['up'] });
    const run = async (key: string, revision: string) => {
      const taskId = `${graphId}/${key}`;
      const claim = (await taskClaim(db.pool, taskId, 'agent', LEASE_MS))!;
      await taskSubmit(db.pool, { taskId, owner: 'agent', claimVersion: claim.claimVersion }, artifact(revision));
      await verificationStart(db.pool, taskId, 'verifier');
      return verificationRecord(db.pool, {
        taskId,
        verifier: 'verifier',
        claimVersion: claim.claimVersion,
        revision,
        command: 'c',
        exitCode: 0,
        outputDigest: 'd',
        outputTail: '',
      });
    };
    expect((await run('up', 'up-1')).released).toEqual([`${graphId}/down`]);
    await run('down', 'down-1');
    expect((await taskRead(db.pool, `${graphId}/down`)).upstreamRevisions).toEqual({ up: 'up-1' });
    await taskSetStatus(db.pool, {
      taskId: `${graphId}/up`,
      actor: 'operator',
      to: 'ready',
      kind: 'rerun_requested',
      reason: 'new API version',
    });
    expect((await run('up', 'up-2')).staled).toEqual([`${graphId}/down`]);
    expect(await taskRead(db.pool, `${graphId}/down`)).toMatchObject({ status: 'stale', upstreamRevisions: { up: 'up-1' } });
    // A verifier that comes to it now (a retry of its verification) finds it stale and leaves it so.
    const eventsBefore = await kinds(`${graphId}/down`);
    expect(await verificationStart(db.pool, `${graphId}/down`, 'verifier')).toMatchObject({ status: 'stale', key: 'down' });
    expect(await kinds(`${graphId}/down`)).toEqual(eventsBefore);
    // Re-running it builds on the new upstream revision; its pins say so before any work starts.
    await taskSetStatus(db.pool, {
      taskId: `${graphId}/down`,
      actor: 'operator',
      to: 'ready',
      kind: 'rerun_after_stale',
      reason: 'up moved',
    });
    expect(await taskRead(db.pool, `${graphId}/down`)).toMatchObject({ status: 'ready', upstreamRevisions: { up: 'up-2' } });
    expect(await kinds(`${graphId}/down`)).toContain('marked_stale');
  });
});
