import { setMaxListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import { createBatonClient } from '../src/client.js';
import { graphRead, graphReadSource } from '../src/db/sql/reads.js';
import { NotReadyError, waitFor } from '../src/dev/waitFor.js';
import { runConcurrent, type BenchContext } from './context.js';
import { noopGraph, startWorkerPair } from './lifecycle.js';
import { cpuSecondsByTree, machineBusySeconds, memoryOf } from './procStats.js';
import { nowMs, round } from './stats.js';
import type { BenchWorker } from './workerProcess.js';
import { eventTimeMs } from './history.js';
import { graphWorkflowId } from '../src/tasks/taskId.js';

const SAMPLE_INTERVAL_MS = 2_000;
/** After every task is verified, how long the graph workflow gets to notice and complete. */
const GRAPH_COMPLETION_GRACE_MS = 30_000;
/** Temporal's default per-workflow history limits (dynamic config `limit.historyCount.error`, `limit.historySize.error`). */
export const HISTORY_COUNT_LIMIT = 51_200;
export const HISTORY_SIZE_LIMIT_BYTES = 50 * 1024 * 1024;
const BARE_START_CONCURRENCY = 32;
const BARE_RESULT_CONCURRENCY = 64;

interface Sample {
  atS: number;
  verified: number;
  historyLength?: number;
  historySizeBytes?: number;
  workerRssMiB?: number;
}

interface CpuAccount {
  /** CPU seconds per process tree over the run. */
  seconds: Record<string, number>;
  /** Busy CPU seconds of the whole machine (all cores), to show what else was running. */
  machineSeconds: number;
}

async function cpuAccounting(ctx: BenchContext, worker: BenchWorker): Promise<() => Promise<CpuAccount>> {
  const roots = { worker: worker.pid, temporalServer: ctx.stack.pids.temporal, postgres: ctx.stack.pids.postgres };
  const before = await cpuSecondsByTree(roots);
  const machineBefore = await machineBusySeconds();
  const ownBefore = process.cpuUsage();
  return async () => {
    const after = await cpuSecondsByTree(roots);
    const own = process.cpuUsage(ownBefore);
    const seconds: Record<string, number> = {};
    for (const k of Object.keys(after)) seconds[k] = round(after[k]! - (before[k] ?? 0), 1);
    seconds.orchestrator = round((own.user + own.system) / 1e6, 1);
    return { seconds, machineSeconds: round((await machineBusySeconds()) - machineBefore, 1) };
  };
}

/**
 * The graph workflow's own account (latest run): workflow-task failures and timeouts, whether its
 * latest workflow task failed (stuck) or not, and its longest workflow task (replays, big batches).
 */
async function workflowTaskAccount(temporal: Client, workflowId: string) {
  const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const ms = (e: (typeof events)[number]) => eventTimeMs(e.eventTime);
  const startedAt = new Map<number, number>();
  let failures = 0;
  let timeouts = 0;
  let longestMs = 0;
  let lastFailure: string | undefined;
  let lastAttemptFailed = false;
  let terminatedReason: string | undefined;
  for (const e of events) {
    if (e.workflowTaskStartedEventAttributes) startedAt.set(Number(e.eventId), ms(e));
    const closed = e.workflowTaskCompletedEventAttributes ?? e.workflowTaskFailedEventAttributes ?? e.workflowTaskTimedOutEventAttributes;
    if (closed) {
      const from = startedAt.get(Number(closed.startedEventId));
      if (from !== undefined) longestMs = Math.max(longestMs, ms(e) - from);
      lastAttemptFailed = !e.workflowTaskCompletedEventAttributes;
    }
    if (e.workflowTaskFailedEventAttributes) {
      failures++;
      lastFailure = e.workflowTaskFailedEventAttributes.failure?.message ?? String(e.workflowTaskFailedEventAttributes.cause);
    } else if (e.workflowTaskTimedOutEventAttributes) {
      timeouts++;
    } else if (e.workflowExecutionTerminatedEventAttributes) {
      terminatedReason = e.workflowExecutionTerminatedEventAttributes.reason ?? 'terminated';
    }
  }
  return {
    workflowTaskFailures: failures,
    workflowTaskTimeouts: timeouts,
    longestWorkflowTaskMs: Math.round(longestMs),
    lastAttemptFailed,
    lastFailure,
    terminatedReason,
  };
}

/** A baton graph of `tasks` independent no-op tasks, from submit to every task verified in Postgres. */
async function runBatonScale(ctx: BenchContext, worker: BenchWorker, taskQueue: string, tasks: number, deadlineMs: number) {
  const { stack, log } = ctx;
  const client = createBatonClient({ db: stack.pool, temporal: stack.temporal, taskQueue });
  const graphId = `${ctx.runId}-scale-${tasks}`;
  const workflowId = graphWorkflowId(graphId);
  const stopCpu = await cpuAccounting(ctx, worker);
  const start = nowMs();
  const deadline = start + deadlineMs;
  const graph = noopGraph(graphId, tasks);
  await client.submitGraph(graph, 'bench');
  const submitMs = nowMs() - start;
  const specRead = await probeGraphRead(ctx, graphId);
  const samples: Sample[] = [];
  let allVerifiedMs: number | undefined;
  let graphDoneMs: number | undefined;
  let graphOutcome = 'running';
  const done = client.waitForGraph(graphId).then(
    () => {
      graphDoneMs = nowMs() - start;
      graphOutcome = 'completed';
    },
    (error: Error) => {
      graphDoneMs = nowMs() - start;
      graphOutcome = `failed: ${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}`;
    },
  );
  let lastLog = 0;
  const notSettled = new Error('the graph has not settled');
  const takeSample = async () => {
    const { rows } = await stack.pool.query<{ verified: number }>(
      "SELECT count(*)::int AS verified FROM baton.tasks WHERE graph_id = $1 AND status = 'verified'",
      [graphId],
    );
    const verified = rows[0]!.verified;
    const description = await stack.temporal.workflow
      .getHandle(workflowId)
      .describe()
      .catch(() => undefined);
    const memory = await memoryOf(worker.pid);
    const sample = {
      atS: round((nowMs() - start) / 1000, 1),
      verified,
      historyLength: description?.historyLength,
      historySizeBytes: description?.historySize,
      workerRssMiB: memory ? round(memory.rssMiB, 0) : undefined,
    };
    samples.push(sample);
    if (nowMs() - lastLog > 30_000) {
      lastLog = nowMs();
      log(
        `    baton ${tasks}: ${sample.atS}s verified ${verified}, graph history ${sample.historyLength} events, worker RSS ${sample.workerRssMiB} MiB, ${description?.status.name ?? '?'}`,
      );
    }
    if (allVerifiedMs === undefined && verified === tasks) allVerifiedMs = nowMs() - start;
    const settled = graphDoneMs !== undefined || (description && description.status.name !== 'RUNNING');
    if (settled && (allVerifiedMs !== undefined || graphOutcome !== 'completed')) return;
    if (allVerifiedMs !== undefined && nowMs() - start - allVerifiedMs > GRAPH_COMPLETION_GRACE_MS) return;
    throw notSettled;
  };
  // Samples until the graph settles; a graph still running at the deadline is measured as it stands.
  await waitFor(`graph ${graphId} to settle`, takeSample, {
    timeoutMs: Math.max(0, deadline - nowMs()),
    intervalMs: SAMPLE_INTERVAL_MS,
  }).catch((error: unknown) => {
    if (!(error instanceof NotReadyError && error.lastError === notSettled)) throw error;
  });
  const elapsedMs = nowMs() - start;
  const cpu = await stopCpu();
  const memory = await memoryOf(worker.pid);
  const own = await worker.memory();
  const description = await stack.temporal.workflow.getHandle(workflowId).describe();
  const { lastAttemptFailed, ...problem } = await workflowTaskAccount(stack.temporal, workflowId);
  if (graphDoneMs === undefined && description.status.name === 'RUNNING') {
    // Stuck: its latest workflow task failed or timed out and it made no progress in the last samples.
    const recent = samples.slice(-Math.ceil(GRAPH_COMPLETION_GRACE_MS / SAMPLE_INTERVAL_MS / 2));
    const noProgress = recent.length > 1 && recent.every((x) => x.historyLength === recent[0]!.historyLength);
    const outcome = lastAttemptFailed && noProgress ? 'stuck: its workflow tasks keep failing' : 'still running at the deadline';
    // Children follow their parent (parent close policy TERMINATE); nothing else is left running.
    await stack.temporal.workflow.getHandle(workflowId).terminate('bench: deadline or stuck');
    await done.catch(() => {});
    graphOutcome = outcome;
    graphDoneMs = undefined;
  }
  await done.catch(() => {});
  const { rows: statuses } = await stack.pool.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM baton.tasks WHERE graph_id = $1 GROUP BY status ORDER BY status',
    [graphId],
  );
  const { rows: phases } = await stack.pool.query<{
    first_claim: Date;
    last_claim: Date;
    last_verified: Date;
    median_claim_to_verified_ms: number;
    submitted_at: Date;
  }>(
    `SELECT min(e.at) FILTER (WHERE e.kind = 'claimed') AS first_claim, max(e.at) FILTER (WHERE e.kind = 'claimed') AS last_claim,
            max(e.at) FILTER (WHERE e.kind = 'verified') AS last_verified, g.submitted_at,
            (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM v.at - c.at) * 1000)
               FROM baton.events c JOIN baton.events v ON v.subject_id = c.subject_id AND v.subject_kind = 'task' AND v.kind = 'verified'
              WHERE c.subject_kind = 'task' AND c.kind = 'claimed' AND c.subject_id LIKE $1 || '/%') AS median_claim_to_verified_ms
       FROM baton.graphs g LEFT JOIN baton.events e ON e.subject_kind = 'task' AND e.subject_id LIKE $1 || '/%'
      WHERE g.id = $1 GROUP BY g.submitted_at`,
    [graphId],
  );
  const p = phases[0]!;
  const since = (d: Date | null) => (d ? round(d.getTime() - p.submitted_at.getTime(), 0) : undefined);
  const verified = statuses.find((s) => s.status === 'verified')?.n ?? 0;
  // How fast the graph workflow's history grew while tasks were still being started and verified.
  const growing = samples.filter((x, i) => x.historyLength !== undefined && (i === 0 || samples[i - 1]!.verified < tasks));
  const first = growing.find((x) => (x.historyLength ?? 0) > 0);
  const last = growing.at(-1);
  const historyPerSecond =
    first && last && last.atS > first.atS ? (last.historyLength! - first.historyLength!) / (last.atS - first.atS) : undefined;
  const eventsPerTask = description.historyLength && verified ? description.historyLength / Math.max(verified, 1) : undefined;
  return {
    tasks,
    submitMs: round(submitMs, 0),
    allVerifiedMs: allVerifiedMs === undefined ? undefined : round(allVerifiedMs, 0),
    verified,
    statuses: Object.fromEntries(statuses.map((s) => [s.status, s.n])),
    elapsedMs: round(elapsedMs, 0),
    deadlineMs,
    graphWorkflow: {
      outcome: graphOutcome,
      completedMs: graphDoneMs === undefined ? undefined : round(graphDoneMs, 0),
      historyLength: description.historyLength,
      historySizeBytes: description.historySize,
      eventsPerTask: eventsPerTask === undefined ? undefined : round(eventsPerTask, 2),
      ...problem,
    },
    phasesMsSinceSubmit: {
      firstClaim: since(p.first_claim),
      lastClaim: since(p.last_claim),
      lastVerified: since(p.last_verified),
      medianClaimToVerifiedMs: p.median_claim_to_verified_ms === null ? undefined : round(p.median_claim_to_verified_ms, 0),
    },
    /** Tasks verified per second, to all verified or to the deadline. */
    perSecond: round((verified / (allVerifiedMs ?? elapsedMs)) * 1000, 2),
    historyEventsPerSecond: historyPerSecond === undefined ? undefined : round(historyPerSecond, 1),
    /** Cut off by the deadline: when the graph workflow's history would reach Temporal's event limit at the observed rate. */
    projectedHistoryLimitS:
      historyPerSecond && description.historyLength < HISTORY_COUNT_LIMIT && graphOutcome === 'still running at the deadline'
        ? round((HISTORY_COUNT_LIMIT - description.historyLength) / historyPerSecond + elapsedMs / 1000, 0)
        : undefined,
    specRead,
    workerPeakRssMiB: memory ? round(memory.peakRssMiB, 0) : undefined,
    workerHeapUsedMiB: round(own.heapUsedMiB, 0),
    /** The worker's Postgres pool (baton's default size): most callers waiting at once, share of samples with any. */
    pool: { max: worker.poolMax, maxWaiting: own.poolMaxWaiting, waitingShare: round(own.poolWaitingShare, 3) },
    cpu,
    samples: thin(samples, 40),
  };
}

