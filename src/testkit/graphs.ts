// Graphs built from a shape ({ up: [], down: ['up'] }) and submitted through the store, for tests, drills and benchmarks.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/queryable.js';
import { graphSubmit } from '../db/sql/graphs.js';
import { parseGraphSpec, type GraphPolicy } from '../tasks/graphSpec.js';

/** A graph's shape: each task's key and the keys it depends on, e.g. `{ up: [], down: ['up'] }`. */
type TaskDependencies = Record<string, string[]>;

/** The registered agent function a task runs and the verifier function that checks it. */
interface TaskFunctions {
  run: string;
  verify: string;
}

/** A no-op agent and a passing verifier: what benchmark workers register; store-only graphs name them too. */
export const NOOP_FUNCTIONS: TaskFunctions = { run: 'noop', verify: 'pass' };

/** One function task as graph input. (Default functions: NOOP_FUNCTIONS) */
function functionTask(key: string, dependsOn: string[] = [], functions: TaskFunctions = NOOP_FUNCTIONS) {
  return { key, dependsOn, run: { function: functions.run }, verify: { function: functions.verify } };
}

/** `count` independent tasks keyed `t0`, `t1`, ... */
export function independentTasks(count: number): TaskDependencies {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`t${i}`, []]));
}

/** A graph id no other caller uses: `<prefix>-` and 8 random hex digits. */
export function uniqueGraphId(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** Graph input (for `client.submitGraph` or `parseGraphSpec`) whose tasks all run and verify through `functions`. */
export function functionGraph(
  id: string,
  tasks: TaskDependencies,
  options: { functions?: TaskFunctions; policy?: Partial<GraphPolicy> } = {},
) {
  return {
    id,
    ...(options.policy ? { policy: options.policy } : {}),
    tasks: Object.entries(tasks).map(([key, dependsOn]) => functionTask(key, dependsOn, options.functions)),
  };
}

/**
 * Writes a graph of function tasks straight to the store, starting no workflow: for tests, drills
 * and benchmarks of the store itself. Returns its id, `<prefix>-<random>`.
 */
export async function insertGraph(
  db: Queryable,
  tasks: TaskDependencies,
  options: { prefix?: string; actor?: string; policy?: Partial<GraphPolicy> } = {},
): Promise<string> {
  const id = uniqueGraphId(options.prefix ?? 'g');
  await graphSubmit(db, parseGraphSpec(functionGraph(id, tasks, { policy: options.policy })), options.actor ?? 'testkit');
  return id;
}
