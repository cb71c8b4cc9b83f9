// What baton asks of Temporal once Postgres has recorded a decision: start the lifecycle workflows
// of a submitted graph's roots (the CLI's client, src/client.ts), wake those of the dependents a
// verification released (the task workflow, through an activity), and an operator's cancel, rerun
// and approval decisions (the client and the agent API's task.cancel, graph.cancel, task.rerun,
// task.approve and task.reject): cancel a task's workflow, start it again, tell it to look now.
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { WorkflowControl } from './api/dispatch.js';
import type { GraphPolicy } from './tasks/graphSpec.js';
import { graphOf, graphWorkflowId, taskWorkflowId } from './tasks/taskId.js';
import { graphPriority } from './temporal/priority.js';
import { startWithSearchAttributes } from './temporal/registerSearchAttributes.js';
import { taskSearchAttributes } from './temporal/searchAttributes.js';
import { RECHECK_TASK_SIGNAL, TASK_WORKFLOW_PATCH_LEVEL, type TaskWorkflowInput } from './temporal/taskWorkflowContract.js';

/** How many workflows one call starts or wakes at once (a graph's roots, a verification's dependents). */
const STARTS_AT_ONCE = 32;
/** Rounds of start-then-signal for a workflow that keeps ending between the two before giving up. */
const WAKE_ROUNDS = 5;

export interface BatonWorkflowControl extends WorkflowControl {
  /**
   * Starts the lifecycle workflows of tasks Postgres has just made ready (a submitted graph's roots):
   * each claims its task at once, and starts the workflows of the dependents it releases. A workflow
   * already running for a task is left as it is.
   */
  startReadyTasks(taskIds: readonly string[], policy: GraphPolicy): Promise<void>;
  /**
   * Makes the workflow of each task look at its task now: starts one when none runs (`ready`: the
   * task was just made ready, so it claims before it reads), else signals the one that does.
   */
  wakeTasks(taskIds: readonly string[], policy: GraphPolicy, options: { ready: boolean }): Promise<void>;
}

export function workflowControl(temporal: Client, taskQueue: string): BatonWorkflowControl {
  /** `act` on the workflow `workflowId`; one that never started or has ended needs nothing. */
  const ifRunning = async (workflowId: string, act: (handle: WorkflowHandle) => Promise<void>) => {
    // Imported here, not with this module: a command that only reads Postgres does not load the SDK's client.
    const { WorkflowNotFoundError } = await import('@temporalio/client');
    await act(temporal.workflow.getHandle(workflowId)).catch((error: unknown) => {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    });
  };
  const cancel = (workflowId: string) => ifRunning(workflowId, (handle) => handle.cancel().then(() => {}));
  /**
   * Starts the lifecycle workflow of `taskId` (it wakes the dependents its verification releases);
   * `onConflict` says what a running one means.
   */
  const start = (taskId: string, policy: GraphPolicy, ready: boolean, onConflict: 'USE_EXISTING' | 'FAIL') =>
    startWithSearchAttributes(temporal, (registered) => {
      // A ready task's status is part of the start (no command of the workflow's own to show it).
      const shownStatus = registered && ready ? 'ready' : undefined;
      const input: TaskWorkflowInput = {
        taskId,
        policy,
        wakeDependents: true,
        patchLevel: TASK_WORKFLOW_PATCH_LEVEL,
        ...(ready && { ready }),
        ...(registered && { searchAttributes: true }),
        ...(shownStatus && { shownStatus }),
      };
      // By name: the workflow's module imports the activities, which start workflows through this module.
      return temporal.workflow.start('batonTaskWorkflow', {
        taskQueue,
        workflowId: taskWorkflowId(taskId),
        args: [input],
        ...taskSearchAttributes(taskId, registered, shownStatus),
        priority: graphPriority(graphOf(taskId), policy),
        workflowIdConflictPolicy: onConflict,
      });
    });
  const wake = async (taskId: string, policy: GraphPolicy, ready: boolean) => {
    const { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } = await import('@temporalio/client');
    for (let round = 1; round <= WAKE_ROUNDS; round++) {
      try {
        await start(taskId, policy, ready, 'FAIL');
        return;
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
      try {
        await temporal.workflow.getHandle(taskWorkflowId(taskId)).signal(RECHECK_TASK_SIGNAL);
        return;
      } catch (error) {
        // It ended between the start and the signal: start it again.
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
    throw new Error(`could not wake the workflow of task ${taskId}: it ended between each of ${WAKE_ROUNDS} starts and signals`);
  };
  return {
    cancelTask: (taskId) => cancel(taskWorkflowId(taskId)),
    // Only a graph submitted by an earlier baton has a workflow of its own; the task workflows of later ones start one another.
    cancelGraph: (graphId) => cancel(graphWorkflowId(graphId)),
    recheckTask: (taskId) => ifRunning(taskWorkflowId(taskId), (handle) => handle.signal(RECHECK_TASK_SIGNAL)),
    rerunTask: (taskId, policy) => start(taskId, policy, false, 'USE_EXISTING').then(() => {}),
    startReadyTasks: (taskIds, policy) => eachAtOnce(taskIds, (taskId) => start(taskId, policy, true, 'USE_EXISTING').then(() => {})),
    wakeTasks: (taskIds, policy, { ready }) => eachAtOnce(taskIds, (taskId) => wake(taskId, policy, ready)),
  };
}

/** Runs `act` on every item, STARTS_AT_ONCE at a time; after a failure no more are begun, and the first failure is thrown. */
async function eachAtOnce<T>(items: readonly T[], act: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (!failed && next < items.length) {
      await act(items[next++]!).catch((error: unknown) => {
        failed = true;
        throw error;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(STARTS_AT_ONCE, items.length) }, lane));
}
