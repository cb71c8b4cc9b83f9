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
// Recovery). A claim whose workflow Temporal does not know (say an operator terminated it) is
// passed over for a while and the watch looks past it, so a stream of them cannot fill its rounds.
// Nothing here writes to Postgres: the fence stays the only guard, so a live attempt failed by
// mistake costs a retry, never a write.
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
/**
 * How long a claim whose workflow Temporal does not know is passed over before it may be described
 * again (a resubmitted graph starts a missing workflow, whose first attempt may go to a frozen poll),
 * and then only in a round with room left after the claims not passed over.
 */
const NO_WORKFLOW_RECHECK_MS = 10_000;
/** The run's activity type, under baton's name and under 0.1's. */
const RUN_ACTIVITY_TYPES = new Set(['batonRunTask', 'runTask']);
/** Temporal's PendingActivityState.STARTED. */
const STARTED = 2;
/** gRPC's NOT_FOUND: Temporal knows no workflow of that id. */
const GRPC_NOT_FOUND = 5;
/** The failure type Temporal records for an attempt failed here (retryable). */
export const SILENT_ATTEMPT_FAILURE = 'SilentWorkerAttempt';

type Description = Awaited<ReturnType<NativeConnection['workflowService']['describeWorkflowExecution']>>;
type PendingActivity = NonNullable<Description['pendingActivities']>[number];

interface SilentAttemptWatchOptions {
  db: Queryable;
  connection: NativeConnection;
  namespace: string;
  /** This worker's identity, recorded as who failed the attempt. */
  identity: string;
  log: Log;
  /** How long a claim whose workflow Temporal does not know is passed over (default NO_WORKFLOW_RECHECK_MS). */
  noWorkflowRecheckMs?: number;
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

/** What the watch remembers from one round to the next; times are this worker's monotonic clock (the server's and the database's may differ from it). */
interface WatchMemory {
  /** Attempts seen without a heartbeat, by task and attempt, with when this worker first saw them. */
  firstSeen: Map<string, number>;
  /** Claims whose workflow Temporal did not know, by task: the claim version, and until when it is passed over. */
  noWorkflow: Map<string, { claimVersion: number; until: number }>;
}

/** Starts the watch; `stop` ends it after the round in flight. */
export function watchSilentAttempts(options: SilentAttemptWatchOptions): Repeating {
  const memory: WatchMemory = { firstSeen: new Map(), noWorkflow: new Map() };
  return everyInterval('silent-attempt watch', SILENT_ATTEMPT_WATCH_INTERVAL_MS, () => watchRound(options, memory), options.log);
}

/**
 * The latest silent claims, at most SILENT_CLAIMS_PER_ROUND of them: those not passed over first
 * (it reads as many more as it passes over, so however many there are, none hides a fresh
 * silence), then, in the room left, those passed over long enough to be described again.
 */
async function claimsToLookAt(options: SilentAttemptWatchOptions, noWorkflow: WatchMemory['noWorkflow']): Promise<SilentClaim[]> {
  const claims = await claimsSilent(options.db, SILENT_CLAIMS_PER_ROUND + noWorkflow.size, SILENT_CLAIM_WINDOW_MS);
  // A claim no longer among them was taken again or left the window: forgotten.
  const read = new Set(claims.map((claim) => claim.taskId));
  for (const taskId of noWorkflow.keys()) if (!read.has(taskId)) noWorkflow.delete(taskId);
  const now = performance.now();
  const fresh: SilentClaim[] = [];
  const due: SilentClaim[] = [];
  for (const claim of claims) {
    const passed = noWorkflow.get(claim.taskId);
    if (passed?.claimVersion !== claim.claimVersion) fresh.push(claim);
    else if (passed.until <= now) due.push(claim);
  }
  return [...fresh, ...due].slice(0, SILENT_CLAIMS_PER_ROUND);
}

async function watchRound(options: SilentAttemptWatchOptions, { firstSeen, noWorkflow }: WatchMemory): Promise<void> {
  const claims = await claimsToLookAt(options, noWorkflow);
  const live = new Set<string>();
  for (const claim of claims) {
    try {
      const description = await describeTask(options, claim.taskId);
      // A task run outside baton's workflow, or one whose workflow was terminated: nothing to fail.
      if (!description) {
        const recheckMs = options.noWorkflowRecheckMs ?? NO_WORKFLOW_RECHECK_MS;
        noWorkflow.set(claim.taskId, { claimVersion: claim.claimVersion, until: performance.now() + recheckMs });
        continue;
      }
      const attempt = silentRun(description);
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
      const again = await describeTask(options, claim.taskId);
      const current = again ? silentRun(again)?.attempt : undefined;
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

/** The task's workflow as Temporal describes it; undefined when Temporal knows no workflow of it. */
async function describeTask(options: SilentAttemptWatchOptions, taskId: string): Promise<Description | undefined> {
  return callTemporal(options, (service) =>
    service.describeWorkflowExecution({ namespace: options.namespace, execution: { workflowId: taskWorkflowId(taskId) } }),
  ).catch((error: unknown) => {
    // Not found: no workflow of that id. Anything else (a missed deadline, a server that does not
    // answer) is the round's to log: a watch that cannot see must say so.
    if ((error as { code?: unknown } | undefined)?.code === GRPC_NOT_FOUND) return undefined;
    throw error;
  });
}

/** The run attempt of `description` if it started and has not heartbeated since; undefined otherwise. */
function silentRun(description: Description): PendingActivity | undefined {
  const run = description.pendingActivities?.find((a) => RUN_ACTIVITY_TYPES.has(a.activityType?.name ?? ''));
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
