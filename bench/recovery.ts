import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { createBatonClient } from '../src/client.js';
import { eventRead, taskRead } from '../src/db/sql/reads.js';
import { NotReadyError, waitFor } from '../src/dev/waitFor.js';
import { resumeFrozenOwner } from '../src/drills/d2WorkerKill.js';
import { DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT } from '../src/drills/types.js';
import type { TaskRow } from '../src/tasks/types.js';
import { taskIdOf, taskWorkflowId } from '../src/tasks/taskId.js';
import { functionGraph } from '../src/testkit/graphs.js';
import { STICKY_QUEUE_TIMEOUT_MS_DEFAULT } from '../src/worker.js';
import { RUN_RETRY_INTERVAL_MS } from '../workflows/definitions.js';
import type { BenchContext } from './context.js';
import { quantile, round, spread } from './stats.js';
import { startBenchWorker, type BenchWorker } from './workerProcess.js';
import { eventTimeMs } from './history.js';

/** The slow agent heartbeats every step, long enough to be killed mid-run. */
const SLOW_STEPS = 30;
const SLOW_STEP_MS = 100;
const TRIAL_DEADLINE_MS = 60_000;

/** Temporal's TimeoutType enum values, by number. */
const TIMEOUT_TYPES: Record<number, string> = { 1: 'start-to-close', 2: 'schedule-to-start', 3: 'schedule-to-close', 4: 'heartbeat' };

/** What recovered the claim, read from the reason of its `reclaimed_after_silence` event. */
export type RecoveryPath = 'heartbeat timeout + run retry' | 'lease expiry' | 'other';

/** How a trial silences the task's owner: SIGKILL right after its claim or mid-run, or SIGSTOP mid-run. */
export type Silence = 'after-claim' | 'mid-run' | 'frozen';

/** How long a resumed frozen owner is watched for a late write before it is replaced. */
const RESUMED_WATCH_MS = 5_000;

/** How often a trial samples the task workflow's pending run attempt. */
const ATTEMPT_SAMPLE_MS = 100;

interface AttemptSeen {
  attempt: number;
  worker: string;
  startedAtMs?: number;
  heartbeated: boolean;
  lastFailure?: string;
}

interface Trial {
  kill: Silence;
  recovered: boolean;
  recoveryMs?: number;
  path?: RecoveryPath;
  /** Kill -> the silent claim was released (the retried run's first write). */
  reclaimAtMs?: number;
  /** Which attempt of the run took over (2 when the first retry did). */
  takeoverAttempt?: number;
  /** Workflow tasks that timed out after the kill: on the dead worker (start-to-close) or its sticky queue (schedule-to-start). */
  workflowTaskTimeouts?: Array<{ type: string; atMs: number; waitedMs: number }>;
  /** The task workflow's events from just before the kill to the next claim, ms relative to the kill. */
  events?: string[];
  problem?: string;
  /** What the live workers' silent-attempt watch said during the trial (its failures of attempts, its errors). */
  watch?: string[];
  /**
   * The run's attempts after the silencing, as the task workflow's pending activity showed them
   * (sampled every ATTEMPT_SAMPLE_MS): which worker each went to, when (ms after the silencing) and
   * whether it ever heartbeated.
   */
  attempts?: AttemptSeen[];
  /** A frozen owner, resumed after the recovery: its writes that landed (must be 0) and were refused. */
  lateWrites?: { landed: number; refused: number };
}

/**
 * recovery and frozen: real worker processes run a heartbeating function agent; the claimant is
 * silenced in each of `silences` in turn (SIGKILLed right after its claim or mid-run, or SIGSTOPped
 * mid-run and resumed once its task is claimed again). Measures the time from the silencing to the
 * task's next claim (both on the database clock) against the heartbeat timeout.
 */
