// Bindings of src/db/functions/verification.sql: an independent verifier checks a submitted
// artifact (SPEC T7, T8).
import type { Approval, Artifact, TaskSpec } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore, callStoreValue } from '../storeCall.js';
import { graphSourceOf, type GraphSource } from './claims.js';

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

export interface VerificationOutcome {
  /**
   * `stale`: it passed, but on a pin its upstream task has since superseded; the task is not
   * verified. `awaiting_approval`: it passed, and a person decides next (U11). `failed`: an approval
   * wait ran out under the policy `fail`.
   */
  status: 'verified' | 'rejected' | 'stale' | 'awaiting_approval' | 'failed';
  /** Dependents that became ready, with this task's revision pinned. */
  released: string[];
  /**
   * Stale dependents whose dependencies are now all verified (those verified against an older
   * revision of this task are stale from now on): the `rerun` policy runs them again.
   */
  staled: string[];
}

/** What `verificationStart` hands the verifier: the task as it is now, and where its graph works (`source`). */
interface VerificationStart {
  /** `verifying`: this verifier took it. Any other: its verification was already decided, and nothing changed. */
  status: 'verifying' | 'verified' | 'rejected' | 'stale' | 'awaiting_approval';
  claimVersion: number;
  artifact: Artifact;
  spec: TaskSpec;
  graphId: string;
  key: string;
  /** The upstream revisions the run was pinned to, by upstream key. */
  upstreamRevisions: Record<string, string>;
  source: GraphSource;
}

/**
 * T7: a verifier (never the agent that produced it) takes a submitted artifact to check. A task
 * whose verification was already decided comes back as it is, with that status (a retry after the
 * outcome was recorded).
 */
export async function verificationStart(db: Queryable, taskId: string, verifier: string): Promise<VerificationStart> {
  const [row] = await callStore<{
    status: VerificationStart['status'];
    claim_version: number;
    artifact: Artifact;
    spec: TaskSpec;
    graph_id: string;
    key: string;
    upstream_revisions: Record<string, string>;
    repo: string | null;
    base: string;
  }>(db, 'verification_start', [taskId, verifier]);
  return {
    status: row!.status,
    claimVersion: row!.claim_version,
    artifact: row!.artifact,
    spec: row!.spec,
    graphId: row!.graph_id,
    key: row!.key,
    upstreamRevisions: row!.upstream_revisions,
    source: graphSourceOf(row!),
  };
}

/**
 * T7, T8: records the verification; on a pass, verifies the task and releases its dependents,
 * atomically, unless one of its pins was superseded meanwhile: then the task is stale instead.
 */
export async function verificationRecord(db: Queryable, v: VerificationRecord): Promise<VerificationOutcome> {
  return outcomeOf(
    await callStore<VerificationOutcome>(db, 'verification_record', [
      v.taskId,
      v.verifier,
      v.claimVersion,
      v.revision,
      v.command,
      v.exitCode,
      v.outputDigest,
      v.outputTail,
    ]),
  );
}

const outcomeOf = ([row]: VerificationOutcome[]): VerificationOutcome => ({
  status: row!.status,
  released: row!.released,
  staled: row!.staled,
});

/**
 * U11: the check of an artifact whose verify names an approval passed (`command` absent: only the
 * artifact check ran): the task awaits a person's decision, or is stale at once when a pin was superseded.
 */
export async function approvalRequest(
  db: Queryable,
  v: Omit<VerificationRecord, 'command' | 'exitCode'> & { command?: string },
): Promise<VerificationOutcome> {
  return outcomeOf(
    await callStore<VerificationOutcome>(db, 'approval_request', [
      v.taskId,
      v.verifier,
      v.claimVersion,
      v.revision,
      v.command ?? null,
      v.outputDigest,
      v.outputTail,
    ]),
  );
}

/** What decides an approval: a person (`approved`, `rejected`), or the wait running out (`timed_out`). */
type ApprovalDecision = 'approved' | 'rejected' | 'timed_out';

/**
 * U11: decides the open approval of a task as `actor` (never its agent or owner), recorded as its
 * verification: released dependents, or a rejection (or, for a wait run out under `fail`, a failure).
 */
export async function approvalDecide(
  db: Queryable,
  d: { taskId: string; actor: string; decision: ApprovalDecision; reason?: string },
): Promise<VerificationOutcome> {
  return outcomeOf(await callStore<VerificationOutcome>(db, 'approval_decide', [d.taskId, d.actor, d.decision, d.reason ?? null]));
}

/** U11: ms until the open approval of a task is due (0 or less: due); undefined without a limit or an open approval. */
export async function approvalDueInMs(db: Queryable, taskId: string): Promise<number | undefined> {
  const due = await callStoreValue<string | null>(db, 'approval_due_in_ms', [taskId]);
  return due === null ? undefined : Number(due);
}

/** U11: the approvals waiting for a decision, oldest first, as `approvals.list` shows them. */
export async function approvalList(db: Queryable): Promise<Approval[]> {
  return callStoreValue<Approval[]>(db, 'approval_list', []);
}
