import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { createBatonClient } from '../src/client.js';
import { selectEvents } from '../src/db/sql/selectEvents.js';
import { selectTask } from '../src/db/sql/selectTasks.js';
import { DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT } from '../src/drills/d2WorkerKill.js';
import { STICKY_QUEUE_TIMEOUT_MS_DEFAULT } from '../src/worker.js';
import { taskWorkflowId } from '../workflows/definitions.js';
import { sleep, type BenchContext } from './context.js';
import { round, spread } from './stats.js';
import { startBenchWorker, type BenchWorker } from './workerProcess.js';

/**
 * The workflow's retry interval: workflows/taskWorkflow.ts waits POLL_DELAY_MIN_MS (1 s, not
 * exported) before it looks again at a task it could not claim or act on.
 */
export const CLAIM_RETRY_DELAY_MS = 1_000;
/** The slow agent heartbeats every step, long enough to be killed mid-run. */
const SLOW_STEPS = 30;
const SLOW_STEP_MS = 100;
const TRIAL_DEADLINE_MS = 60_000;

/** Temporal's TimeoutType enum values, by number. */
const TIMEOUT_TYPES: Record<number, string> = { 1: 'start-to-close', 2: 'schedule-to-start', 3: 'schedule-to-close', 4: 'heartbeat' };

/** What stood between the kill and the next claim, read from the task workflow's history. */
export type RecoveryPath =
  | 'heartbeat timeout'
  | 'heartbeat timeout + sticky queue timeout'
  | 'workflow task timeout + schedule-to-start timeout'
  | 'claim result lost: claim start-to-close timeout + lease expiry'
  | 'other';

interface Trial {
  kill: 'after-claim' | 'mid-run';
  recovered: boolean;
  recoveryMs?: number;
  path?: RecoveryPath;
  /** Kill -> Temporal records the run activity's timeout. */
  activityTimeoutAtMs?: number;
  activityTimeoutType?: string;
  /** Workflow tasks that timed out after the kill: on the dead worker (start-to-close) or its sticky queue (schedule-to-start). */
  workflowTaskTimeouts?: Array<{ type: string; atMs: number; waitedMs: number }>;
  /** Last workflow task timeout or the activity timeout, whichever came later -> the next claim committed. */
  afterLastTimeoutMs?: number;
  /** The task workflow's events from just before the kill to the next claim, ms relative to the kill. */
  events?: string[];
  problem?: string;
}

/**
 * recovery: real worker processes run a heartbeating function agent; the claimant is SIGKILLed
 * (alternately right after its claim and mid-run). Measures the time from the kill to the task's
 * next claim (both on the database clock) against heartbeat timeout + retry interval.
 */
