// Waits on a graph's tasks in Postgres, for tests that run real workers: on states, never on time.
import type { BatonClient } from '../../src/client.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { TERMINAL_STATUSES } from '../../src/tasks/states.js';
import type { TaskRow } from '../../src/tasks/types.js';

/** As long as a test may wait for a state (a hang guard on a busy machine, never a measure). */
const STATE_TIMEOUT_MS = 600_000;

/**
 * Waits until a task of the graph is running (owned by one of `owners`, when given) and its agent
 * has printed 3 lines; returns it, or undefined once every task is verified.
 */
export function taskMidRun(client: BatonClient, graphId: string, owners?: Set<string>): Promise<TaskRow | undefined> {
  return waitFor(
    'a task mid-run',
    async () => {
      const tasks = await client.graphTasks(graphId);
      const running = tasks.find((t) => t.status === 'running' && Number(t.progress?.lines ?? 0) >= 3 && (!owners || owners.has(t.owner!)));
      if (!running && tasks.some((t) => t.status !== 'verified')) throw new Error('no task mid-run yet');
      return running;
    },
    { timeoutMs: STATE_TIMEOUT_MS, intervalMs: 50 },
  );
}

/** Waits until every task of the graph is verified; fails at once when one ends otherwise (failed, cancelled). */
export function graphVerified(client: BatonClient, graphId: string): Promise<TaskRow[]> {
  let ended: Error | undefined;
  return waitFor(
    'every task verified',
    async () => {
      const tasks = await client.graphTasks(graphId);
      const left = tasks.filter((t) => t.status !== 'verified');
      const lost = left.filter((t) => TERMINAL_STATUSES.has(t.status));
      if (lost.length) ended = new Error(`ended unverified: ${lost.map((t) => `${t.key} ${t.status}`).join(', ')}`);
      if (left.length) throw new Error(left.map((t) => `${t.key}: ${t.status}`).join(', '));
      return tasks;
    },
    { timeoutMs: STATE_TIMEOUT_MS, intervalMs: 200, abort: () => ended },
  );
}
