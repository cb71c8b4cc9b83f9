// baton.graph_list: graphs newest first with their tasks' statuses counted and a state derived from
// them (GRAPH_STATES), narrowed by state and age; a read the client and reader roles may call.
import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/queryable.js';
import { graphList } from '../../src/db/sql/reads.js';
import { InsufficientPrivilegeError, InvalidInputError } from '../../src/errors.js';
import { GRAPH_STATES, TASK_STATUSES, type GraphState, type TaskStatus } from '../../src/tasks/states.js';
import { taskIdOf } from '../../src/tasks/taskId.js';
import { insertGraph, uniqueGraphId } from '../../src/testkit/graphs.js';
import { useTestDatabase } from '../helpers/db.js';
import { awaitApproval, verifyTask } from '../helpers/tasks.js';
import { graphSubmit, taskSetStatus } from '../../src/db/sql/graphs.js';
import { parseGraphSpec } from '../../src/tasks/graphSpec.js';

const db = useTestDatabase();

const setStatus = (taskId: string, to: TaskStatus, kind: string) =>
  taskSetStatus(db.pool, { taskId, actor: 'operator', to, kind, reason: 'test' });

/** Every status at 0, but for `counts`. */
const countsOf = (counts: Partial<Record<TaskStatus, number>>) => ({
  ...Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])),
  ...counts,
});

/** The listed graphs among `ids`, in the order listed. */
async function listed(ids: string[], filter: Parameters<typeof graphList>[1] = {}, as: Queryable = db.pool) {
  return (await graphList(as, { limit: 1_000, ...filter })).filter((g) => ids.includes(g.id));
}