/** The same number of bare workflows (as many no-op activities each), started by the client. */
async function runBareScale(
  ctx: BenchContext,
  worker: BenchWorker,
  taskQueue: string,
  tasks: number,
  activities: number,
  deadlineMs: number,
) {
  const { temporal } = ctx.stack;
  const stopCpu = await cpuAccounting(ctx, worker);
  const start = nowMs();
  const ids = Array.from({ length: tasks }, (_, i) => `${ctx.runId}-bare-scale-${tasks}-${i}`);
  let peak = 0;
  const sampler = setInterval(() => void memoryOf(worker.pid).then((m) => (peak = Math.max(peak, m?.peakRssMiB ?? 0))), SAMPLE_INTERVAL_MS);
  let timedOut = false;
  const timer = setTimeout(() => (timedOut = true), deadlineMs);
  try {
    await runConcurrent(tasks, BARE_START_CONCURRENCY, (i) =>
      timedOut
        ? Promise.resolve()
        : temporal.workflow.start('bareWorkflow', { taskQueue, workflowId: ids[i]!, args: [{ activities }] }).then(() => undefined),
    );
    const startedMs = nowMs() - start;
    let done = 0;
    // At the deadline, cancel the result long-polls still open: left behind, they would retry on a closed connection.
    const abort = new AbortController();
    // One listener per open long-poll: more than Node's default warning threshold of 10.
    setMaxListeners(0, abort.signal);
    const abortTimer = setTimeout(() => abort.abort(), Math.max(0, start + deadlineMs - nowMs()));
    await runConcurrent(tasks, BARE_RESULT_CONCURRENCY, async (i) => {
      if (timedOut) return;
      const finished = await ctx.stack.connection
        .withAbortSignal(abort.signal, () => temporal.workflow.getHandle(ids[i]!).result())
        .then(
          () => true,
          () => false,
        );
      if (finished && !timedOut) done++;
    });
    clearTimeout(abortTimer);
    const elapsedMs = nowMs() - start;
    if (timedOut) {
      // Visibility knows which finished, whatever order the awaits above were in.
      done = (await temporal.workflow.count(`TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`)).count;
    }
    const memory = await memoryOf(worker.pid);
    return {
      tasks,
      activitiesPerWorkflow: activities,
      allStartedMs: round(startedMs, 0),
      allDoneMs: timedOut ? undefined : round(elapsedMs, 0),
      done,
      elapsedMs: round(elapsedMs, 0),
      /** Workflows completed per second, to all done or to the deadline. */
      perSecond: round((done / elapsedMs) * 1000, 2),
      timedOut,
      workerPeakRssMiB: round(Math.max(peak, memory?.peakRssMiB ?? 0), 0),
      cpu: await stopCpu(),
    };
  } finally {
    clearInterval(sampler);
    clearTimeout(timer);
  }
}

