// U11: concurrency limits. A graph's policy.maxRunning bounds how many of its tasks run at once; a
// task's concurrency key bounds how many tasks naming it run at once, across graphs. Enforced by the
// claim in Postgres, so racing claims cannot both take the last place; on a real worker and
// Temporal, the waiting tasks run as places free, and every task is verified.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { taskClaim } from '../../src/db/sql/claims.js';
import { poolLimitSet } from '../../src/db/sql/poolRuns.js';
import { InvalidInputError } from '../../src/errors.js';
import { graphSubmit } from '../../src/db/sql/graphs.js';
import { parseGraphSpec } from '../../src/tasks/graphSpec.js';
import { taskIdOf } from '../../src/tasks/taskId.js';
import { uniqueGraphId } from '../../src/testkit/graphs.js';
import { artifact, LEASE_MS } from '../helpers/tasks.js';
import { taskSubmit } from '../../src/db/sql/ownerWrites.js';
import { useTaskStack } from '../helpers/taskStack.js';

/** Per group (a task's payload): how many of its agents run now, and the most that ever ran at once. */
const running = new Map<string, { now: number; most: number }>();

const stack = useTaskStack({
  worker: () => ({
    agentFunctions: {
      // Runs until `overlap` of its group have run at once, or `windowMs` has passed: where nothing
      // holds them back they overlap, however busy the machine; under a limit, each ends after its window.
      overlap: async (ctx) => {
        const { group, overlap, windowMs } = ctx.claim.spec.payload as { group: string; overlap: number; windowMs: number };
        const counts = running.get(group) ?? { now: 0, most: 0 };
        running.set(group, counts);
        counts.now += 1;
        counts.most = Math.max(counts.most, counts.now);
        const until = Date.now() + windowMs;
        while (counts.most < overlap && Date.now() < until) {
          await ctx.heartbeat({ waiting: counts.now });
          await new Promise((r) => setTimeout(r, 50));
        }
        counts.now -= 1;
        return { revision: `rev-${ctx.claim.key}`, testCommand: 'pass', agentResult: { exitCode: 0, outputDigest: 'sha256:x' } };
      },
    },
    verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'sha256:ok', outputTail: 'ok' }) },
  }),
});

/** `n` independent tasks whose agents try, for `windowMs` each, to run `overlap` at once, in group `group`. */
const tasks = (n: number, group: string, overlap: number, extra: Record<string, unknown> = {}, windowMs = 1_000) =>
  Array.from({ length: n }, (_, i) => ({
    key: `t${i}`,
    run: { function: 'overlap' },
    verify: { function: 'pass' },
    payload: { group, overlap, windowMs },
    ...extra,
  }));

/** A graph written straight to the store (no workflow), for claims made by hand. */
async function storedGraph(spec: Record<string, unknown>): Promise<string> {
  const id = uniqueGraphId('limits');
  await graphSubmit(stack.db.pool, parseGraphSpec({ id, ...spec }), 'test');
  return id;
}

