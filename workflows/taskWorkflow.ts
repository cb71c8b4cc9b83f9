import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setHandler,
  sleep,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { TaskActivities } from '../activities/tasks.js';
import { dependenciesReleasedSignal, type TaskWorkflowInput, type TaskWorkflowResult } from './definitions.js';

/** How long the workflow first waits before looking again at a task it cannot act on. */
const POLL_DELAY_MIN_MS = 1_000;
/** The longest wait between looks, so a long wait costs few history events. */
const POLL_DELAY_MAX_MS = 30_000;
/** Errors that retrying cannot fix: the workflow fails instead of retrying forever. */
const DOMAIN_ERRORS = ['IllegalTransitionError', 'InvalidInputError', 'NotFoundError', 'AppendOnlyError'];
/** An agent job may take hours; silence, not duration, is what ends a claim. */
const RUN_START_TO_CLOSE = '24 hours';

// Single database calls: a short timeout, so one stuck on a frozen worker is retried elsewhere soon.
const store = proxyActivities<TaskActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500 ms', maximumInterval: '10 seconds', nonRetryableErrorTypes: DOMAIN_ERRORS },
});

const verifier = proxyActivities<TaskActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', nonRetryableErrorTypes: DOMAIN_ERRORS },
});

function isSilence(error: unknown): error is ActivityFailure {
  return error instanceof ActivityFailure && error.cause instanceof TimeoutFailure;
}

function failureType(error: unknown): string | undefined {
  return error instanceof ActivityFailure && error.cause instanceof ApplicationFailure ? error.cause.type ?? undefined : undefined;
}

/**
 * One task's lifecycle (T9): wait for dependencies, claim, run on the claimant's own queue with a
 * heartbeat timeout, submit (inside the run, fenced), verify as someone else, and so release
 * dependents. A silent owner is recovered and the task claimed again with a bumped claim version.
 */
export async function taskWorkflow(input: TaskWorkflowInput): Promise<TaskWorkflowResult> {
  const { taskId } = input;
  let released = input.dependsOn.length === 0;
  setHandler(dependenciesReleasedSignal, () => {
    released = true;
  });
  await condition(() => released);
  try {
    return await lifecycle(input);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Cancelled (by an operator or the graph): the task must not stay claimed by nobody.
    await CancellationScope.nonCancellable(() =>
      store.cancelTask({ taskId, reason: `workflow ${workflowInfo().workflowId} was cancelled` }),
    );
    throw error;
  }
}

async function lifecycle(input: TaskWorkflowInput): Promise<TaskWorkflowResult> {
  const { taskId, policy } = input;
  let delayMs = POLL_DELAY_MIN_MS;
  const wait = async () => {
    await sleep(delayMs);
    delayMs = Math.min(delayMs * 2, POLL_DELAY_MAX_MS);
  };
  for (;;) {
    if (workflowInfo().continueAsNewSuggested) {
      // Keep the history short on long waits; the task's state lives in Postgres anyway.
      await continueAsNew<typeof taskWorkflow>({ ...input, dependsOn: [] });
    }
    const task = await store.readTask({ taskId });
    if (task.status !== 'blocked' && task.status !== 'running') delayMs = POLL_DELAY_MIN_MS;
    switch (task.status) {
      case 'verified':
      case 'failed':
      case 'cancelled':
        return { taskId, status: task.status, attempts: task.attempts };
      case 'ready':
        if (task.attempts >= policy.maxAttempts) {
          await store.failExhaustedTask({ taskId, reason: `all ${policy.maxAttempts} attempts used` });
        } else {
          await claimAndRun(taskId, input.policy);
        }
        break;
      case 'stale':
        await store.rerunTask({ taskId, reason: 'an upstream task was verified at a new revision', kind: 'rerun_after_stale' });
        break;
      case 'submitted':
      case 'verifying': { // verifying: a verifier was lost before recording its result
        const outcome = await verifier.verifyTask({ taskId });
        if (outcome.status === 'verified') return { taskId, status: 'verified', revision: outcome.revision, attempts: task.attempts };
        await store.afterRejection({ taskId, policy });
        break;
      }
      case 'rejected':
        await store.afterRejection({ taskId, policy });
        break;
      case 'running':
        // A claim this execution is not running, e.g. one whose claim activity committed but
        // whose result was lost: nobody heartbeats it, so its lease runs out and it is recovered.
        if (task.leaseExpired) {
          await store.recoverTask({
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
  }
}

/** Claims the task and runs it on the claimant's own queue; recovers the claim if its owner goes silent. */
async function claimAndRun(taskId: string, policy: TaskWorkflowInput['policy']): Promise<void> {
  const claim = await store.claimTask({ taskId, leaseMs: policy.heartbeatTimeoutMs });
  if (!claim) {
    await sleep(POLL_DELAY_MIN_MS);
    return;
  }
  const owner = proxyActivities<TaskActivities>({
    taskQueue: claim.ownerTaskQueue,
    heartbeatTimeout: policy.heartbeatTimeoutMs,
    // A claimant that dies before its run starts leaves the activity in its own queue.
    scheduleToStartTimeout: policy.heartbeatTimeoutMs,
    startToCloseTimeout: RUN_START_TO_CLOSE,
    retry: { maximumAttempts: 1 },
  });
  try {
    await owner.runTask({ taskId, claimVersion: claim.claimVersion, heartbeatTimeoutMs: policy.heartbeatTimeoutMs, maxAttempts: policy.maxAttempts });
  } catch (error) {
    if (isSilence(error)) {
      const timeout = (error.cause as TimeoutFailure).timeoutType?.toLowerCase().replaceAll('_', '-') ?? 'heartbeat';
      await store.recoverTask({
        taskId,
        claimVersion: claim.claimVersion,
        reason: `owner silent: Temporal ${timeout} timeout (${policy.heartbeatTimeoutMs} ms) on claim version ${claim.claimVersion}`,
      });
      return;
    }
    const type = failureType(error);
    // The failure is already recorded in Postgres by the owner's fenced write (or its refusal).
    if (type === 'AgentFailed' || type === 'StaleClaim') return;
    // Anything else (the database or the worktree failed under the run): give the claim back
    // and let the attempt count decide whether the task runs again.
    await store.recoverTask({
      taskId,
      claimVersion: claim.claimVersion,
      reason: `run failed before submitting: ${error instanceof ActivityFailure ? (error.cause?.message ?? error.message) : String(error)}`,
      kind: 'released',
    });
  }
}
