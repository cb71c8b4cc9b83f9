// Claims taken straight through the store, for tests and drills that play a worker without running one.
import type { Queryable } from '../db/queryable.js';
import { taskClaim, claimRelease } from '../db/sql/claims.js';
import type { Fence } from '../db/storeCall.js';

/** Lease of the claims the testkit takes: nothing runs under them, so it only has to outlast the caller's checks. */
export const CLAIM_LEASE_MS_DEFAULT = 60_000;

/** Claims a ready task for `owner` and returns the fence its writes carry; throws when the task is not claimable. */
export async function claimFence(db: Queryable, taskId: string, owner: string, leaseMs = CLAIM_LEASE_MS_DEFAULT): Promise<Fence> {
  const claim = await taskClaim(db, taskId, owner, leaseMs);
  if (!claim) throw new Error(`could not claim ${taskId} for ${owner}`);
  return { taskId, owner, claimVersion: claim.claimVersion };
}

/**
 * The owner of `fence` goes silent: its claim is released as recovery releases one (by `actor`,
 * for `reason`) and `owner` claims the task anew. Returns the new owner's fence.
 */
export async function reclaim(
  db: Queryable,
  fence: Fence,
  owner: string,
  release: { actor: string; reason: string } = { actor: 'testkit', reason: 'owner silent' },
): Promise<Fence> {
  await claimRelease(db, { taskId: fence.taskId, claimVersion: fence.claimVersion, kind: 'reclaimed_after_silence', ...release });
  return claimFence(db, fence.taskId, owner);
}
