import type { Queryable } from '../queryable.js';
import { callFenced, type Fence } from '../storeCall.js';

/** Columns of `baton.fenced_result`, what every task owner write returns. */
interface FencedResultRecord {
  accepted: boolean;
  status: string;
  owner: string | null;
  claim_version: number;
  lease_expires_at: Date | null;
  [column: string]: unknown;
}

/**
 * Runs one task owner write (`baton.<fn>(...args)`) under `fence`; StaleClaimError when the store
 * refused it. Returns the lease as it stands after the write.
 */
export async function fencedWrite(db: Queryable, fence: Fence, action: string, fn: string, args: readonly unknown[]): Promise<{ leaseExpiresAt: string | null }> {
  const row = await callFenced<FencedResultRecord>(db, fence, action, fn, args, (r) => ({
    status: r.status,
    owner: r.owner,
    claimVersion: r.claim_version,
  }));
  return { leaseExpiresAt: row.lease_expires_at?.toISOString() ?? null };
}
