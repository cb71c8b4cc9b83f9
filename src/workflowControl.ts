// What an operator's cancel and rerun ask of Temporal once Postgres has recorded them (the CLI's
// client, src/client.ts, and the agent API's task.cancel, graph.cancel and task.rerun): cancel a
// task's or a graph's workflow, start a task's lifecycle workflow again.
import type { Client } from '@temporalio/client';
import type { WorkflowControl } from './api/dispatch.js';
import { graphWorkflowId, taskWorkflowId } from './tasks/taskId.js';
import { startWithSearchAttributes } from './temporal/registerSearchAttributes.js';
import { taskSearchAttributes } from './temporal/searchAttributes.js';
import type { batonTaskWorkflow } from '../workflows/taskWorkflow.js';

export function workflowControl(temporal: Client, taskQueue: string): WorkflowControl {
  const cancel = async (workflowId: string) => {
    // Imported here, not with this module: a command that only reads Postgres does not load the SDK's client.
    const { WorkflowNotFoundError } = await import('@temporalio/client');
    await temporal.workflow
      .getHandle(workflowId)
      .cancel()
      .catch((error: unknown) => {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      });
  };
  return {
    cancelTask: (taskId) => cancel(taskWorkflowId(taskId)),
    cancelGraph: (graphId) => cancel(graphWorkflowId(graphId)),
    async rerunTask(taskId, policy) {
      await startWithSearchAttributes(temporal, (registered) =>
        temporal.workflow.start<typeof batonTaskWorkflow>('batonTaskWorkflow', {
          taskQueue,
          workflowId: taskWorkflowId(taskId),
          // Outside the graph's workflow: it starts the workflows of the dependents it releases.
          args: [{ taskId, policy, wakeDependents: true, ...(registered && { searchAttributes: true }) }],
          ...taskSearchAttributes(taskId, registered),
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      );
    },
  };
}
