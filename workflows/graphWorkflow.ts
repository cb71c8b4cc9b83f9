// The graph of tasks (T8, T9). Postgres decides readiness: when a task is verified, the same
// transaction (baton.verification_record) makes each dependent whose dependencies are all verified
// ready, and names them. This workflow decides nothing: it starts the lifecycle of each root task,
// then of exactly the tasks each verification released, and keeps itself within Temporal's limits:
//  - children are started without awaiting each one, so one workflow task can issue a batch;
//  - at most MAX_RUNNING_CHILDREN run at once (Temporal refuses more than 2,000 pending children);
//  - after CHILDREN_PER_RUN children it drains and continues as new, so the history stays far
//    below Temporal's 51,200-event limit whatever the graph's size.
// Tasks added to the graph after it was submitted (U11: by an operator, or subtasks an agent
// proposed) are not this workflow's: their workflows were started when they were added, and a
// verification here that releases one wakes it (WAKES_ADDED_PATCH), so it need not wait for its poll.
// Tasks never released (an upstream task failed) get no workflow and stay blocked (SPEC D4). A task
// left stale (T8) is not counted verified; when it is verified later, by a workflow started for its
// rerun, that workflow starts the dependents it releases.
// Runs begun before STARTS_RELEASED_PATCH counted each dependent's verified dependencies here
// instead, and replay that way.
import { condition, log, makeContinueAsNewFunc, patched, setHandler, startChild, workflowInfo } from '@temporalio/workflow';
import { taskSearchAttributes } from '../src/temporal/searchAttributes.js';
import {
  graphProgressQuery,
  graphProgressQueryUnprefixed,
  type GraphWorkflowInput,
  type GraphWorkflowResult,
  type TaskWorkflowResult,
} from './definitions.js';
import { batonName } from './prefixedNames.js';
import type { batonTaskWorkflow } from './taskWorkflow.js';
import { wakeTask } from './wakeTask.js';
import { taskWorkflowId } from '../src/tasks/taskId.js';

const TASK_WORKFLOW_TASK_TIMEOUT = '5 seconds';
/** Below Temporal's `limit.numPendingChildExecutions.error` (2,000). */
const MAX_RUNNING_CHILDREN = 1_000;
/** About 3 history events per child plus workflow tasks: one run stays near 10,000 events. */
const CHILDREN_PER_RUN = 2_000;
/** Marks runs that start exactly the tasks a verification released; older runs count dependencies. */
const STARTS_RELEASED_PATCH = 'graph-starts-released-tasks';
/** Marks runs that wake the tasks added to the graph that a verification released; older runs leave them to their poll. */
const WAKES_ADDED_PATCH = 'graph-wakes-added-tasks';

interface Carried {
  verified: string[];
  failed: string[];
  stale?: string[];
  /** Released but not started yet when the run continued as new (absent from runs before the patch: then counted). */
  releasable?: string[];
}

export async function batonGraphWorkflow(input: GraphWorkflowInput & { carried?: Carried }): Promise<GraphWorkflowResult> {
  const verified = new Set(input.carried?.verified ?? []);
  const failed = new Set(input.carried?.failed ?? []);
  const stale = new Set(input.carried?.stale ?? []);
  const done = (id: string) => verified.has(id) || failed.has(id) || stale.has(id);
  const progress: Record<string, string> = {};
  setHandler(graphProgressQuery, () => progress);
  setHandler(graphProgressQueryUnprefixed, () => progress);

  const startsReleased = patched(STARTS_RELEASED_PATCH);
  const inGraph = new Set(input.tasks.map((t) => t.taskId));
  const dependents = new Map<string, string[]>();
  const waitingOn = new Map<string, number>();
  for (const t of input.tasks) {
    waitingOn.set(t.taskId, t.dependsOn.filter((d) => !verified.has(d)).length);
    for (const d of t.dependsOn) dependents.set(d, [...(dependents.get(d) ?? []), t.taskId]);
  }
  // At the start: the roots (ready since the graph was submitted), or what the last run left to start.
  const releasable =
    input.carried?.releasable ?? input.tasks.filter((t) => !done(t.taskId) && waitingOn.get(t.taskId) === 0).map((t) => t.taskId);
  const started = new Set<string>();
  let running = 0;
  let startedThisRun = 0;
  // Wakes of added tasks not yet sent: the run does not continue as new or end before they are.
  let waking = 0;
  const wakeAdded = (taskId: string) => {
    if (!patched(WAKES_ADDED_PATCH)) return;
    waking++;
    // A wake that fails leaves the task to its own workflow's next look; it must not fail the graph's.
    void wakeTask(taskId, input.policy, input.searchAttributes)
      .catch((error: unknown) => log.warn('could not wake the workflow of an added task', { taskId, error: String(error) }))
      .finally(() => waking--);
  };

  const release = (taskId: string, result: TaskWorkflowResult) => {
    if (startsReleased) {
      for (const id of result.released ?? []) {
        if (!inGraph.has(id)) wakeAdded(id);
        else if (!started.has(id) && !done(id)) releasable.push(id);
      }
      return;
    }
    for (const dependent of dependents.get(taskId) ?? []) {
      const left = (waitingOn.get(dependent) ?? 1) - 1;
      waitingOn.set(dependent, left);
      if (left === 0) releasable.push(dependent);
    }
  };
  const finish = (taskId: string, result: TaskWorkflowResult) => {
    running--;
    progress[taskId] = result.status;
    if (result.status === 'stale') {
      stale.add(taskId);
      return;
    }
    if (result.status !== 'verified') {
      failed.add(taskId);
      return;
    }
    verified.add(taskId);
    release(taskId, result);
  };
  const start = (taskId: string) => {
    started.add(taskId);
    running++;
    startedThisRun++;
    progress[taskId] = 'started';
    // Postgres already made the task ready: its workflow claims it at once, without reading it first.
    void startChild<typeof batonTaskWorkflow>(batonName('batonTaskWorkflow', undefined), {
      workflowId: taskWorkflowId(taskId),
      taskQueue: workflowInfo().taskQueue,
      workflowTaskTimeout: TASK_WORKFLOW_TASK_TIMEOUT,
      args: [{ taskId, policy: input.policy, ready: true, ...(input.searchAttributes && { searchAttributes: true }) }],
      ...taskSearchAttributes(taskId, input.searchAttributes),
    })
      .then((handle) => handle.result())
      .then(
        (result) => finish(taskId, result),
        () => finish(taskId, { taskId, status: 'failed', attempts: 0 }),
      );
  };

  for (;;) {
    while (releasable.length && running < MAX_RUNNING_CHILDREN && startedThisRun < CHILDREN_PER_RUN) start(releasable.shift()!);
    if (running === 0 && (releasable.length === 0 || startedThisRun >= CHILDREN_PER_RUN)) break;
    await condition(() => running === 0 || (releasable.length > 0 && running < MAX_RUNNING_CHILDREN && startedThisRun < CHILDREN_PER_RUN));
  }
  await condition(() => waking === 0);
  if (releasable.length) {
    const carried: Carried = { verified: [...verified], failed: [...failed], stale: [...stale] };
    // Under the prefixed type, so an execution started under 0.1's type leaves it here.
    await makeContinueAsNewFunc<typeof batonGraphWorkflow>({ workflowType: batonName('batonGraphWorkflow', undefined) })({
      ...input,
      carried: startsReleased ? { ...carried, releasable } : carried,
    });
  }
  const blocked = input.tasks.filter((t) => !done(t.taskId)).map((t) => t.taskId);
  return { graphId: input.graphId, verified: [...verified], failed: [...failed], stale: [...stale], blocked };
}