describe('concurrency limits (U11)', () => {
  it("lets racing claims take no more places than a graph's maxRunning, and a place again once one is free", async () => {
    const id = await storedGraph({ policy: { maxRunning: 1 }, tasks: tasks(3, 'sql', 1) });
    const worker = await stack.db.login('baton_worker');
    const claims = await Promise.all(['t0', 't1', 't2'].map((key, i) => taskClaim(worker.pool, taskIdOf(id, key), `owner-${i}`, LEASE_MS)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    const winner = claims.find(Boolean)!;
    await taskSubmit(
      worker.pool,
      { taskId: winner.taskId, owner: `owner-${claims.indexOf(winner)}`, claimVersion: winner.claimVersion },
      artifact('rev-1'),
    );
    const waiting = ['t0', 't1', 't2'].map((key) => taskIdOf(id, key)).find((taskId) => taskId !== winner.taskId)!;
    expect(await taskClaim(worker.pool, waiting, 'owner-next', LEASE_MS)).toMatchObject({ taskId: waiting });
    // Negative control: the same race in a graph without the limit takes every place.
    const free = await storedGraph({ tasks: tasks(3, 'sql-free', 1) });
    const freeClaims = await Promise.all(
      ['t0', 't1', 't2'].map((key, i) => taskClaim(worker.pool, taskIdOf(free, key), `owner-${i}`, LEASE_MS)),
    );
    expect(freeClaims.filter(Boolean)).toHaveLength(3);
  });

  it('bounds the tasks naming one concurrency key across graphs, and leaves other tasks alone', async () => {
    const db = { concurrency: { key: 'prod-db', limit: 1 } };
    const first = await storedGraph({ tasks: tasks(1, 'key-a', 1, db) });
    const second = await storedGraph({ tasks: [...tasks(1, 'key-b', 1, db), { ...tasks(1, 'key-b', 1)[0]!, key: 'other' }] });
    expect(await taskClaim(stack.db.pool, taskIdOf(first, 't0'), 'owner-a', LEASE_MS)).toBeDefined();
    expect(await taskClaim(stack.db.pool, taskIdOf(second, 't0'), 'owner-b', LEASE_MS)).toBeUndefined();
    expect(await taskClaim(stack.db.pool, taskIdOf(second, 'other'), 'owner-b', LEASE_MS)).toBeDefined();
  });

  it("bounds a pool's running tasks across graphs once an operator limits it; a pool without a limit takes every claim", async () => {
    const pool = `limited-${randomUUID().slice(0, 8)}`;
    const pooled = (key: string, name = pool) => ({ key, run: { pool: name }, verify: { function: 'pass' } });
    const first = await storedGraph({ tasks: [pooled('p0')] });
    const second = await storedGraph({ tasks: [pooled('p0'), pooled('p1')] });
    const client = await stack.db.login('baton_client');
    expect(await poolLimitSet(client.pool, pool, 1, 'operator')).toBe(1);
    expect(await taskClaim(stack.db.pool, taskIdOf(first, 'p0'), 'owner-a', LEASE_MS)).toBeDefined();
    expect(await taskClaim(stack.db.pool, taskIdOf(second, 'p0'), 'owner-b', LEASE_MS)).toBeUndefined();
    expect(await poolLimitSet(client.pool, pool, 2, 'operator')).toBe(2);
    expect(await taskClaim(stack.db.pool, taskIdOf(second, 'p0'), 'owner-b', LEASE_MS)).toBeDefined();
    expect(await taskClaim(stack.db.pool, taskIdOf(second, 'p1'), 'owner-b', LEASE_MS)).toBeUndefined();
    expect(await poolLimitSet(client.pool, pool, null, 'operator')).toBeNull();
    expect(await taskClaim(stack.db.pool, taskIdOf(second, 'p1'), 'owner-b', LEASE_MS)).toBeDefined();
    // Negative control: another pool, never limited, takes every claim.
    const free = await storedGraph({ tasks: [pooled('f0', `${pool}-free`), pooled('f1', `${pool}-free`)] });
    for (const key of ['f0', 'f1']) expect(await taskClaim(stack.db.pool, taskIdOf(free, key), 'owner-c', LEASE_MS)).toBeDefined();
    await expect(poolLimitSet(client.pool, pool, 0, 'operator')).rejects.toThrow('a pool limit is from 1 to 10000 running tasks, not 0');
    await expect(poolLimitSet(client.pool, 'Bad Pool', 1, 'operator')).rejects.toThrow(InvalidInputError);
  });

  it('runs a graph under maxRunning on a real worker: never more at once, every task verified', async () => {
    const group = `limited-${randomUUID().slice(0, 8)}`;
    const id = `limits-${randomUUID().slice(0, 8)}`;
    // Each waits 3 s for a third to join it: long enough for a second to start beside it on a busy machine.
    await stack.client.submitGraph({ id, policy: { maxRunning: 2 }, tasks: tasks(5, group, 3, {}, 3_000) }, 'test');
    expect((await stack.client.waitForGraph(id)).verified).toHaveLength(5);
    expect(running.get(group)!.most).toBe(2);
  });

  it('negative control: without the limit, the same agents run three at once', async () => {
    const group = `free-${randomUUID().slice(0, 8)}`;
    const id = `limits-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph({ id, tasks: tasks(3, group, 3, {}, 60_000) }, 'test');
    expect((await stack.client.waitForGraph(id)).verified).toHaveLength(3);
    expect(running.get(group)!.most).toBe(3);
  });
});
