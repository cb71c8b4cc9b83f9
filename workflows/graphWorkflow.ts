import { getExternalWorkflowHandle, setHandler, startChild, workflowInfo, type ChildWorkflowHandle } from '@temporalio/workflow';
import {
  dependenciesReleasedSignal,
  graphProgressQuery,
  taskWorkflowId,
  type GraphWorkflowInput,
  type GraphWorkflowResult,
  type TaskWorkflowResult,
} from './definitions.js';
import { taskWorkflow } from './taskWorkflow.js';

const TASK_WORKFLOW_TASK_TIMEOUT = '5 seconds';

/**
 * A graph of tasks (T8, T9): starts one lifecycle workflow per task; when a task is verified,
 * signals each dependent whose dependencies are now all verified. Postgres has already made
 * those dependents ready in the verification's transaction; the signal only wakes their workflows.
 */
export async function graphWorkflow(input: GraphWorkflowInput): Promise<GraphWorkflowResult> {
  const progress: Record<string, string> = Object.fromEntries(input.tasks.map((t) => [t.taskId, t.dependsOn.length ? 'waiting' : 'started']));
  setHandler(graphProgressQuery, () => progress);
  const verified = new Set<string>();
  const failed = new Set<string>();
  const signalled = new Set<string>();
  const handles = new Map<string, ChildWorkflowHandle<typeof taskWorkflow>>();

  for (const task of input.tasks) {
    handles.set(
      task.taskId,
      await startChild(taskWorkflow, {
        workflowId: taskWorkflowId(task.taskId),
        taskQueue: workflowInfo().taskQueue,
        // Small histories; a task stuck on a frozen worker's poll is handed to another sooner.
        workflowTaskTimeout: TASK_WORKFLOW_TASK_TIMEOUT,
        args: [{ taskId: task.taskId, dependsOn: task.dependsOn, policy: input.policy }],
      }),
    );
  }

  const finish = (result: TaskWorkflowResult) => {
    progress[result.taskId] = result.status;
    (result.status === 'verified' ? verified : failed).add(result.taskId);
  };
  // A child that fails or is cancelled counts as a failed task; it must not fail the whole graph.
  const pending = new Map(
    [...handles].map(([taskId, handle]) => [
      taskId,
      handle.result().then(
        (result) => ({ taskId, result }),
        (): { taskId: string; result: TaskWorkflowResult } => ({ taskId, result: { taskId, status: 'failed', attempts: 0 } }),
      ),
    ] as const),
  );
  const isReleasable = (t: { taskId: string; dependsOn: string[] }) =>
    t.dependsOn.length > 0 && !signalled.has(t.taskId) && t.dependsOn.every((d) => verified.has(d));

  while (pending.size) {
    const waiting = input.tasks.filter((t) => pending.has(t.taskId) && t.dependsOn.length > 0 && !signalled.has(t.taskId));
    const running = [...pending.keys()].filter((id) => !waiting.some((w) => w.taskId === id));
    if (running.length === 0) break; // everything left waits on an upstream task that failed
    const { taskId, result } = await Promise.race(running.map((id) => pending.get(id)!));
    pending.delete(taskId);
    finish(result);
    for (const t of input.tasks.filter(isReleasable)) {
      signalled.add(t.taskId);
      progress[t.taskId] = 'started';
      await handles.get(t.taskId)!.signal(dependenciesReleasedSignal);
    }
  }

  const blocked = [...pending.keys()];
  for (const taskId of blocked) progress[taskId] = 'blocked';
  // Their workflows would wait forever; the tasks themselves stay blocked in Postgres.
  await Promise.all(blocked.map((id) => getExternalWorkflowHandle(handles.get(id)!.workflowId).cancel()));
  return { graphId: input.graphId, verified: [...verified], failed: [...failed], blocked };
}
