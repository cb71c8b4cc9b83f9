// Bindings of src/db/functions/verification.sql: an independent verifier checks a submitted
// artifact (SPEC T7, T8).
import type { Artifact, TaskSpec } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

interface VerificationRecord {
  taskId: string;
  verifier: string;
  claimVersion: number;
  revision: string;
  command: string;
  exitCode: number;
  outputDigest: string;
  outputTail: string;
}

interface VerificationOutcome {
  /** `stale`: it passed, but on a pin its upstream task has since superseded; the task is not verified. */
  status: 'verified' | 'rejected' | 'stale';
  /** Dependents that became ready, with this task's revision pinned. */
  released: string[];
  /**
   * Stale dependents whose dependencies are now all verified (those verified against an older
   * revision of this task are stale from now on): the `rerun` policy runs them again.
   */
  staled: string[];
}

/** T7: a verifier (never the agent that produced it) takes a submitted or stale artifact to check. */
export async function verificationStart(db: Queryable, taskId: string, verifier: string) {
  const [row] = await callStore<{ claim_version: number; artifact: Artifact; spec: TaskSpec }>(db, 'verification_start', [
    taskId,
    verifier,
  ]);
  return { claimVersion: row!.claim_version, artifact: row!.artifact, spec: row!.spec };
}

/**
 * T7, T8: records the verification; on a pass, verifies the task and releases its dependents,
 * atomically, unless one of its pins was superseded meanwhile: then the task is stale instead.
 */
export async function verificationRecord(db: Queryable, v: VerificationRecord): Promise<VerificationOutcome> {
  const [row] = await callStore<VerificationOutcome>(db, 'verification_record', [
    v.taskId,
    v.verifier,
    v.claimVersion,
    v.revision,
    v.command,
    v.exitCode,
    v.outputDigest,
    v.outputTail,
  ]);
  return { status: row!.status, released: row!.released, staled: row!.staled };
}
