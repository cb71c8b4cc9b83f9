// What an operator's cancel, rerun and approval decisions ask of Temporal once Postgres has recorded
// them (the CLI's client, src/client.ts, and the agent API's task.cancel, graph.cancel, task.rerun,
// task.approve and task.reject): cancel a task's or a graph's workflow, start a task's lifecycle
// workflow again, tell it to look at its task now.
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { WorkflowControl } from './api/dispatch.js';
import { graphOf, graphWorkflowId, taskWorkflowId } from './tasks/taskId.js';
import { graphPriority } from './temporal/priority.js';
import { startWithSearchAttributes } from './temporal/registerSearchAttributes.js';
import { taskSearchAttributes } from './temporal/searchAttributes.js';
import type { batonTaskWorkflow } from '../workflows/taskWorkflow.js';
import { recheckTaskSignal } from '../workflows/definitions.js';

export function workflowControl(temporal: Client, taskQueue: string): WorkflowControl {
  /** `act` on the workflow `workflowId`; one that never started or has ended needs nothing. */
  const ifRunning = async (workflowId: string, act: (handle: WorkflowHandle) => Promise<void>) => {
    // Imported here, not with this module: a command that only reads Postgres does not load the SDK's client.
    const { WorkflowNotFoundError } = await import('@temporalio/client');
    await act(temporal.workflow.getHandle(workflowId)).catch((error: unknown) => {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    });
  };
  const cancel = (workflowId: string) => ifRunning(workflowId, (handle) => handle.cancel().then(() => {}));
  return {
    cancelTask: (taskId) => cancel(taskWorkflowId(taskId)),
    cancelGraph: (graphId) => cancel(graphWorkflowId(graphId)),
    recheckTask: (taskId) => ifRunning(taskWorkflowId(taskId), (handle) => handle.signal(recheckTaskSignal)),
    async rerunTask(taskId, policy) {
      await startWithSearchAttributes(temporal, (registered) =>
        temporal.workflow.start<typeof batonTaskWorkflow>('batonTaskWorkflow', {
          taskQueue,
          workflowId: taskWorkflowId(taskId),
          // Outside the graph's workflow: it starts the workflows of the dependents it releases.
          args: [{ taskId, policy, wakeDependents: true, ...(registered && { searchAttributes: true }) }],
          ...taskSearchAttributes(taskId, registered),
          priority: graphPriority(graphOf(taskId), policy),
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      );
    },
  };
}
