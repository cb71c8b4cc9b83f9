// The task workflow's patches (T9: executions survive a deploy). An execution recorded before a
// patch replays without it; one started after it takes it. `patched()` decides by recording a
// marker (a history event, and an upsert of the `TemporalChangeVersion` search attribute: a
// visibility write) in each execution that reaches it; an execution started with a patch level
// (`TaskWorkflowInput.patchLevel`, given by src/workflowControl.ts) takes the patches up to its
// level without asking, so the lifecycles started today record none.
import { patched } from '@temporalio/workflow';

/** A patch of the task workflow: its marker's id, and the first patch level that takes it for granted. */
interface TaskWorkflowPatch {
  id: string;
  level: number;
}

/** Executions that use the prefixed names (workflows/prefixedNames.ts); histories without it replay with 0.1's. */
export const PREFIXED_NAMES_PATCH: TaskWorkflowPatch = { id: 'baton-prefixed-names', level: 1 };
/** Marks histories whose refused claims back off (U11); older histories replay with their fixed pause. */
export const CLAIM_BACKOFF_PATCH: TaskWorkflowPatch = { id: 'claim-backoff', level: 1 };
/** Marks histories that wake dependents after a verification (T8); older histories replay without. */
export const WAKE_DEPENDENTS_PATCH: TaskWorkflowPatch = { id: 'wake-dependents-after-verification', level: 1 };
/** Marks histories that wake dependents through an activity; older histories started them as children (wakeTask). */
export const WAKE_BY_ACTIVITY_PATCH: TaskWorkflowPatch = { id: 'wake-dependents-by-activity', level: 1 };

/**
 * Whether this execution has `patch`: granted by its patch level (no marker), else as `patched()`
 * says. `patchLevel` is the execution's input's, undefined for an execution started without one
 * (and for the workflows of graphs an earlier baton submitted).
 */
export function hasPatch(patch: TaskWorkflowPatch, patchLevel: number | undefined): boolean {
  return (patchLevel ?? 0) >= patch.level || patched(patch.id);
}
