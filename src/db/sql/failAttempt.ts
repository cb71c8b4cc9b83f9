import type { Queryable } from '../queryable.js';
import type { Fence } from '../storeCall.js';
import { fencedWrite } from './fencedWrite.js';

/** T4: the owner reports that its agent failed; the task becomes ready again (`retry`) or failed. */
export function failAttempt(db: Queryable, fence: Fence, reason: string, retry: boolean) {
  return fencedWrite(db, fence, 'fail', 'task_fail_attempt', [
    fence.taskId,
    fence.owner,
    fence.claimVersion,
    reason,
    retry,
  ]);
}
