// Bindings of src/db/functions/graphs.sql: submitting a graph and moving its tasks outside any
// owner's claim (SPEC T8).
import type { GraphSpec } from '../../tasks/graphSpec.js';
import type { TaskStatus } from '../../tasks/states.js';
import type { Queryable } from '../queryable.js';
import { callStore, callStoreValue } from '../storeCall.js';

/**
 * Moves a task outside any owner's claim (retry after rejection, give up, re-run, cancel), through
 * the database's state machine; returns the status it left. The event kind names the decision.
 */
export function taskSetStatus(
  db: Queryable,
  change: { taskId: string; actor: string; to: TaskStatus; kind: string; reason: string },
): Promise<TaskStatus> {
  return callStoreValue<TaskStatus>(db, 'task_set_status', [change.taskId, change.actor, change.to, change.kind, change.reason]);
}

/**
 * T8: applies the graph's `onUpstreamChange` policy to a stale task: with `rerun`, it is made ready
 * on its upstream tasks' current verified revisions once they are all verified; otherwise (or
 * until then) it stays stale. Returns its status afterwards; a task that is not stale is left alone.
 */
export function taskRerunStale(db: Queryable, change: { taskId: string; actor: string; reason: string }): Promise<TaskStatus> {
  return callStoreValue<TaskStatus>(db, 'task_rerun_stale', [change.taskId, change.actor, change.reason]);
}

/** T8: writes a validated graph atomically; a duplicate graph id fails (InvalidInputError) and writes nothing. */
export function graphSubmit(db: Queryable, graph: GraphSpec, actor: string): Promise<number> {
  const tasks = graph.tasks.map((t) => ({ key: t.key, spec: t.spec, dependsOn: t.dependsOn }));
  return callStoreValue<number>(db, 'graph_submit', [graph.id, actor, graph, JSON.stringify(tasks)]);
}

/**
 * U11: adds validated tasks to the running graph `graphId` (see `baton.graph_add_tasks`): each
 * depends on tasks of the graph or on others added with it; those whose dependencies are all
 * verified are released at once. Returns each added task's id and status.
 */
export async function graphAddTasks(
  db: Queryable,
  graphId: string,
  actor: string,
  tasks: GraphSpec['tasks'],
): Promise<{ taskId: string; status: TaskStatus }[]> {
  const rows = await callStore<{ task_id: string; status: TaskStatus }>(db, 'graph_add_tasks', [
    graphId,
    actor,
    JSON.stringify(tasks.map((t) => ({ key: t.key, spec: t.spec, dependsOn: t.dependsOn }))),
  ]);
  return rows.map((r) => ({ taskId: r.task_id, status: r.status }));
}
