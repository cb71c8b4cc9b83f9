import { workflowInfo } from '@temporalio/workflow';
import type { BatonActivities } from '../activities/index.js';
import { proxyBatonActivities } from './prefixedNames.js';

const acts = proxyBatonActivities<BatonActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
});

/** Runs one activity that writes to Postgres and returns the row it wrote. */
export async function batonHealthCheckWorkflow(message: string): Promise<Awaited<ReturnType<BatonActivities['batonRecordHealthCheck']>>> {
  return acts.batonRecordHealthCheck({ workflowId: workflowInfo().workflowId, message });
}
