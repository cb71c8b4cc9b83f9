import type { Queryable } from '../queryable.js';
import type { Fence } from '../storeCall.js';
import { fencedWrite } from './fencedWrite.js';

/** T4: extends the owner's lease by `leaseMs` (database clock) and stores its progress. */
export function heartbeatTask(db: Queryable, fence: Fence, leaseMs: number, progress?: Record<string, unknown>) {
  return fencedWrite(db, fence, 'heartbeat', 'task_heartbeat', [
    fence.taskId,
    fence.owner,
    fence.claimVersion,
    leaseMs,
    progress ?? null,
  ]);
}
