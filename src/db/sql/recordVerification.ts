import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

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
export async function recordVerification(db: Queryable, v: VerificationRecord): Promise<VerificationOutcome> {
  const [row] = await callStore<{ status: 'verified' | 'rejected'; released: string[]; staled: string[] }>(db, 'record_verification', [
    v.taskId, v.verifier, v.claimVersion, v.revision, v.command, v.exitCode, v.outputDigest, v.outputTail,
  ]);
  return { status: row!.status, released: row!.released, staled: row!.staled };
}
