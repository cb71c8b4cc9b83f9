import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  makeContinueAsNewFunc,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { TASK_STATUS_ATTRIBUTE } from '../src/temporal/searchAttributes.js';
import type { TaskActivities, TaskView, VerifyOutcome } from '../activities/tasks.js';
import { recheckTaskSignal, recheckTaskSignalUnprefixed, RUN_RETRY_INTERVAL_MS, type TaskWorkflowResult } from './definitions.js';
import { TASK_WORKFLOW_PATCH_LEVEL, type TaskWorkflowInput } from '../src/temporal/taskWorkflowContract.js';
import { CLAIM_BACKOFF_PATCH, hasPatch } from './patches.js';
import { batonName, proxyBatonActivities } from './prefixedNames.js';
import { wakeAfterVerification } from './wakeTask.js';

/** How long the workflow first waits before looking again at a task it cannot act on. */
const POLL_DELAY_MIN_MS = 1_000;
/** The longest wait between looks, so a long wait costs few history events. */
const POLL_DELAY_MAX_MS = 30_000;
/**
 * Failures that end a run without the run being at fault: the agent failed (its attempt is already
 * recorded) or the claim moved on. Whether any failure is retried is the activity's to say
 * (activities/failures.ts); 0.1 named these two 'AgentFailed' and 'StaleClaim', and histories
 * recorded then still replay with those names.
 */
const RUN_ENDED_BY = new Set(['AgentFailedError', 'StaleClaimError', 'AgentFailed', 'StaleClaim']);
/** An agent job may take hours; silence, not duration, is what ends a claim. */
const RUN_START_TO_CLOSE = '24 hours';
/** The longest wait between looks at a task awaiting a person's approval; a decision signals the workflow anyway. */
const APPROVAL_POLL_MAX_MS = 5 * 60_000;
/** The longest wait before trying again a claim that was refused (a concurrency limit was full, U11). */
const CLAIM_RETRY_MAX_MS = 10_000;

/** Set by recheckTaskSignal: the task changed since the workflow last read it. */
interface Recheck {
  pending: boolean;
}

/** The lifecycle's activities, under the names its patch level (or its history) says. */
function lifecycleActivities(patchLevel: number | undefined) {
  return {
    // Single database calls: a short timeout, so one stuck on a frozen worker is retried elsewhere soon.
    store: proxyBatonActivities<TaskActivities>(
      { startToCloseTimeout: '10 seconds', retry: { initialInterval: '500 ms', maximumInterval: '10 seconds' } },
      patchLevel,
    ),
    verifier: proxyBatonActivities<TaskActivities>(
      {
        startToCloseTimeout: '2 hours',
        heartbeatTimeout: '30 seconds',
        retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
      },
      patchLevel,
    ),
  };
}

function failureType(error: unknown): string | undefined {
  return error instanceof ActivityFailure && error.cause instanceof ApplicationFailure ? (error.cause.type ?? undefined) : undefined;
}

/**
 * One task's lifecycle (T9): wait for dependencies, claim and run in one activity with a heartbeat
 * timeout, submit (inside the run, fenced), verify as someone else, and so release dependents. A
 * silent owner is recovered by the run's retry and the task claimed again with a bumped claim version.
 * A stale task is run again by the graph's policy (T8), and a verification wakes the workflows of the
 * dependents it left stale and (outside a graph's workflow) of those it released.
 */
export async function batonTaskWorkflow(input: TaskWorkflowInput): Promise<TaskWorkflowResult> {
  const { taskId } = input;
  const recheck: Recheck = { pending: false };
  const onRecheck = () => {
    recheck.pending = true;
  };
  setHandler(recheckTaskSignal, onRecheck);
  // Sent under 0.1's name by executions started by 0.1, to a workflow that may now run on this code.
  setHandler(recheckTaskSignalUnprefixed, onRecheck);
  const activities = lifecycleActivities(input.patchLevel);
  const { store } = activities;
  try {
    return await lifecycle(input, recheck, activities);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Cancelled (by an operator or the graph): the task must not stay claimed by nobody.
    await CancellationScope.nonCancellable(() =>
      store.batonCancelTask({ taskId, reason: `workflow ${workflowInfo().workflowId} was cancelled` }),
    );
    throw error;
  }
}

