// A task id is `<graph id>/<task key>`, as baton.task_id_of composes it in SQL. Neither part
// holds a `/` (graphSpec.ts's KEY_PATTERN), so the first one splits it; a graph id has none.

/** The id of the task `key` of graph `graph`: `sdk/tests`. */
export function taskIdOf(graph: string, key: string): string {
  return `${graph}/${key}`;
}

/** Whether `id` names a task rather than a graph (a graph id has no `/`). */
export function isTaskId(id: string): boolean {
  return id.includes('/');
}

/** The graph of task `id`: what comes before its first `/` (all of `id` when it has none). */
export function graphOf(id: string): string {
  const slash = id.indexOf('/');
  return slash < 0 ? id : id.slice(0, slash);
}

/** The key of task `id` within its graph: what follows its first `/`; undefined when `id` has none. */
export function keyOf(id: string): string | undefined {
  const slash = id.indexOf('/');
  return slash < 0 ? undefined : id.slice(slash + 1);
}

/** Workflow id of a task's lifecycle workflow. */
export function taskWorkflowId(taskId: string): string {
  return `baton-task:${taskId}`;
}

/** Workflow id of a graph's workflow (a graph submitted by an earlier baton had one; later ones have none). */
export function graphWorkflowId(graphId: string): string {
  return `baton-graph:${graphId}`;
}

/** A Temporal list filter that finds the lifecycle workflows of graph `graphId`'s tasks. */
export function graphWorkflowsQuery(graphId: string): string {
  return `WorkflowId STARTS_WITH "${taskWorkflowId(taskIdOf(graphId, ''))}"`;
}

/**
 * Who a run's agent is to the rest of baton: its token's identity and the actor of its tool calls'
 * preconditions. The task's `run.agent`, else the task id.
 */
export function runAgentIdentity(claim: { taskId: string; spec: { run: { agent?: string } } }): string {
  return claim.spec.run.agent ?? claim.taskId;
}
