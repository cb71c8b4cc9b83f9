// U11: priorities and fairness between graphs, end to end on a real worker, Postgres and Temporal.
// The worker runs one activity at a time, and the first run holds it until the test lets go, so
// every other run waits in Temporal's backlog; the order the waiting tasks are then claimed in is
// what the graphs' priorities and fairness decide. Waits on states (runs scheduled), never on time.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/waitFor.js';
import { taskIdOf, taskWorkflowId } from '../../src/tasks/taskId.js';
import { useTaskStack } from '../helpers/taskStack.js';

/** Lets the held run go; until then the worker's one activity slot is taken. */
let letGo: () => void = () => {};
let held = Promise.resolve();

const stack = useTaskStack({
  worker: () => ({
    workerOptions: { maxConcurrentActivityTaskExecutions: 1 },
    agentFunctions: {
      hold: async (ctx) => {
        await held;
        return { revision: `rev-${ctx.claim.key}`, testCommand: 'pass', agentResult: { exitCode: 0, outputDigest: 'sha256:x' } };
      },
    },
    verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'sha256:ok', outputTail: 'ok' }) },
  }),
});

const tasks = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ key: `${prefix}${i}`, run: { function: 'hold' }, verify: { function: 'pass' } }));

/** The state of the run activity each of `taskIds`' workflows has pending (1 scheduled, 2 started), or none. */
async function runStates(taskIds: string[]): Promise<(number | undefined)[]> {
  return Promise.all(
    taskIds.map(async (taskId) => {
      const { raw } = await stack.temporal.client.workflow
        .getHandle(taskWorkflowId(taskId))
        .describe()
        .catch(() => ({ raw: { pendingActivities: [] } }));
      return raw.pendingActivities?.find((a) => a.activityType?.name === 'batonRunTask')?.state ?? undefined;
    }),
  );
}

/**
 * Submits `first` (its first run is held), then, once every other run of it waits, `second`; lets
 * the held run go once every run of both waits; returns the keys of both graphs' tasks in the order
 * they were claimed.
 */
async function claimOrder(first: { priority: number; n: number }, second: { priority: number; n: number }): Promise<string[]> {
  held = new Promise((resolve) => (letGo = resolve));
  const a = `first-${randomUUID().slice(0, 6)}`;
  const b = `second-${randomUUID().slice(0, 6)}`;
  const ids = (graphId: string, prefix: string, n: number) => tasks(prefix, n).map((t) => taskIdOf(graphId, t.key));
  const waiting = async (what: string, taskIds: string[], started: number) =>
    waitFor(
      what,
      async () => {
        const states = await runStates(taskIds);
        const scheduled = states.filter((s) => s === 1).length;
        const running = states.filter((s) => s === 2).length;
        if (scheduled !== taskIds.length - started || running !== started) throw new Error(`runs in states ${states.join(', ')}`);
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  await stack.client.submitGraph({ id: a, policy: { priority: first.priority }, tasks: tasks('a', first.n) }, 'test');
  await waiting(`one run of ${a} held, the others waiting`, ids(a, 'a', first.n), 1);
  await stack.client.submitGraph({ id: b, policy: { priority: second.priority }, tasks: tasks('b', second.n) }, 'test');
  await waiting(`every run of ${b} waiting`, ids(b, 'b', second.n), 0);
  letGo();
  await stack.client.waitForGraph(a);
  await stack.client.waitForGraph(b);
  const claims = [...(await stack.client.events(a)), ...(await stack.client.events(b))]
    .filter((e) => e.kind === 'claimed')
    .sort((x, y) => x.id - y.id);
  return claims.map((e) => e.subjectId.split('/')[1]!);
}

describe('priorities and fairness between graphs (U11)', () => {
  it('claims the tasks of a graph of priority 1 before those of a graph of priority 5 that waited longer', async () => {
    const order = await claimOrder({ priority: 5, n: 4 }, { priority: 1, n: 2 });
    // The held run first; then the later graph's two, ahead of the three that waited longer.
    expect(order.slice(1, 3).sort()).toEqual(['b0', 'b1']);
    expect(order.slice(3).every((k) => k.startsWith('a'))).toBe(true);
  });

  it('shares the workers between graphs of one priority in turn: a small graph submitted later is not left for last', async () => {
    const order = await claimOrder({ priority: 3, n: 6 }, { priority: 3, n: 3 });
    // First come first served would claim every task of the first graph before the second's.
    expect(order.slice(-2).every((k) => k.startsWith('a'))).toBe(true);
    expect(order.filter((k) => k.startsWith('b'))).toHaveLength(3);
  });
});