async function lifecycle(
  input: TaskWorkflowInput,
  recheck: Recheck,
  { store, verifier }: ReturnType<typeof lifecycleActivities>,
): Promise<TaskWorkflowResult> {
  const { taskId, policy } = input;
  let delayMs = POLL_DELAY_MIN_MS;
  const wait = async () => {
    // A recheck (an upstream task was verified) ends the wait early.
    await condition(() => recheck.pending, delayMs);
    delayMs = Math.min(delayMs * 2, POLL_DELAY_MAX_MS);
  };
  // What the last activity told us about the task; read again when it told us nothing.
  let known: TaskView | null = null;
  // The dependents this lifecycle's verifications released (verification_record's word), for whoever awaits its result.
  const released = [...(input.released ?? [])];
  // SPEC U6: the task's status, searchable in Temporal when the namespace has baton's attributes
  // (its graph and key came with its start). Not the moments between a run and its verification
  // (submitted, verifying): each change is a command and a visibility write.
  let shownStatus = input.shownStatus;
  const showStatus = (status: string) => {
    if (!input.searchAttributes || status === shownStatus || status === 'submitted' || status === 'verifying') return;
    upsertSearchAttributes([{ key: TASK_STATUS_ATTRIBUTE, value: status }]);
    shownStatus = status;
  };
  // U11: the task waited for a person's approval, so its verification is recorded by the decision, not here.
  let awaitedApproval = input.awaitedApproval ?? false;
  /** What follows a recorded verification (or approval): the dependents it concerns, then its result if it ended the lifecycle. */
  const settle = async (outcome: VerifyOutcome, attempts: number): Promise<TaskWorkflowResult | undefined> => {
    awaitedApproval = outcome.status === 'awaiting_approval';
    released.push(...outcome.released);
    await wakeAfterVerification(input, outcome);
    // stale: it passed on a superseded pin; the next look applies the policy.
    showStatus(outcome.status);
    if (outcome.status === 'verified') return { taskId, status: 'verified', revision: outcome.revision, attempts, released };
    if (outcome.status === 'rejected') await store.batonAfterRejection({ taskId, policy });
    return undefined;
  };
  // A claim refused (the task moved on, or a concurrency limit is full) is tried again after a
  // pause that grows, so tasks waiting behind a limit do not ask every second.
  let claimPauseMs = POLL_DELAY_MIN_MS;
  const pauseAfterRefusal = async () => {
    if (!hasPatch(CLAIM_BACKOFF_PATCH, input.patchLevel)) return sleep(POLL_DELAY_MIN_MS);
    await condition(() => recheck.pending, claimPauseMs);
    claimPauseMs = Math.min(claimPauseMs * 2, CLAIM_RETRY_MAX_MS);
  };
  const claim = async () => {
    const view = await claimAndRun(input, pauseAfterRefusal);
    if (view) claimPauseMs = POLL_DELAY_MIN_MS;
    return view;
  };
  if (input.ready) {
    showStatus('ready');
    known = await claim();
  }
  for (;;) {
    if (workflowInfo().continueAsNewSuggested) {
      // Keep the history short on long waits; the task's state lives in Postgres anyway.
      // Under the prefixed type, so an execution started under 0.1's type leaves it here.
      // The next run has a history of its own: it takes every patch this code has, and shows its status afresh.
      const next: TaskWorkflowInput = {
        ...input,
        ready: false,
        released,
        ...(awaitedApproval && { awaitedApproval }),
        patchLevel: TASK_WORKFLOW_PATCH_LEVEL,
        shownStatus: undefined,
      };
      await makeContinueAsNewFunc<typeof batonTaskWorkflow>({ workflowType: batonName('batonTaskWorkflow', input.patchLevel) })(next);
    }
    if (!known) recheck.pending = false; // this read sees every change signalled so far
    const task = known ?? (await store.batonReadTask({ taskId }));
    known = null;
    showStatus(task.status);
    if (task.status !== 'blocked' && task.status !== 'running') delayMs = POLL_DELAY_MIN_MS;
    let result: TaskWorkflowResult | undefined;
    switch (task.status) {
      case 'verified':
        // Approved while this workflow waited: the decision released the dependents; the outcome names them.
        if (awaitedApproval) {
          result = await settle(await verifier.batonVerifyTask({ taskId }), task.attempts);
        } else {
          result = { taskId, status: task.status, attempts: task.attempts, released };
        }
        break;
      case 'failed':
      case 'cancelled':
        result = { taskId, status: task.status, attempts: task.attempts };
        break;
      case 'ready':
        if (task.attempts >= policy.maxAttempts) {
          await store.batonFailExhaustedTask({ taskId, reason: `all ${policy.maxAttempts} attempts used` });
        } else {
          known = await claim();
        }
        break;
      case 'stale': {
        // T8: the store applies the graph's onUpstreamChange policy. Still stale (policy `mark`, or an
        // upstream task not verified yet): this workflow ends; the verification that completes its
        // upstream tasks wakes it again. (Histories of 0.1, whose activity returned nothing, look again.)
        const now = await store.batonRerunTask({ taskId, reason: 'an upstream task moved: run again on its current revisions' });
        if (now === 'stale') result = { taskId, status: 'stale', attempts: task.attempts };
        break;
      }
      case 'submitted':
      case 'verifying': {
        // verifying: a verifier was lost before recording its result
        result = await settle(await verifier.batonVerifyTask({ taskId }), task.attempts);
        break;
      }
      case 'awaiting_approval': {
        // U11: a person decides (their decision signals this workflow), or the wait runs out.
        awaitedApproval = true;
        const dueInMs = task.approvalDueInMs;
        if (dueInMs !== undefined && dueInMs <= 0) {
          const outcome = await store.batonApprovalTimedOut({ taskId });
          if (outcome) result = await settle(outcome, task.attempts);
        } else {
          await condition(() => recheck.pending, Math.min(dueInMs ?? APPROVAL_POLL_MAX_MS, APPROVAL_POLL_MAX_MS));
        }
        break;
      }
      case 'rejected':
        await store.batonAfterRejection({ taskId, policy });
        break;
      case 'running':
        // A claim this execution is not running (e.g. the workflow was reset, or a run's retries
        // were cut short): nobody heartbeats it, so its lease runs out and it is recovered.
        if (task.leaseExpired) {
          await store.batonRecoverTask({
            taskId,
            claimVersion: task.claimVersion,
            reason: `lease expired on the database clock: no heartbeat for claim version ${task.claimVersion}`,
          });
        } else {
          await wait();
        }
        break;
      default:
        // blocked: an upstream task is being re-run; look again later.
        await wait();
    }
    // Told to look again since the last read (say, made stale just after it was verified): look before ending.
    if (result && !recheck.pending) return result;
  }
}

