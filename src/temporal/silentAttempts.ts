// A frozen worker (alive, not answering: SIGSTOP, a hung host, a VM paused) keeps the activity
// polls it opened before it froze, and Temporal hands them the run's retries: each such attempt
// counts as started and then waits out a whole heartbeat timeout, so the frozen owner of a task
// went on holding it for several timeouts (issue 25 measured 2 to 14). Every worker therefore
// watches the tasks whose claim lease ran out on the database clock (claims a run took: the store
// path's have no run attempt) and fails, through Temporal, a run attempt of such a task that has
// not heartbeated since it started: at once when it went to the silent owner itself, after a grace
// otherwise, never when it went to the watching worker itself (which answers, since it watches).
// Temporal retries it at once (the failure names its own delay, not the run's retry interval), and
// the attempt that lands on a live worker recovers the silent claim as before (docs/tasks.md,
// Recovery). Nothing here writes to Postgres: the fence stays the only guard, so a live attempt
// failed by mistake costs a retry, never a write.
import { msToTs, tsToMs } from '@temporalio/common/lib/time.js';
import type { NativeConnection } from '@temporalio/worker';
import { claimsSilent, type SilentClaim } from '../db/sql/claims.js';
import type { Queryable } from '../db/queryable.js';
import { taskRead } from '../db/sql/reads.js';
import { everyInterval, type Repeating } from '../everyInterval.js';
import type { Log } from '../log.js';
import { RETRY_AT_ONCE_MS } from './retryAtOnce.js';
import { taskWorkflowId } from '../tasks/taskId.js';

/** How often a worker looks for silent claims. */
const SILENT_ATTEMPT_WATCH_INTERVAL_MS = 250;
/**
 * Claims looked at per round, the latest silences first: each costs every worker a describe call
 * four times a second while it lasts, so a worker frozen with many claims is worked through in turn.
 */
const SILENT_CLAIMS_PER_ROUND = 20;
/** How long one call to Temporal may take: a call that never answers must not stop the watch for good. */
const CALL_DEADLINE_MS = 5_000;
/**
 * How far back a silence is watched. A frozen worker's open polls are handed attempts only until
 * the server ends them (its long poll, about a minute); the bench saw them swallow attempts for
 * 20 s. Older claims are the workflow's to recover (docs/tasks.md).
 */
const SILENT_CLAIM_WINDOW_MS = 180_000;
/** The run's activity type, under baton's name and under 0.1's. */
const RUN_ACTIVITY_TYPES = new Set(['batonRunTask', 'runTask']);
/** Temporal's PendingActivityState.STARTED. */
const STARTED = 2;
/** gRPC's NOT_FOUND: Temporal knows no workflow of that id. */
const GRPC_NOT_FOUND = 5;
/** The failure type Temporal records for an attempt failed here (retryable). */
export const SILENT_ATTEMPT_FAILURE = 'SilentWorkerAttempt';

type PendingActivity = NonNullable<
  Awaited<ReturnType<NativeConnection['workflowService']['describeWorkflowExecution']>>['pendingActivities']
>[number];

interface SilentAttemptWatchOptions {
  db: Queryable;
  connection: NativeConnection;
  namespace: string;
  /** This worker's identity, recorded as who failed the attempt. */
  identity: string;
  log: Log;
}

/** A call to Temporal's workflow service on the watch's connection, cut off after CALL_DEADLINE_MS. */
function callTemporal<T>(
  options: SilentAttemptWatchOptions,
  call: (service: NativeConnection['workflowService']) => Promise<T>,
): Promise<T> {
  const { connection } = options;
  return connection.withDeadline(Date.now() + CALL_DEADLINE_MS, () => call(connection.workflowService));
}

/**
 * How long an attempt that went to a worker other than the silent owner may stay without a
 * heartbeat before it is failed: a live worker heartbeats within milliseconds of its start (before
 * its claim, even), so a quarter of the heartbeat timeout is far more than it needs.
 */
function graceMs(claim: SilentClaim): number {
  return Math.max(500, Math.floor(claim.leaseMs / 4));
}

/** Starts the watch; `stop` ends it after the round in flight. */
export function watchSilentAttempts(options: SilentAttemptWatchOptions): Repeating {
  // Attempts seen without a heartbeat, by task and attempt, with when this worker first saw them
  // (its own monotonic clock: the server's and the database's may differ from it).
  const firstSeen = new Map<string, number>();
  return everyInterval('silent-attempt watch', SILENT_ATTEMPT_WATCH_INTERVAL_MS, () => watchRound(options, firstSeen), options.log);
}