describe('baton.graph_list', () => {
  it('counts every status of each graph and derives its state, the first of GRAPH_STATES that holds', async () => {
    const verified = await insertGraph(db.pool, { a: [], b: ['a'] });
    await verifyTask(db.pool, taskIdOf(verified, 'a'), 'rev-1');
    await verifyTask(db.pool, taskIdOf(verified, 'b'), 'rev-1');

    const running = await insertGraph(db.pool, { a: [], b: ['a'] });
    // A failed task elsewhere in the graph: work still goes on, so it is running, not failed.
    const runningDespiteFailure = await insertGraph(db.pool, { a: [], b: [] });
    await setStatus(taskIdOf(runningDespiteFailure, 'a'), 'failed', 'failed');

    // The failure leaves its dependent blocked; a cancellation of the rest does not hide it.
    const failed = await insertGraph(db.pool, { a: [], b: ['a'], c: [] });
    await setStatus(taskIdOf(failed, 'a'), 'failed', 'failed');
    await setStatus(taskIdOf(failed, 'c'), 'cancelled', 'cancelled');

    const cancelled = await insertGraph(db.pool, { a: [], b: ['a'] });
    await setStatus(taskIdOf(cancelled, 'a'), 'cancelled', 'cancelled');

    // Under policy `mark`, a dependent verified on a superseded revision waits for a rerun.
    const stale = await insertGraph(db.pool, { up: [], down: ['up'] }, { policy: { onUpstreamChange: 'mark' } });
    await verifyTask(db.pool, taskIdOf(stale, 'up'), 'rev-1');
    await verifyTask(db.pool, taskIdOf(stale, 'down'), 'rev-1');
    await setStatus(taskIdOf(stale, 'up'), 'ready', 'rerun_requested');
    await verifyTask(db.pool, taskIdOf(stale, 'up'), 'rev-2');

    // U11: nothing runs, and a task waits for a person's approval; its dependent waits behind it.
    const awaiting = uniqueGraphId('g');
    await graphSubmit(
      db.pool,
      parseGraphSpec({
        id: awaiting,
        tasks: [
          { key: 'a', run: { function: 'f' }, verify: { function: 'v', approval: true } },
          { key: 'b', run: { function: 'f' }, verify: { function: 'v' }, dependsOn: ['a'] },
        ],
      }),
      'testkit',
    );
    expect(await awaitApproval(db.pool, taskIdOf(awaiting, 'a'), 'rev-1')).toMatchObject({ status: 'awaiting_approval', released: [] });

    // Test-only: no store move leaves only blocked tasks behind for long; the owner puts one there.
    const blocked = await insertGraph(db.pool, { a: [] });
    await db.pool.query("UPDATE baton.tasks SET status = 'blocked' WHERE id = $1", [taskIdOf(blocked, 'a')]);

    const expected: Array<[string, GraphState, Partial<Record<TaskStatus, number>>]> = [
      [verified, 'verified', { verified: 2 }],
      [running, 'running', { ready: 1, blocked: 1 }],
      [runningDespiteFailure, 'running', { ready: 1, failed: 1 }],
      [failed, 'failed', { failed: 1, blocked: 1, cancelled: 1 }],
      [cancelled, 'cancelled', { cancelled: 1, blocked: 1 }],
      [stale, 'stale', { verified: 1, stale: 1 }],
      [awaiting, 'awaiting_approval', { awaiting_approval: 1, blocked: 1 }],
      [blocked, 'blocked', { blocked: 1 }],
    ];
    const ids = expected.map(([id]) => id);
    const byId = new Map((await listed(ids)).map((g) => [g.id, g]));
    for (const [id, state, counts] of expected) {
      const tasks = Object.values(counts).reduce((sum, n) => sum + n, 0);
      expect(byId.get(id), id).toMatchObject({ state, tasks, counts: countsOf(counts), submittedBy: 'testkit' });
    }
    // Each state the TypeScript list names is one the function derives and filters on.
    for (const state of GRAPH_STATES) {
      const inState = expected.filter(([, s]) => s === state).map(([id]) => id);
      expect((await listed(ids, { state })).map((g) => g.id).sort(), state).toEqual(inState.sort());
    }
  });

  it('lists newest first, at most the limit, and only graphs submitted within the given time', async () => {
    const [oldest, middle, newest, done] = [
      await insertGraph(db.pool, { t: [] }),
      await insertGraph(db.pool, { t: [] }),
      await insertGraph(db.pool, { t: [] }),
      await insertGraph(db.pool, { t: [] }),
    ];
    await setStatus(taskIdOf(done, 't'), 'cancelled', 'cancelled');
    // Test-only: date the graphs on the database clock, the newest in the future so no other graph comes before them.
    const date = (id: string, offset: string) =>
      db.pool.query('UPDATE baton.graphs SET submitted_at = now() + $2::interval WHERE id = $1', [id, offset]);
    await date(oldest, '-3 hours');
    await date(middle, '1 day');
    await date(newest, '2 days');
    await date(done, '3 days');

    const top = await graphList(db.pool, { limit: 2 });
    expect(top.map((g) => g.id)).toEqual([done, newest]);
    expect(Date.parse(top[0]!.submittedAt)).toBeGreaterThan(Date.parse(top[1]!.submittedAt));
    // The limit counts graphs in the state asked for, not graphs looked at.
    expect((await graphList(db.pool, { state: 'running', limit: 2 })).map((g) => g.id)).toEqual([newest, middle]);

    const ids = [oldest, middle, newest, done];
    expect((await listed(ids, { submittedWithinMs: 2 * 3_600_000 })).map((g) => g.id)).toEqual([done, newest, middle]);
    expect((await listed(ids, { submittedWithinMs: 4 * 3_600_000 })).map((g) => g.id)).toEqual([done, newest, middle, oldest]);
  });

  it('refuses an unknown state or a limit below 1, naming it', async () => {
    await expect(graphList(db.pool, { state: 'done' as GraphState })).rejects.toThrow(InvalidInputError);
    await expect(graphList(db.pool, { state: 'done' as GraphState })).rejects.toThrow(/graph state done: the states are verified, running/);
    await expect(graphList(db.pool, { limit: 0 })).rejects.toThrow(/limit 0: how many graphs to list, at least 1/);
  });

  it('may be called by the client and reader roles, not by a worker', async () => {
    const id = await insertGraph(db.pool, { t: [] });
    for (const group of ['baton_reader', 'baton_client'] as const) {
      expect(await listed([id], {}, (await db.login(group)).pool), group).toMatchObject([{ id, state: 'running' }]);
    }
    await expect(graphList((await db.login('baton_worker')).pool)).rejects.toThrow(InsufficientPrivilegeError);
  });
});
