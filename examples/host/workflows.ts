// The host team's own workflows, as they were before baton joined their worker: the file its
// `Worker.create({ workflowsPath })` names. Nothing here mentions baton.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from './activities.js';

const { composeGreeting } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });

export async function greet(name: string): Promise<string> {
  return composeGreeting(name);
}