const GRAPH_READ_PROBES = 10;

/**
 * runTask and verifyTask each read the graph's repo and base (graphReadSource, two columns); the
 * whole spec (graphRead) grows with the graph. Both measured from here, for comparison.
 */
async function probeGraphRead(ctx: BenchContext, graphId: string) {
  const { rows } = await ctx.stack.pool.query<{ bytes: number; text_bytes: number }>(
    'SELECT pg_column_size(spec) AS bytes, octet_length(spec::text) AS text_bytes FROM baton.graphs WHERE id = $1',
    [graphId],
  );
  const medianMs = async (read: () => Promise<unknown>) => {
    const samples: number[] = [];
    for (let i = 0; i < GRAPH_READ_PROBES; i++) {
      const t = nowMs();
      await read();
      samples.push(nowMs() - t);
    }
    samples.sort((a, b) => a - b);
    return round(samples[Math.floor(samples.length / 2)]!, 2);
  };
  return {
    specStoredBytes: rows[0]!.bytes,
    specJsonBytes: rows[0]!.text_bytes,
    selectGraphMedianMs: await medianMs(() => graphRead(ctx.stack.pool, graphId)),
    selectGraphSourceMedianMs: await medianMs(() => graphReadSource(ctx.stack.pool, graphId)),
  };
}

