import type { Queryable } from '../../src/db/queryable.js';
import { taskClaim, taskClaimNext } from '../../src/db/sql/claims.js';
import { taskSubmit } from '../../src/db/sql/ownerWrites.js';
import { taskRead } from '../../src/db/sql/reads.js';
import { approvalRequest, verificationRecord, verificationStart } from '../../src/db/sql/verification.js';
import type { TaskRow } from '../../src/tasks/types.js';
import { taskIdOf } from '../../src/tasks/taskId.js';
import { independentTasks, insertGraph } from '../../src/testkit/graphs.js';

export const LEASE_MS = 60_000;

export const artifact = (revision: string) => ({ revision, testCommand: 'check', agentResult: { exitCode: 0, outputDigest: 'sha256:x' } });

type Stage = 'ready' | 'running' | 'submitted' | 'verifying' | 'verified' | 'rejected';

/**
 * A task of its own graph, driven through the real store functions to `status` (and, for
 * `running`, owned by `owner`). Only the overrides matter to the caller; the rest is defaulted.
 */
export async function insertTask(db: Queryable, overrides: { status?: Stage; owner?: string } = {}): Promise<TaskRow> {
  const graphId = await insertGraph(db, { t: [] });
  const taskId = taskIdOf(graphId, 't');
  const status = overrides.status ?? 'ready';
  const owner = overrides.owner ?? 'agent';
  const order: Stage[] = ['ready', 'running', 'submitted', 'verifying'];
  const reach = (s: Stage) => order.indexOf(status) >= order.indexOf(s) || status === 'verified' || status === 'rejected';
  if (reach('running')) {
    const claim = (await taskClaim(db, taskId, owner, LEASE_MS))!;
    if (reach('submitted')) await taskSubmit(db, { taskId, owner, claimVersion: claim.claimVersion }, artifact('rev-1'));
    if (reach('verifying')) await verificationStart(db, taskId, 'verifier');
    if (status === 'verified' || status === 'rejected') {
      await verificationRecord(db, {
        taskId,
        verifier: 'verifier',
        claimVersion: claim.claimVersion,
        revision: 'rev-1',
        command: 'check',
        exitCode: status === 'verified' ? 0 : 1,
        outputDigest: 'sha256:x',
        outputTail: '',
      });
    }
  }
  return taskRead(db, taskId);
}

/** `count` tasks of a graph of their own, claimed one by one through the store path (`task_claim_next`) by `owner`: their ids. */
export async function storeClaims(db: Queryable, count: number, owner: string, leaseMs: number): Promise<string[]> {
  const graphId = await insertGraph(db, independentTasks(count));
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await taskClaimNext(db, owner, leaseMs, graphId))!.taskId);
  return ids;
}

/**
 * Claims and submits the ready task `taskId` at `revision` (as `agent`), and starts its verification
 * (as `verifier`), through the store's own functions: the passed check, ready to be recorded.
 */
async function passedCheck(db: Queryable, taskId: string, revision: string) {
  const claim = (await taskClaim(db, taskId, 'agent', LEASE_MS))!;
  await taskSubmit(db, { taskId, owner: 'agent', claimVersion: claim.claimVersion }, artifact(revision));
  await verificationStart(db, taskId, 'verifier');
  return {
    taskId,
    verifier: 'verifier',
    claimVersion: claim.claimVersion,
    revision,
    command: 'check',
    outputDigest: 'sha256:x',
    outputTail: '',
  };
}

/** U11: brings the ready task `taskId` to a passed check at `revision`: it awaits a person's approval (its verify must name one). */
export async function awaitApproval(db: Queryable, taskId: string, revision: string) {
  return approvalRequest(db, await passedCheck(db, taskId, revision));
}

/** Claims, submits and passes the ready task `taskId` at `revision`, through the store's own functions. */
export async function verifyTask(db: Queryable, taskId: string, revision: string): Promise<void> {
  await verificationRecord(db, { ...(await passedCheck(db, taskId, revision)), exitCode: 0 });
}

/** One task in each situation a claim must tell apart. */
export async function makeSelectionOfTasks(db: Queryable) {
  const claimable = await insertTask(db, { status: 'ready' });
  const leased = await insertTask(db, { status: 'running', owner: 'someone' });
  // Test-only: age the lease on the database clock (status and claim version stay as they are).
  const expired = await insertTask(db, { status: 'running', owner: 'silent' });
  await db.query("UPDATE baton.tasks SET lease_expires_at = now() - interval '1 minute' WHERE id = $1", [expired.id]);
  const finished = await insertTask(db, { status: 'verified' });
  return { claimable, leased, expired: await taskRead(db, expired.id), finished };
}

/** The columns a transition must leave alone on tasks it does not touch. */
export const snapshot = async (db: Queryable, ids: string[]) =>
  Promise.all(
    ids.map(async (id) => {
      const t = await taskRead(db, id);
      return { id, status: t.status, owner: t.owner, claimVersion: t.claimVersion, leaseExpiresAt: t.leaseExpiresAt, artifact: t.artifact };
    }),
  );