async function watchRound(options: SilentAttemptWatchOptions, firstSeen: Map<string, number>): Promise<void> {
  const claims = await claimsSilent(options.db, SILENT_CLAIMS_PER_ROUND, SILENT_CLAIM_WINDOW_MS);
  const live = new Set<string>();
  for (const claim of claims) {
    try {
      const attempt = await pendingRun(options, claim.taskId);
      // An attempt on this worker is on a worker that answers: it is running this watch. (A claim
      // left silent by its agent, say a pooled agent gone quiet, is retried on the same worker.)
      if (!attempt || attempt.lastWorkerIdentity === options.identity) continue;
      const key = `${claim.taskId}#${attempt.attempt}`;
      live.add(key);
      const now = performance.now();
      const seen = firstSeen.get(key) ?? now;
      firstSeen.set(key, seen);
      const toSilentOwner = attempt.lastWorkerIdentity === claim.owner;
      if (!toSilentOwner && now - seen < graceMs(claim)) continue;
      // The claim as it is now: a retry that recovered it since the round began is at work.
      if (!(await stillSilent(options.db, claim))) continue;
      // Temporal fails whichever attempt is current when the call lands, not the one described: so
      // the attempt is looked at again last, and left alone if another has started since (or it
      // heartbeated). What remains is the call's own flight time. Rare, so said.
      const current = (await pendingRun(options, claim.taskId))?.attempt;
      if (current !== attempt.attempt) {
        options.log(
          `silent-attempt watch: task ${claim.taskId}: run attempt ${attempt.attempt} left alone: ` +
            (current === undefined ? 'it heartbeated or ended' : `attempt ${current} started`) +
            ' while the watch looked at it',
        );
        continue;
      }
      await failAttempt(options, claim, attempt, toSilentOwner);
      firstSeen.delete(key);
    } catch (error) {
      // Another worker failed the attempt first, or the run ended meanwhile: the next round looks again.
      options.log(`silent-attempt watch: task ${claim.taskId}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  for (const key of firstSeen.keys()) if (!live.has(key)) firstSeen.delete(key);
}

/** Whether `claim` is still held as the round read it, past its lease. */
async function stillSilent(db: Queryable, claim: SilentClaim): Promise<boolean> {
  const task = await taskRead(db, claim.taskId);
  return task.status === 'running' && task.owner === claim.owner && task.claimVersion === claim.claimVersion && task.leaseExpired;
}

/** The task's run attempt if it started and has not heartbeated since; undefined otherwise. */
async function pendingRun(options: SilentAttemptWatchOptions, taskId: string): Promise<PendingActivity | undefined> {
  const description = await callTemporal(options, (service) =>
    service.describeWorkflowExecution({ namespace: options.namespace, execution: { workflowId: taskWorkflowId(taskId) } }),
  ).catch((error: unknown) => {
    // A task run outside baton's workflow: nothing to do. Anything else (a missed deadline, a
    // server that does not answer) is the round's to log: a watch that cannot see must say so.
    if ((error as { code?: unknown } | undefined)?.code === GRPC_NOT_FOUND) return undefined;
    throw error;
  });
  const run = description?.pendingActivities?.find((a) => RUN_ACTIVITY_TYPES.has(a.activityType?.name ?? ''));
  if (!run || run.state !== STARTED || !run.lastStartedTime) return undefined;
  const started = tsToMs(run.lastStartedTime);
  if (run.lastHeartbeatTime && tsToMs(run.lastHeartbeatTime) >= started) return undefined;
  return run;
}

async function failAttempt(
  options: SilentAttemptWatchOptions,
  claim: SilentClaim,
  attempt: PendingActivity,
  toSilentOwner: boolean,
): Promise<void> {
  const worker = attempt.lastWorkerIdentity;
  const message =
    `run attempt ${attempt.attempt} went to ${worker}, which has not heartbeated since it started` +
    (toSilentOwner
      ? `, and whose claim (version ${claim.claimVersion}) it still holds has not been heartbeated for its ${claim.leaseMs} ms lease`
      : `, while claim version ${claim.claimVersion} of ${claim.owner} is past its lease`) +
    ': failed so that Temporal hands the next attempt to a worker that answers';
  await callTemporal(options, (service) =>
    service.respondActivityTaskFailedById({
      namespace: options.namespace,
      workflowId: taskWorkflowId(claim.taskId),
      activityId: attempt.activityId,
      identity: options.identity,
      failure: {
        message,
        source: 'baton',
        applicationFailureInfo: { type: SILENT_ATTEMPT_FAILURE, nonRetryable: false, nextRetryDelay: msToTs(RETRY_AT_ONCE_MS) },
      },
      // The claim version the next attempt must recover travels in these (docs/tasks.md, Recovery).
      lastHeartbeatDetails: attempt.heartbeatDetails,
    }),
  );
  options.log(`silent-attempt watch: task ${claim.taskId}: ${message}`);
}
