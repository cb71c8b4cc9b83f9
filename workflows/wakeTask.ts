// Waking task lifecycle workflows from another workflow (T8): after a verification, the dependents
// it released or left stale must be looked at again, whether their workflow still runs (it is
// signalled) or ended long ago (a new one is started).
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { getExternalWorkflowHandle, log, ParentClosePolicy, startChild, workflowInfo, type ActivityOptions } from '@temporalio/workflow';
import { taskSearchAttributes } from '../src/temporal/searchAttributes.js';
import type { GraphPolicy } from '../src/tasks/graphSpec.js';
import type { TaskActivities, VerifyOutcome } from '../activities/tasks.js';
import type { TaskWorkflowInput } from '../src/temporal/taskWorkflowContract.js';
import { recheckTaskSignal } from './definitions.js';
import { hasPatch, WAKE_BY_ACTIVITY_PATCH, WAKE_DEPENDENTS_PATCH } from './patches.js';
import { batonName, proxyBatonActivities } from './prefixedNames.js';
import { taskWorkflowId } from '../src/tasks/taskId.js';

/** Wakes of many workflows: a verification may release thousands; a frozen worker's is retried elsewhere. */
const WAKER_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '500 ms', maximumInterval: '10 seconds' },
};

/**
 * T8: after a verification, the workflows of the dependents it concerns look at them again: the
 * stale ones whose dependencies are now all verified (unless the policy is `mark`) and, when this
 * lifecycle runs outside a graph's workflow (every lifecycle but those of graphs submitted by an
 * earlier baton), the ones it released. One activity wakes them all, through the worker's client
 * (batonWakeTasks); histories from before WAKE_BY_ACTIVITY_PATCH started them as children here.
 */
export async function wakeAfterVerification(input: TaskWorkflowInput, outcome: VerifyOutcome): Promise<void> {
  const staled = input.policy.onUpstreamChange === 'mark' ? [] : (outcome.staled ?? []);
  const released = input.wakeDependents ? outcome.released : [];
  if (staled.length + released.length === 0 || !hasPatch(WAKE_DEPENDENTS_PATCH, input.patchLevel)) return;
  if (hasPatch(WAKE_BY_ACTIVITY_PATCH, input.patchLevel)) {
    const waker = proxyBatonActivities<TaskActivities>(WAKER_OPTIONS, input.patchLevel);
    await waker.batonWakeTasks({ released, staled, policy: input.policy });
    return;
  }
  await Promise.all([...staled, ...released].map((id) => wakeTask(id, input.policy, input.searchAttributes)));
}

/** Rounds of start-then-signal for a workflow that keeps ending between the two before giving up. */
const WAKE_ROUNDS = 5;

/**
 * Makes the workflow of `taskId` look at its task now: starts one (outliving this workflow, and
 * itself waking what it releases) when none runs, else signals the one that does. The woken
 * workflow decides from the task's row in Postgres, so a wake that was not needed costs one read.
 * (What a graph workflow of an earlier baton does for a task added to its graph, and a task
 * workflow whose history began before WAKE_BY_ACTIVITY_PATCH.)
 */
export async function wakeTask(taskId: string, policy: GraphPolicy, searchAttributes?: boolean): Promise<void> {
  const workflowId = taskWorkflowId(taskId);
  for (let round = 1; round <= WAKE_ROUNDS; round++) {
    try {
      // By name, not by function: this module is imported by taskWorkflow.ts, and imports nothing back.
      const input: TaskWorkflowInput = { taskId, policy, wakeDependents: true, ...(searchAttributes && { searchAttributes }) };
      // (Both callers run executions without a patch level: a graph workflow, or a task workflow recorded before it.)
      await startChild(batonName('batonTaskWorkflow', undefined), {
        workflowId,
        taskQueue: workflowInfo().taskQueue,
        parentClosePolicy: ParentClosePolicy.ABANDON,
        args: [input],
        ...taskSearchAttributes(taskId, searchAttributes),
      });
      return;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    try {
      // Either name reaches a workflow on this code; 0.1's is what a history from before the prefix recorded.
      await getExternalWorkflowHandle(workflowId).signal(batonName(recheckTaskSignal.name, undefined));
      return;
    } catch {
      // It ended between the start and the signal: start it again.
    }
  }
  log.warn('could not wake the workflow of a task', { taskId, rounds: WAKE_ROUNDS });
}
