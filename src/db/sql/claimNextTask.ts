import { mapDatabaseErrors } from '../../errors.js';
import type { Claim } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { toClaim, type ClaimRecord } from './claimRow.js';

/** T3: claims the oldest ready task (optionally in one graph); undefined when none is ready. */
export function claimNextTask(db: Queryable, owner: string, leaseMs: number, graphId?: string): Promise<Claim | undefined> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query<ClaimRecord>('SELECT * FROM baton.claim_next_task($1, $2, $3)', [owner, leaseMs, graphId ?? null]);
    return rows[0] ? toClaim(rows[0]) : undefined;
  });
}
