import { mapDatabaseErrors } from '../../errors.js';
import type { Queryable } from '../queryable.js';

export interface VerificationRecord {
  taskId: string;
  verifier: string;
  claimVersion: number;
  revision: string;
  command: string;
  exitCode: number;
  outputDigest: string;
  outputTail: string;
}

export interface VerificationOutcome {
  status: 'verified' | 'rejected';
  /** Dependents that became ready, with this task's revision pinned. */
  released: string[];
  /** Dependents verified against an older revision of this task, now stale. */
  staled: string[];
}

/** T7, T8: records the verification; on success, verifies the task and releases its dependents, atomically. */
export function recordVerification(db: Queryable, v: VerificationRecord): Promise<VerificationOutcome> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query<{ status: 'verified' | 'rejected'; released: string[]; staled: string[] }>(
      'SELECT * FROM baton.record_verification($1, $2, $3, $4, $5, $6, $7, $8)',
      [v.taskId, v.verifier, v.claimVersion, v.revision, v.command, v.exitCode, v.outputDigest, v.outputTail],
    );
    const row = rows[0]!;
    return { status: row.status, released: row.released, staled: row.staled };
  });
}
