import { setMaxListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import { createBatonClient } from '../src/client.js';
import { graphRead } from '../src/db/sql/reads.js';
import { NotReadyError, waitFor } from '../src/dev/waitFor.js';
import { runConcurrent, type BenchContext } from './context.js';
import { medianHistory } from './history.js';
import { noopGraph, probeLifecycle, startSideWorker } from './lifecycle.js';
import { cpuSecondsByTree, machineBusySeconds, memoryOf } from './procStats.js';
import { withOwnTemporal, type BenchTemporal } from './stack.js';
import { nowMs, round } from './stats.js';
import type { BenchWorker } from './workerProcess.js';
import { graphWorkflowsQuery, taskIdOf, taskWorkflowId } from '../src/tasks/taskId.js';

const SAMPLE_INTERVAL_MS = 2_000;
/** After every task is verified, how long waitForGraph gets to answer. */
const GRAPH_COMPLETION_GRACE_MS = 30_000;
const BARE_START_CONCURRENCY = 32;
const BARE_RESULT_CONCURRENCY = 64;

interface Sample {
  atS: number;
  verified: number;
  workerRssMiB?: number;
}

interface CpuAccount {
  /** CPU seconds per process tree over the run. */
  seconds: Record<string, number>;
  /** Busy CPU seconds of the whole machine (all cores), to show what else was running. */
  machineSeconds: number;
}

async function cpuAccounting(ctx: BenchContext, server: BenchTemporal, worker: BenchWorker): Promise<() => Promise<CpuAccount>> {
  const roots = { worker: worker.pid, temporalServer: server.pid, postgres: ctx.stack.pids.postgres };
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

/** Terminates the task workflows of `graphId` still running (a graph cut off by the deadline). */
async function terminateGraphWorkflows(temporal: Client, graphId: string): Promise<number> {
  const running: string[] = [];
  for await (const execution of temporal.workflow.list({ query: `${graphWorkflowsQuery(graphId)} AND ExecutionStatus = 'Running'` }))
    running.push(execution.workflowId);
  await runConcurrent(running.length, BARE_START_CONCURRENCY, (i) =>
    temporal.workflow
      .getHandle(running[i]!)
      .terminate('bench: deadline')
      .catch(() => undefined),
  );
  return running.length;
}

/** A baton graph of `tasks` independent no-op tasks, from submit to every task verified in Postgres. */
async function runBatonScale(
  ctx: BenchContext,
  server: BenchTemporal,
  worker: BenchWorker,
  taskQueue: string,
  tasks: number,
  deadlineMs: number,
) {
  const { stack, log } = ctx;
  const client = createBatonClient({ db: stack.pool, temporal: server.temporal, taskQueue });
  const graphId = `${ctx.runId}-scale-${tasks}`;
  const stopCpu = await cpuAccounting(ctx, server, worker);
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
  // waitForGraph, as a user's code awaits a graph: it resolves when nothing more happens in it.
  const giveUp = new AbortController();
  const done = client.waitForGraph(graphId, { signal: giveUp.signal }).then(
    (outcome) => {
      graphDoneMs = nowMs() - start;
      graphOutcome = outcome.verified.length === tasks ? 'completed' : `ended with ${outcome.verified.length} of ${tasks} verified`;
    },
    (error: Error) => {
      if (giveUp.signal.aborted) return;
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
    const memory = await memoryOf(worker.pid);
    const sample = { atS: round((nowMs() - start) / 1000, 1), verified, workerRssMiB: memory ? round(memory.rssMiB, 0) : undefined };
    samples.push(sample);
    if (nowMs() - lastLog > 30_000) {
      lastLog = nowMs();
      log(`    baton ${tasks}: ${sample.atS}s verified ${verified}, worker RSS ${sample.workerRssMiB} MiB`);
    }
    if (allVerifiedMs === undefined && verified === tasks) allVerifiedMs = nowMs() - start;
    if (graphDoneMs !== undefined) return;
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
  let terminated: number | undefined;
  if (graphDoneMs === undefined) {
    giveUp.abort();
    await done;
    graphOutcome = allVerifiedMs === undefined ? 'still running at the deadline' : 'all verified, but waitForGraph had not answered';
    terminated = await terminateGraphWorkflows(server.temporal, graphId);
  }
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
  // Every task has its lifecycle workflow: their histories are all a task costs Temporal.
  const history = await medianHistory(
    server.temporal,
    historySample(tasks).map((i) => taskWorkflowId(taskIdOf(graphId, `t${i}`))),
  ).catch(() => undefined);
  return {
    tasks,
    submitMs: round(submitMs, 0),
    allVerifiedMs: allVerifiedMs === undefined ? undefined : round(allVerifiedMs, 0),
    verified,
    statuses: Object.fromEntries(statuses.map((s) => [s.status, s.n])),
    elapsedMs: round(elapsedMs, 0),
    deadlineMs,
    graph: {
      /** What waitForGraph said: `completed` when it answered with every task verified. */
      outcome: graphOutcome,
      completedMs: graphDoneMs === undefined ? undefined : round(graphDoneMs, 0),
      /** Task workflows still running at the deadline, terminated then. */
      terminated,
    },
    /** Median over HISTORY_SAMPLE task workflows spread over the graph of what their histories say. */
    history,
    phasesMsSinceSubmit: {
      firstClaim: since(p.first_claim),
      lastClaim: since(p.last_claim),
      lastVerified: since(p.last_verified),
      medianClaimToVerifiedMs: p.median_claim_to_verified_ms === null ? undefined : round(p.median_claim_to_verified_ms, 0),
    },
    /** Tasks verified per second, to all verified or to the deadline. */
    perSecond: round((verified / (allVerifiedMs ?? elapsedMs)) * 1000, 2),
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
  server: BenchTemporal,
  worker: BenchWorker,
  taskQueue: string,
  tasks: number,
  activities: number,
  deadlineMs: number,
) {
  const { temporal } = server;
  const stopCpu = await cpuAccounting(ctx, server, worker);
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
      const finished = await server.connection
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
    const cpu = await stopCpu();
    const history = await medianHistory(
      temporal,
      historySample(tasks).map((i) => ids[i]!),
    ).catch(() => undefined);
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
      cpu,
      /** Median over HISTORY_SAMPLE workflows spread over the run of what their histories say. */
      history,
    };
  } finally {
    clearInterval(sampler);
    clearTimeout(timer);
  }
}

/** Workflows whose histories a side reads after its run, spread evenly over the order they started in. */
const HISTORY_SAMPLE = 20;
const historySample = (count: number) => {
  const n = Math.min(HISTORY_SAMPLE, count);
  return Array.from({ length: n }, (_, k) => Math.floor((k * count) / n));
};

const GRAPH_READ_PROBES = 10;

/**
 * The whole spec (graphRead) grows with the graph; the runs and verifications never read it (their
 * claim and verification start carry the graph's repo and base). Measured from here, for comparison.
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
  };
}

function thin<T>(items: T[], max: number): T[] {
  if (items.length <= max) return items;
  const step = items.length / max;
  return Array.from({ length: max }, (_, i) => items[Math.floor(i * step)]!).concat(items.at(-1)!);
}

/**
 * Runs `measure` with a worker of `kind` (task queue tagged `tag`) on a Temporal server of its own
 * (withOwnTemporal says why), both stopped afterwards.
 */
function onOwnServer<T>(
  ctx: BenchContext,
  kind: 'baton' | 'bare',
  tag: string,
  measure: (server: BenchTemporal, worker: BenchWorker, taskQueue: string) => Promise<T>,
): Promise<T> {
  return withOwnTemporal(ctx.stack, ctx.log, async (server) => {
    const { worker, taskQueue } = await startSideWorker(ctx, kind, tag, server.workerEnv);
    try {
      return await measure(server, worker, taskQueue);
    } finally {
      await worker.kill();
    }
  });
}

/**
 * scale: for each size, a baton worker runs a graph of that many independent no-op tasks and a
 * bare worker runs as many bare workflows, each running as many no-op activities as one baton
 * task's workflow does (counted from a probe graph's history first); both from submit to all
 * done, with the worker's peak memory and CPU by process. Each side runs on a Temporal server of
 * its own with a worker of its own; which side runs first alternates from one size to the next.
 */
export async function runScaleBench(
  ctx: BenchContext,
  options: { sizes: number[]; deadlineMs: (tasks: number) => number; baseline?: boolean },
) {
  const probe = await onOwnServer(ctx, 'baton', 'scaleprobe', (server, _worker, taskQueue) =>
    probeLifecycle(
      createBatonClient({ db: ctx.stack.pool, temporal: server.temporal, taskQueue }),
      server.temporal,
      `${ctx.runId}-scale-probe`,
    ),
  );
  const activities = probe.activities;
  ctx.log(`  scale: one baton task runs ${activities} activities (${probe.activityTypes.join(', ')}); each bare workflow runs as many`);
  const results = [];
  for (const [i, tasks] of options.sizes.entries()) {
    ctx.log(`  scale: ${tasks} tasks`);
    const deadlineMs = options.deadlineMs(tasks);
    const runBaton = () =>
      onOwnServer(ctx, 'baton', `scale${tasks}`, (server, worker, queue) => runBatonScale(ctx, server, worker, queue, tasks, deadlineMs));
    const runBare = () =>
      options.baseline === false
        ? Promise.resolve(undefined)
        : onOwnServer(ctx, 'bare', `scale${tasks}`, (server, worker, queue) =>
            runBareScale(ctx, server, worker, queue, tasks, activities, deadlineMs),
          );
    let baton;
    let bare;
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
        `waitForGraph: ${baton.graph.outcome}` +
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
  }
  return { activitiesPerBareWorkflow: activities, sizes: results };
}
