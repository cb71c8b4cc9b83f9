import { mapDatabaseErrors } from '../../errors.js';
import type { Claim } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { toClaim, type ClaimRecord } from './claimRow.js';

/** T3: claims the named task if it is ready; undefined when it is not (never waits on a lock). */
export function claimTask(db: Queryable, taskId: string, owner: string, leaseMs: number): Promise<Claim | undefined> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query<ClaimRecord>('SELECT * FROM baton.claim_task($1, $2, $3)', [taskId, owner, leaseMs]);
    return rows[0] ? toClaim(rows[0]) : undefined;
  });
}
