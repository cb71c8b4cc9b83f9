// Waking a task's lifecycle workflow from another workflow (T8): after a verification, the
// dependents it released or left stale must be looked at again, whether their workflow still runs
// (it is signalled) or ended long ago (a new one is started).
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { getExternalWorkflowHandle, log, ParentClosePolicy, startChild, workflowInfo } from '@temporalio/workflow';
import { taskSearchAttributes } from '../src/temporal/searchAttributes.js';
import type { GraphPolicy } from '../src/tasks/graphSpec.js';
import { recheckTaskSignal, type TaskWorkflowInput } from './definitions.js';
import { batonName } from './prefixedNames.js';
import { taskWorkflowId } from '../src/tasks/taskId.js';

/** Rounds of start-then-signal for a workflow that keeps ending between the two before giving up. */
const WAKE_ROUNDS = 5;

/**
 * Makes the workflow of `taskId` look at its task now: starts one (outliving this workflow, and
 * itself waking what it releases) when none runs, else signals the one that does. The woken
 * workflow decides from the task's row in Postgres, so a wake that was not needed costs one read.
 */
export async function wakeTask(taskId: string, policy: GraphPolicy, searchAttributes?: boolean): Promise<void> {
  const workflowId = taskWorkflowId(taskId);
  for (let round = 1; round <= WAKE_ROUNDS; round++) {
    try {
      // By name, not by function: this module is imported by taskWorkflow.ts, and imports nothing back.
      const input: TaskWorkflowInput = { taskId, policy, wakeDependents: true, ...(searchAttributes && { searchAttributes }) };
      await startChild(batonName('batonTaskWorkflow'), {
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
      await getExternalWorkflowHandle(workflowId).signal(batonName(recheckTaskSignal.name));
      return;
    } catch {
      // It ended between the start and the signal: start it again.
    }
  }
  log.warn('could not wake the workflow of a task', { taskId, rounds: WAKE_ROUNDS });
}
