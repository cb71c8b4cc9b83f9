import type { Queryable } from '../queryable.js';
import { fencedWrite, type Fence } from './fencedWrite.js';

/** T4: extends the owner's lease by `leaseMs` (database clock) and stores its progress. */
export function heartbeatTask(db: Queryable, fence: Fence, leaseMs: number, progress?: Record<string, unknown>) {
  return fencedWrite(db, fence, 'heartbeat', 'SELECT * FROM baton.heartbeat_task($1, $2, $3, $4, $5)', [
    fence.taskId,
    fence.owner,
    fence.claimVersion,
    leaseMs,
    progress ?? null,
  ]);
}
