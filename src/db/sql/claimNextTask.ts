import type { Claim } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';
import { toClaim, type ClaimRecord } from './claimRow.js';

/** T3: claims the oldest ready task (optionally in one graph); undefined when none is ready. */
export async function claimNextTask(db: Queryable, owner: string, leaseMs: number, graphId?: string): Promise<Claim | undefined> {
  const [row] = await callStore<ClaimRecord>(db, 'task_claim_next', [owner, leaseMs, graphId ?? null]);
  return row ? toClaim(row) : undefined;
}