export async function runRecoveryBench(ctx: BenchContext, options: { trials: number; heartbeatTimeoutMs?: number }) {
  const { stack, log } = ctx;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT;
  const boundMs = heartbeatTimeoutMs + CLAIM_RETRY_DELAY_MS;
  const taskQueue = `${ctx.runId}-recovery`;
  const client = createBatonClient({ db: stack.pool, temporal: stack.temporal, taskQueue });
  let spawned = 0;
  const spawn = () =>
    startBenchWorker(
      { kind: 'baton', taskQueue, identity: `recovery-worker-${++spawned}`, workflowBundlePath: ctx.bundles.baton, slowSteps: SLOW_STEPS, slowStepMs: SLOW_STEP_MS },
      stack.workerEnv,
    );
  const workers: BenchWorker[] = await Promise.all([spawn(), spawn()]);
  const trials: Trial[] = [];
  try {
    // Trial -1 is a discarded warm-up: the first workflow tasks of a fresh worker load its bundle.
    for (let i = -1; i < options.trials; i++) {
      const kill: Trial['kill'] = i % 2 === 0 ? 'after-claim' : 'mid-run';
      const trial = await runTrial(ctx, client, workers, kill, heartbeatTimeoutMs);
      // The replacement starts after the measurement, so its start-up does not compete with recovery.
      const dead = workers.findIndex((w) => w.child.exitCode !== null || w.child.signalCode !== null);
      if (dead >= 0) workers.splice(dead, 1, await spawn());
      log(
        `  recovery ${i < 0 ? 'warm-up (discarded)' : `trial ${i + 1}/${options.trials}`} kill ${kill}: ` +
          (trial.recovered
            ? `next claim ${trial.recoveryMs!.toFixed(0)} ms after the kill via ${trial.path} (activity ${trial.activityTimeoutType} timeout at ${trial.activityTimeoutAtMs} ms` +
              `${trial.workflowTaskTimeouts?.map((t) => `, workflow task ${t.type} timeout at ${t.atMs} ms after ${t.waitedMs} ms`).join('') ?? ''}; claim ${trial.afterLastTimeoutMs} ms after the last)`
            : `LOST: ${trial.problem}`),
      );
      if (i >= 0) trials.push(trial);
    }
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
  }
  const recovered = trials.filter((t) => t.recovered);
  const paths = [...new Set(recovered.map((t) => t.path ?? 'other'))];
  return {
    heartbeatTimeoutMs,
    retryIntervalMs: CLAIM_RETRY_DELAY_MS,
    boundMs,
    stickyQueueTimeoutMs: STICKY_QUEUE_TIMEOUT_MS_DEFAULT,
    trials: trials.length,
    lost: trials.length - recovered.length,
    ratio: spread(recovered.map((t) => t.recoveryMs! / boundMs)),
    recoveryMs: spread(recovered.map((t) => t.recoveryMs!)),
    /** The ratio for each path the recoveries took. */
    byPath: paths.map((path) => {
      const these = recovered.filter((t) => (t.path ?? 'other') === path);
      return {
        path,
        trials: these.length,
        ratio: spread(these.map((t) => t.recoveryMs! / boundMs)),
        activityTimeoutAtMs: spread(these.map((t) => t.activityTimeoutAtMs ?? NaN)),
        workflowTaskTimeoutWaitMs: spread(these.map((t) => (t.workflowTaskTimeouts ?? []).reduce((sum, w) => sum + w.waitedMs, 0))),
        afterLastTimeoutMs: spread(these.map((t) => t.afterLastTimeoutMs ?? NaN)),
      };
    }),
    trialsDetail: trials.map((t) => ({ ...t, recoveryMs: t.recoveryMs === undefined ? undefined : round(t.recoveryMs, 0) })),
  };
}

async function runTrial(
  ctx: BenchContext,
  client: ReturnType<typeof createBatonClient>,
  workers: BenchWorker[],
  kill: Trial['kill'],
  heartbeatTimeoutMs: number,
): Promise<Trial> {
  const { pool, temporal } = ctx.stack;
  const graphId = `${ctx.runId}-rec-${randomUUID().slice(0, 6)}`;
  const taskId = `${graphId}/work`;
  await client.submitGraph(
    { id: graphId, policy: { heartbeatTimeoutMs, maxAttempts: 3 }, tasks: [{ key: 'work', run: { function: 'slow' }, verify: { function: 'pass' } }] },
    'bench',
  );
  const deadline = Date.now() + TRIAL_DEADLINE_MS;
  let claimed;
  for (;;) {
    const task = await selectTask(pool, taskId);
    if (task.status === 'running' && (kill === 'after-claim' || Number(task.progress?.step ?? 0) >= 5)) {
      claimed = task;
      break;
    }
    if (Date.now() > deadline) return { kill, recovered: false, problem: `never claimed (status ${task.status})` };
    await sleep(kill === 'after-claim' ? 5 : 25);
  }
  const victim = workers.find((w) => w.identity === claimed.owner);
  if (!victim) return { kill, recovered: false, problem: `claimed by unknown owner ${claimed.owner}` };
  const { rows } = await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  const killedAt = rows[0]!.now.getTime();
  await victim.kill();

  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    client.waitForGraph(graphId).catch(() => undefined),
    new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), Math.max(0, deadline - Date.now())))),
  ]).finally(() => clearTimeout(timer));
  const task = await selectTask(pool, taskId);
  if (!outcome || task.status !== 'verified') return { kill, recovered: false, problem: `status ${task.status} after ${TRIAL_DEADLINE_MS} ms` };
  const events = await selectEvents(pool, 'task', taskId);
  const nextClaim = events.find((e) => e.kind === 'claimed' && (e.fence ?? 0) > claimed.claimVersion);
  const reclaim = events.find((e) => e.kind === 'reclaimed_after_silence' && e.fence === claimed.claimVersion);
  if (!nextClaim || !reclaim) return { kill, recovered: false, problem: 'verified without a recorded recovery' };
  const nextClaimAt = new Date(nextClaim.at).getTime();
  return { kill, recovered: true, recoveryMs: nextClaimAt - killedAt, ...(await timeline(temporal, taskId, killedAt, nextClaimAt)) };
}

