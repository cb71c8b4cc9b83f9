// What a task's lifecycle workflow (workflows/taskWorkflow.ts) is started with and the signal it
// hears, for those that start or signal it from outside a workflow (src/workflowControl.ts, which
// activities use too) without importing workflow code.
import type { GraphPolicy } from '../tasks/graphSpec.js';

/**
 * The name of the signal that tells a task's workflow to look at its task again now rather than at
 * its next poll, or rather than end on what it last saw: an upstream task was verified, releasing
 * this one or leaving it stale (T8), or a person decided its approval.
 */
export const RECHECK_TASK_SIGNAL = 'batonRecheckTask';

/**
 * The patch level a starter outside a workflow gives a new execution (`patchLevel`): the task
 * workflow's patches up to it are taken for granted rather than asked of `patched()`
 * (workflows/patches.ts). A worker without a granted patch would run the execution without it and
 * without its marker, and a newer worker replaying that history would not follow: so a new patch
 * is asked of `patched()` (its level above this one) for a release, and this level is raised to it
 * only in a later release, once no worker without the patch can be running. Level 1 holds the
 * patches up to baton 0.1's successor, whose task workflow (`batonTaskWorkflow`) no 0.1 worker runs.
 */
export const TASK_WORKFLOW_PATCH_LEVEL = 1;

export interface TaskWorkflowInput {
  taskId: string;
  policy: GraphPolicy;
  /**
   * This lifecycle runs outside a graph's workflow (every lifecycle but those of a graph submitted by
   * an earlier baton, which had one): once verified, it starts (or wakes) the workflows of the
   * dependents it released. (Default: false)
   */
  wakeDependents?: boolean;
  /**
   * Postgres made the task ready just before this workflow was started (a graph's roots at submit,
   * the dependents a verification released): the claim is the first look, with no read before it. A claim refused (the task
   * moved on, or has no attempts left) sends the workflow back to reading. (Default: false)
   */
  ready?: boolean;
  /** Carried over continue-as-new: the dependents this lifecycle's verifications released so far. */
  released?: string[];
  /** Carried over continue-as-new: the task awaited a person's approval (U11), whose decision released its dependents. (Default: false) */
  awaitedApproval?: boolean;
  /** The namespace has baton's search attributes (src/temporal/searchAttributes.ts): set them. (Default: false) */
  searchAttributes?: boolean;
  /**
   * The task workflow's patches this execution has from its start (TASK_WORKFLOW_PATCH_LEVEL when
   * it was set): it takes them without recording a patch marker, which costs a history event and
   * an upsert of `TemporalChangeVersion` (a visibility write) per patch and execution. (Default:
   * none: each patch is asked of `patched()`, as executions started before it were)
   */
  patchLevel?: number;
  /**
   * The status the start's search attributes show (`ready`, for a task Postgres has just made
   * ready): the workflow does not set it again. (Default: none shown)
   */
  shownStatus?: string;
}