function thin<T>(items: T[], max: number): T[] {
  if (items.length <= max) return items;
  const step = items.length / max;
  return Array.from({ length: max }, (_, i) => items[Math.floor(i * step)]!).concat(items.at(-1)!);
}

/**
 * scale: for each size, a fresh baton worker runs a graph of that many independent no-op tasks
 * and a fresh bare worker runs as many bare workflows; both from submit to all done, with the
 * worker's peak memory, CPU by process and the graph workflow's history.
 */
export async function runScaleBench(
  ctx: BenchContext,
  options: { sizes: number[]; activities: number; deadlineMs: (tasks: number) => number; baseline?: boolean },
) {
  const results = [];
  for (const [i, tasks] of options.sizes.entries()) {
    ctx.log(`  scale: ${tasks} tasks`);
    const workers = await startWorkerPair(ctx, `scale${tasks}`);
    try {
      const runBaton = () => runBatonScale(ctx, workers.baton, workers.batonQueue, tasks, options.deadlineMs(tasks));
      const runBare = () =>
        options.baseline === false
          ? Promise.resolve(undefined)
          : runBareScale(ctx, workers.bare, workers.bareQueue, tasks, options.activities, options.deadlineMs(tasks));
      let baton;
      let bare;
      // Alternate which side runs first from one size to the next.
      if (i % 2 === 0) {
        baton = await runBaton();
        bare = await runBare();
      } else {
        bare = await runBare();
        baton = await runBaton();
      }
      // Both complete: bare time / baton time. Either cut off by its deadline: the rates so far.
      const ratio = bare ? baton.perSecond / bare.perSecond : undefined;
      ctx.log(
        `  scale ${tasks}: baton ${baton.allVerifiedMs !== undefined ? `all verified in ${baton.allVerifiedMs} ms` : `${baton.verified} verified in ${baton.elapsedMs} ms (deadline)`}, ` +
          `graph workflow ${baton.graphWorkflow.outcome} (${baton.graphWorkflow.historyLength} events)` +
          (bare
            ? `; bare ${bare.allDoneMs !== undefined ? `all done in ${bare.allDoneMs} ms` : `${bare.done} done in ${bare.elapsedMs} ms (deadline)`}; throughput ratio ${ratio?.toFixed(3)}`
            : ''),
      );
      results.push({
        tasks,
        throughputRatio: ratio === undefined ? undefined : round(ratio, 3),
        bothCompleted: baton.allVerifiedMs !== undefined && bare?.allDoneMs !== undefined,
        baton,
        bare,
      });
    } finally {
      await Promise.all([workers.baton.kill(), workers.bare.kill()]);
    }
  }
  return { activitiesPerBareWorkflow: options.activities, sizes: results };
}
