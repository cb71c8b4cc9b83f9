import type { Claim } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';
import { toClaim, type ClaimRecord } from './claimRow.js';

/** T3: claims the named task if it is ready; undefined when it is not (never waits on a lock). */
export async function claimTask(db: Queryable, taskId: string, owner: string, leaseMs: number): Promise<Claim | undefined> {
  const [row] = await callStore<ClaimRecord>(db, 'task_claim', [taskId, owner, leaseMs]);
  return row ? toClaim(row) : undefined;
}
