import type { Queryable } from '../queryable.js';
import { fencedWrite, type Fence } from './fencedWrite.js';

/** T4: the owner reports that its agent failed; the task becomes ready again (`retry`) or failed. */
export function failAttempt(db: Queryable, fence: Fence, reason: string, retry: boolean) {
  return fencedWrite(db, fence, 'fail', 'SELECT * FROM baton.fail_attempt($1, $2, $3, $4, $5)', [
    fence.taskId,
    fence.owner,
    fence.claimVersion,
    reason,
    retry,
  ]);
}
