import type { Artifact } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import type { Fence } from '../storeCall.js';
import { fencedWrite } from './fencedWrite.js';

/** T4, T7: the owner submits its artifact; refused (StaleClaimError) unless it still holds the claim. */
export function submitTask(db: Queryable, fence: Fence, artifact: Artifact) {
  return fencedWrite(db, fence, 'submit', 'task_submit', [
    fence.taskId,
    fence.owner,
    fence.claimVersion,
    artifact,
  ]);
}