export async function runRecoveryBench(
  ctx: BenchContext,
  options: { trials: number; silences: readonly Silence[]; heartbeatTimeoutMs?: number },
) {
  const { stack, log } = ctx;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT;
  const boundMs = heartbeatTimeoutMs + RUN_RETRY_INTERVAL_MS;
  const id = options.silences.includes('frozen') ? 'frozen' : 'recovery';
  const taskQueue = `${ctx.runId}-${id}`;
  const client = createBatonClient({ db: stack.pool, temporal: stack.temporal, taskQueue });
  let spawned = 0;
  const spawn = () =>
    startBenchWorker(
      {
        kind: 'baton',
        taskQueue,
        identity: `recovery-worker-${++spawned}`,
        workflowBundlePath: ctx.bundles.baton,
        slowSteps: SLOW_STEPS,
        slowStepMs: SLOW_STEP_MS,
      },
      stack.workerEnv,
    );
  const workers: BenchWorker[] = await Promise.all([spawn(), spawn()]);
  const trials: Trial[] = [];
  try {
    // Trial -1 is a discarded warm-up: the first workflow tasks of a fresh worker load its bundle.
    for (let i = -1; i < options.trials; i++) {
      const kill = options.silences[(i + options.silences.length) % options.silences.length]!;
      const trial = await runTrial(ctx, client, workers, kill, heartbeatTimeoutMs);
      // The replacement starts after the measurement, so its start-up does not compete with recovery.
      const dead = workers.findIndex((w) => w.child.exitCode !== null || w.child.signalCode !== null);
      if (dead >= 0) workers.splice(dead, 1, await spawn());
      log(
        `  ${id} ${i < 0 ? 'warm-up (discarded)' : `trial ${i + 1}/${options.trials}`} owner ${kill === 'frozen' ? 'frozen mid-run' : `killed ${kill}`}: ` +
          (trial.recovered
            ? `next claim ${trial.recoveryMs!.toFixed(0)} ms after the silencing via ${trial.path} (claim released at ${trial.reclaimAtMs} ms by run attempt ${trial.takeoverAttempt ?? '?'}` +
              `${trial.workflowTaskTimeouts?.map((t) => `, workflow task ${t.type} timeout at ${t.atMs} ms after ${t.waitedMs} ms`).join('') ?? ''})`
            : `LOST: ${trial.problem}`) +
          (trial.attempts?.length
            ? `; attempts: ${trial.attempts.map((a) => `${a.attempt} to ${a.worker} at ${a.startedAtMs ?? '?'} ms${a.heartbeated ? '' : ' (no heartbeat)'}`).join(', ')}`
            : '') +
          (trial.lateWrites ? `; resumed owner: ${trial.lateWrites.landed} late writes landed, ${trial.lateWrites.refused} refused` : ''),
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
    retryIntervalMs: RUN_RETRY_INTERVAL_MS,
    boundMs,
    stickyQueueTimeoutMs: STICKY_QUEUE_TIMEOUT_MS_DEFAULT,
    trials: trials.length,
    lost: trials.length - recovered.length,
    /** Late writes of resumed frozen owners that landed (must be 0), and those refused. */
    lateWritesLanded: trials.reduce((sum, t) => sum + (t.lateWrites?.landed ?? 0), 0),
    lateWritesRefused: trials.reduce((sum, t) => sum + (t.lateWrites?.refused ?? 0), 0),
    /** Silencing -> next claim over the heartbeat timeout. */
    ratio: spread(recovered.map((t) => t.recoveryMs! / heartbeatTimeoutMs)),
    p99Ratio: quantile(
      recovered.map((t) => t.recoveryMs! / heartbeatTimeoutMs),
      0.99,
    ),
    /** The same over heartbeat timeout + retry interval. */
    boundRatio: spread(recovered.map((t) => t.recoveryMs! / boundMs)),
    recoveryMs: spread(recovered.map((t) => t.recoveryMs!)),
    /** The ratio for each path the recoveries took. */
    byPath: paths.map((path) => {
      const these = recovered.filter((t) => (t.path ?? 'other') === path);
      return {
        path,
        trials: these.length,
        ratio: spread(these.map((t) => t.recoveryMs! / heartbeatTimeoutMs)),
        reclaimAtMs: spread(these.map((t) => t.reclaimAtMs ?? NaN)),
        workflowTaskTimeoutWaitMs: spread(these.map((t) => (t.workflowTaskTimeouts ?? []).reduce((sum, w) => sum + w.waitedMs, 0))),
      };
    }),
    trialsDetail: trials.map((t) => ({ ...t, recoveryMs: t.recoveryMs === undefined ? undefined : round(t.recoveryMs, 0) })),
  };
}

async function runTrial(
  ctx: BenchContext,
  client: ReturnType<typeof createBatonClient>,
  workers: BenchWorker[],
  kill: Silence,
  heartbeatTimeoutMs: number,
): Promise<Trial> {
  const { pool, temporal } = ctx.stack;
  const graphId = `${ctx.runId}-rec-${randomUUID().slice(0, 6)}`;
  const taskId = taskIdOf(graphId, 'work');
  await client.submitGraph(
    functionGraph(graphId, { work: [] }, { functions: { run: 'slow', verify: 'pass' }, policy: { heartbeatTimeoutMs, maxAttempts: 3 } }),
    'bench',
  );
  const deadline = Date.now() + TRIAL_DEADLINE_MS;
  let claimed: TaskRow;
  try {
    claimed = await waitFor(
      kill === 'after-claim' ? 'the claim' : 'the claimant to be mid-run',
      async () => {
        const task = await taskRead(pool, taskId);
        if (task.status !== 'running' || (kill === 'mid-run' && Number(task.progress?.step ?? 0) < 5))
          throw new Error(`status ${task.status}`);
        return task;
      },
      { timeoutMs: Math.max(0, deadline - Date.now()), intervalMs: kill === 'after-claim' ? 5 : 25 },
    );
  } catch (error) {
    if (!(error instanceof NotReadyError)) throw error;
    return { kill, recovered: false, problem: `never claimed (${(error.lastError as Error).message})` };
  }
  const victim = workers.find((w) => w.identity === claimed.owner);
  if (!victim) return { kill, recovered: false, problem: `claimed by unknown owner ${claimed.owner}` };
  const { rows } = await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  const killedAt = rows[0]!.now.getTime();
  if (kill === 'frozen') victim.child.kill('SIGSTOP');
  else await victim.kill();

  const sampling = sampleAttempts(temporal, taskId, killedAt);
  // Postgres says when the task is done; its workflow may finish later (a frozen worker's
  // open polls hold what they were handed until it times out).
  const verified = await waitFor(
    'the task to be verified',
    async () => {
      if ((await taskRead(pool, taskId)).status !== 'verified') throw new Error('not yet');
      return true;
    },
    { timeoutMs: Math.max(0, deadline - Date.now()), intervalMs: 50 },
  ).catch(() => false);
  const attempts = await sampling.stop();
  const watch = workers
    .filter((w) => w !== victim)
    .flatMap((w) => w.output().split('\n'))
    // This task's lines, and the watch's errors whatever task they name (a round held up by another task holds up this one).
    .filter((line) => line.includes('silent-attempt watch') && (line.includes(taskId) || !/: run attempt \d+ went to /.test(line)))
    .map((line) => line.slice(0, 300))
    .slice(-8);
  const lateWrites = kill === 'frozen' ? await resumeFrozen(pool, victim, taskId) : undefined;
  const outcome =
    verified && (await client.waitForGraph(graphId, { signal: AbortSignal.timeout(TRIAL_DEADLINE_MS) }).catch(() => undefined));
  const task = await taskRead(pool, taskId);
  if (!outcome || task.status !== 'verified')
    return { kill, recovered: false, lateWrites, attempts, watch, problem: `status ${task.status} after ${TRIAL_DEADLINE_MS} ms` };
  const events = await eventRead(pool, 'task', taskId);
  const nextClaim = events.find((e) => e.kind === 'claimed' && (e.fence ?? 0) > claimed.claimVersion);
  const reclaim = events.find((e) => e.kind === 'reclaimed_after_silence' && e.fence === claimed.claimVersion);
  if (!nextClaim || !reclaim) return { kill, recovered: false, problem: 'verified without a recorded recovery' };
  const nextClaimAt = new Date(nextClaim.at).getTime();
  const reason = reclaim.reason ?? '';
  const path: RecoveryPath = reason.startsWith('owner silent: Temporal heartbeat timeout')
    ? 'heartbeat timeout + run retry'
    : reason.startsWith('lease expired')
      ? 'lease expiry'
      : 'other';
  return {
    kill,
    recovered: true,
    lateWrites,
    attempts,
    watch,
    recoveryMs: nextClaimAt - killedAt,
    path,
    reclaimAtMs: Math.round(new Date(reclaim.at).getTime() - killedAt),
    takeoverAttempt: Number(/run attempt (\d+)/.exec(reason)?.[1]) || undefined,
    ...(await timeline(temporal, taskId, killedAt, nextClaimAt)),
  };
}

/** Samples the task workflow's pending run attempt until stopped: one entry per attempt seen. */
function sampleAttempts(temporal: Client, taskId: string, silencedAt: number) {
  const seen = new Map<number, AttemptSeen>();
  let stopped = false;
  const loop = (async () => {
    const handle = temporal.workflow.getHandle(taskWorkflowId(taskId));
    while (!stopped) {
      const { raw } = await handle.describe().catch(() => ({ raw: undefined }));
      for (const a of raw?.pendingActivities ?? []) {
        if (!a.activityType?.name?.endsWith('batonRunTask') || !a.lastWorkerIdentity) continue;
        const attempt = a.attempt ?? 0;
        const startedAt = a.lastStartedTime ? eventTimeMs(a.lastStartedTime) : undefined;
        const heartbeatAt = a.lastHeartbeatTime ? eventTimeMs(a.lastHeartbeatTime) : undefined;
        seen.set(attempt, {
          attempt,
          worker: a.lastWorkerIdentity,
          startedAtMs: startedAt === undefined ? undefined : Math.round(startedAt - silencedAt),
          heartbeated: startedAt !== undefined && heartbeatAt !== undefined && heartbeatAt >= startedAt,
          lastFailure: a.lastFailure?.message ?? undefined,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, ATTEMPT_SAMPLE_MS));
    }
  })();
  return {
    async stop(): Promise<AttemptSeen[]> {
      stopped = true;
      await loop;
      return [...seen.values()].sort((x, y) => x.attempt - y.attempt);
    },
  };
}

/**
 * Resumes a frozen owner once its task is verified, watches for its late writes (or a while, for an
 * owner that had nothing left to write) and kills it; every write it makes must be refused.
 */
async function resumeFrozen(pool: BenchContext['stack']['pool'], victim: BenchWorker, taskId: string) {
  const events = await resumeFrozenOwner(pool, victim, taskId, () => victim.kill(), RESUMED_WATCH_MS);
  const refused = events.filter((e) => e.kind === 'stale_write_refused').length;
  return { landed: events.length - refused, refused };
}

/** The task workflow's history around the recovery (server clock, same machine as the database). */
async function timeline(temporal: Client, taskId: string, killedAt: number, nextClaimAt: number): Promise<Partial<Trial>> {
  const history = await temporal.workflow.getHandle(taskWorkflowId(taskId)).fetchHistory();
  const events = history.events ?? [];
  const ms = (e: (typeof events)[number]) => eventTimeMs(e.eventTime);
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
  const workflowTaskTimeouts = after
    .filter((e) => e.workflowTaskTimedOutEventAttributes)
    .map((e) => {
      const a = e.workflowTaskTimedOutEventAttributes!;
      const type = TIMEOUT_TYPES[Number(a.timeoutType)] ?? String(a.timeoutType);
      // Start-to-close: measured from the start on the dead worker; schedule-to-start: from scheduling.
      const from = type === 'start-to-close' ? at.get(Number(a.startedEventId)) : at.get(Number(a.scheduledEventId));
      return { type, atMs: Math.round(ms(e) - killedAt), waitedMs: Math.round(ms(e) - (from ?? ms(e))) };
    });
  return {
    workflowTaskTimeouts,
    // Activity retries write no history until the run ends: its events show the attempt that finished.
    events: events.filter((e) => ms(e) >= killedAt - 1_000 && ms(e) <= nextClaimAt + 5_000).map(describe),
  };
}