/**
 * Claims the task and runs it in one activity. A silent owner (worker killed or frozen) misses its
 * heartbeat timeout and Temporal retries the activity on another worker, which recovers the old
 * claim and claims again. Returns the task as the run left it, or null when the workflow must look.
 */
async function claimAndRun(input: TaskWorkflowInput, pauseAfterRefusal: () => Promise<void>): Promise<TaskView | null> {
  const { taskId, policy } = input;
  const run = proxyBatonActivities<TaskActivities>(
    {
      heartbeatTimeout: policy.heartbeatTimeoutMs,
      startToCloseTimeout: RUN_START_TO_CLOSE,
      // Gentle growth: a frozen worker's open polls can each swallow an attempt (each then costs a
      // heartbeat timeout), so intervals stay short; a persistent error still backs off to 10 s.
      retry: { initialInterval: RUN_RETRY_INTERVAL_MS, backoffCoefficient: 1.2, maximumInterval: '10 seconds' },
    },
    input.patchLevel,
  );
  try {
    const view = await run.batonRunTask({ taskId, heartbeatTimeoutMs: policy.heartbeatTimeoutMs, maxAttempts: policy.maxAttempts });
    if (!view) await pauseAfterRefusal(); // not claimable now: look again after a pause
    return view;
  } catch (error) {
    // The failure is already recorded in Postgres by the owner's fenced write (or its refusal).
    const type = failureType(error);
    if (type !== undefined && RUN_ENDED_BY.has(type)) return null;
    throw error;
  }
}
