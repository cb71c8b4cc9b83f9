// Bindings of src/db/functions/graphs.sql: submitting a graph and moving its tasks outside any
// owner's claim (SPEC T8).
import type { GraphPolicy, GraphSpec } from '../../tasks/graphSpec.js';
import type { TaskStatus } from '../../tasks/states.js';
import type { Proposal } from '../../tasks/types.js';
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

/** U11: the proposals of subtasks waiting for an operator (with `all`, decided ones too), oldest first; of one graph with `graphId`. */
export function proposalList(db: Queryable, filter: { graphId?: string; all?: boolean } = {}): Promise<Proposal[]> {
  return callStoreValue<Proposal[]>(db, 'proposal_list', [filter.graphId ?? null, filter.all ?? false]);
}

/**
 * U11: `actor` accepts (its subtasks are added to the graph as `actor`'s) or declines (with a reason)
 * the waiting proposal `id`; never the agent that proposed it. Returns the proposal as decided, the
 * tasks added and, when accepted, the graph's policy, which their workflows run under.
 */
export function proposalDecide(
  db: Queryable,
  d: { id: number; actor: string; accept: boolean; reason?: string },
): Promise<Proposal & { added: { taskId: string; status: TaskStatus }[]; policy?: GraphPolicy }> {
  return callStoreValue(db, 'proposal_decide', [d.id, d.actor, d.accept, d.reason ?? null]);
}
