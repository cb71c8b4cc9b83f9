// The bare Temporal baseline: what a team would write by hand, with no claim, fence or verification.
import { proxyActivities } from '@temporalio/workflow';
import type { BareActivities } from '../bareActivities.js';

// The same timeout baton's single database calls use (workflows/taskWorkflow.ts `store`).
const acts = proxyActivities<BareActivities>({ startToCloseTimeout: '10 seconds' });

export interface BareWorkflowInput {
  /** How many no-op activities to run, one after another. */
  activities: number;
}

/** Runs `activities` no-op activities in sequence. */
export async function bareWorkflow(input: BareWorkflowInput): Promise<number> {
  for (let i = 0; i < input.activities; i++) await acts.noop();
  return input.activities;
}
