// Bindings of src/db/functions/owner_writes.sql: a task owner's fenced writes (SPEC T4), and the
// one way a fenced write returning `baton.fenced_result` is called.
import type { Artifact } from '../../tasks/types.js';
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
export async function fencedWrite(
  db: Queryable,
  fence: Fence,
  action: string,
  fn: string,
  args: readonly unknown[],
): Promise<{ leaseExpiresAt: string | null }> {
  const row = await callFenced<FencedResultRecord>(db, fence, action, fn, args, (r) => ({
    status: r.status,
    owner: r.owner,
    claimVersion: r.claim_version,
  }));
  return { leaseExpiresAt: row.lease_expires_at?.toISOString() ?? null };
}

/** T4: extends the owner's lease by `leaseMs` (database clock) and stores its progress. */
export function taskHeartbeat(db: Queryable, fence: Fence, leaseMs: number, progress?: Record<string, unknown>) {
  return fencedWrite(db, fence, 'heartbeat', 'task_heartbeat', [fence.taskId, fence.owner, fence.claimVersion, leaseMs, progress ?? null]);
}

/** T4, T7: the owner submits its artifact; refused (StaleClaimError) unless it still holds the claim. */
export function taskSubmit(db: Queryable, fence: Fence, artifact: Artifact) {
  return fencedWrite(db, fence, 'submit', 'task_submit', [fence.taskId, fence.owner, fence.claimVersion, artifact]);
}

/** T4: the owner reports that its agent failed; the task becomes ready again (`retry`) or failed. */
export function taskFailAttempt(db: Queryable, fence: Fence, reason: string, retry: boolean) {
  return fencedWrite(db, fence, 'fail', 'task_fail_attempt', [fence.taskId, fence.owner, fence.claimVersion, reason, retry]);
}

/**
 * Appends a note to a task's discussion. With a claim version the note is tied to the claim and
 * fenced like any owner write; without one it is free discussion and never a record of ownership.
 */
export function taskNoteAdd(db: Queryable, taskId: string, author: string, body: string, claimVersion?: number) {
  return fencedWrite(db, { taskId, owner: author, claimVersion: claimVersion ?? 0 }, 'note', 'task_note_add', [
    taskId,
    author,
    claimVersion ?? null,
    body,
  ]);
}
