import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { BatonActivities } from '../activities/index.js';

const { recordHealthCheck } = proxyActivities<BatonActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
});

/** Runs one activity that writes to Postgres and returns the row it wrote. */
export async function healthCheckWorkflow(message: string): Promise<Awaited<ReturnType<BatonActivities['recordHealthCheck']>>> {
  return recordHealthCheck({ workflowId: workflowInfo().workflowId, message });
}