/** Splits the recovery along the task workflow's history (server clock, same machine as the database). */
async function timeline(temporal: Client, taskId: string, killedAt: number, nextClaimAt: number): Promise<Partial<Trial>> {
  const history = await temporal.workflow.getHandle(taskWorkflowId(taskId)).fetchHistory();
  const events = history.events ?? [];
  const ms = (e: (typeof events)[number]) => {
    const s = e.eventTime?.seconds as unknown as { toNumber?: () => number } | number | undefined;
    return (typeof s === 'object' && s?.toNumber ? s.toNumber() : Number(s ?? 0)) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
  };
  const at = new Map(events.map((e) => [Number(e.eventId), ms(e)]));
  const describe = (e: (typeof events)[number]) => {
    const [kind, attributes] = Object.entries(e).find(([k, v]) => k.endsWith('EventAttributes') && v) ?? ['?', {}];
    const a = attributes as Record<string, any>;
    const detail = [
      a.activityType?.name,
      a.taskQueue?.name ? `queue ${a.taskQueue.name}` : undefined,
      a.identity ? `by ${a.identity}` : undefined,
      a.timeoutType ? `timeout ${TIMEOUT_TYPES[Number(a.timeoutType)] ?? a.timeoutType}` : undefined,
      a.attempt > 1 ? `attempt ${a.attempt}` : undefined,
    ]
      .filter(Boolean)
      .join(', ');
    return `${(ms(e) - killedAt).toFixed(0)} ms ${kind.replace('EventAttributes', '')}${detail ? ` (${detail})` : ''}`;
  };
  const after = events.filter((e) => ms(e) >= killedAt && ms(e) <= nextClaimAt);
  const activityTimeout = after.find((e) => e.activityTaskTimedOutEventAttributes);
  const failure = activityTimeout?.activityTaskTimedOutEventAttributes?.failure;
  const activityTimeoutType = failure?.timeoutFailureInfo?.timeoutType ?? failure?.cause?.timeoutFailureInfo?.timeoutType;
  const workflowTaskTimeouts = after
    .filter((e) => e.workflowTaskTimedOutEventAttributes)
    .map((e) => {
      const a = e.workflowTaskTimedOutEventAttributes!;
      const type = TIMEOUT_TYPES[Number(a.timeoutType)] ?? String(a.timeoutType);
      // Start-to-close: measured from the start on the dead worker; schedule-to-start: from scheduling.
      const from = type === 'start-to-close' ? at.get(Number(a.startedEventId)) : at.get(Number(a.scheduledEventId));
      return { type, atMs: Math.round(ms(e) - killedAt), waitedMs: Math.round(ms(e) - (from ?? ms(e))) };
    });
  const types = new Set(workflowTaskTimeouts.map((t) => t.type));
  const detection = activityTimeoutType === undefined || activityTimeoutType === null ? undefined : TIMEOUT_TYPES[Number(activityTimeoutType)];
  // The claim committed but the dead worker never reported it: Temporal retries claimTask after its
  // start-to-close timeout, the retry finds the task running, and the workflow recovers it once its lease expired.
  const claimRetried = after.some((e) => e.activityTaskStartedEventAttributes && Number(e.activityTaskStartedEventAttributes.attempt) > 1);
  const path: RecoveryPath =
    claimRetried && detection === undefined
      ? 'claim result lost: claim start-to-close timeout + lease expiry'
      : types.has('start-to-close') && detection === 'schedule-to-start'
      ? 'workflow task timeout + schedule-to-start timeout'
      : types.has('schedule-to-start') && detection === 'heartbeat'
        ? 'heartbeat timeout + sticky queue timeout'
        : types.size === 0 && detection === 'heartbeat'
          ? 'heartbeat timeout'
          : 'other';
  const lastTimeoutAt = Math.max(activityTimeout ? ms(activityTimeout) - killedAt : 0, ...workflowTaskTimeouts.map((t) => t.atMs));
  return {
    path,
    activityTimeoutAtMs: activityTimeout ? Math.round(ms(activityTimeout) - killedAt) : undefined,
    activityTimeoutType: detection,
    workflowTaskTimeouts,
    afterLastTimeoutMs: Math.round(nextClaimAt - killedAt - lastTimeoutAt),
    events: events.filter((e) => ms(e) >= killedAt - 1_000 && ms(e) <= nextClaimAt + 100).map(describe),
  };
}
