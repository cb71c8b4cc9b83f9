import { workflowInfo } from '@temporalio/workflow';
import type { BatonActivities } from '../activities/index.js';
import { proxyBatonActivities } from './prefixedNames.js';

// No patch level: a health check is rare, and its saved histories carry the names' patch marker.
const acts = proxyBatonActivities<BatonActivities>(
  {
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 5 },
  },
  undefined,
);

/** Runs one activity that writes to Postgres and returns the row it wrote. */
export async function batonHealthCheckWorkflow(message: string): Promise<Awaited<ReturnType<BatonActivities['batonRecordHealthCheck']>>> {
  return acts.batonRecordHealthCheck({ workflowId: workflowInfo().workflowId, message });
}
