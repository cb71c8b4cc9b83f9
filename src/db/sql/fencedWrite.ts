import { mapDatabaseErrors, StaleClaimError } from '../../errors.js';
import type { Queryable } from '../queryable.js';

/** Who is writing, under which claim: the fence every owner write must match (T4). */
export interface Fence {
  taskId: string;
  owner: string;
  claimVersion: number;
}

interface FencedResult {
  accepted: boolean;
  status: string;
  owner: string | null;
  claim_version: number;
  lease_expires_at: Date | null;
  [column: string]: unknown;
}

/**
 * Runs one fenced store function (`SELECT * FROM baton.fn($1, ...)`) and throws StaleClaimError
 * when it refused; the function has already recorded the refusal as an event.
 */
export function fencedWrite(db: Queryable, fence: Fence, action: string, sql: string, values: unknown[]): Promise<{ leaseExpiresAt: string | null }> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query<FencedResult>(sql, values);
    const row = rows[0]!;
    if (!row.accepted) {
      throw new StaleClaimError(fence.taskId, fence.owner, fence.claimVersion, action, {
        status: row.status,
        owner: row.owner,
        claimVersion: row.claim_version,
      });
    }
    return { leaseExpiresAt: row.lease_expires_at?.toISOString() ?? null };
  });
}
