import type { Artifact } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { fencedWrite, type Fence } from './fencedWrite.js';

/** T4, T7: the owner submits its artifact; refused (StaleClaimError) unless it still holds the claim. */
export function submitTask(db: Queryable, fence: Fence, artifact: Artifact) {
  return fencedWrite(db, fence, 'submit', 'SELECT * FROM baton.submit_task($1, $2, $3, $4)', [
    fence.taskId,
    fence.owner,
    fence.claimVersion,
    artifact,
  ]);
}
