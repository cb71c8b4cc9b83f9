import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { createBatonClient, type BatonClient } from '../src/client.js';
import { taskIdOf, taskWorkflowId } from '../src/tasks/taskId.js';
import { functionGraph, independentTasks } from '../src/testkit/graphs.js';
import { runConcurrent, sleep, type BenchContext } from './context.js';
import { medianHistory, summariseHistory, type HistorySummary } from './history.js';
import { interleave } from './interleave.js';
import { readCounters } from './queueTables.js';
import { latencies, nowMs, round, spread, type Latencies } from './stats.js';
import { startBenchWorker, type BenchWorker } from './workerProcess.js';

/** `tasks` independent tasks, each a no-op function agent and a passing function verifier: baton's whole lifecycle, nothing else. */
export function noopGraph(id: string, tasks = 1) {
  return functionGraph(id, independentTasks(tasks));
}

/**
 * `count` one-task graphs submitted through `client` (ids `<prefix>-<i>-<random>`), `concurrency` in
 * flight, each awaited until verified: lifecycles per second, each one's latency, and the graph ids.
 */
export async function batonLifecycles(
  client: BatonClient,
  options: { count: number; concurrency: number },
  prefix: string,
): Promise<{ perSecond: number; latencyMs: Latencies; ids: string[] }> {
  const start = nowMs();
  const ids: string[] = [];
  const samples = await runConcurrent(options.count, options.concurrency, async (i) => {
    const id = `${prefix}-${i}-${randomUUID().slice(0, 4)}`;
    ids.push(id);
    const t = nowMs();
    await client.submitGraph(noopGraph(id), 'bench');
    const result = await client.waitForGraph(id);
    if (result.verified.length !== 1) throw new Error(`lifecycle ${id} ended ${JSON.stringify(result)}`);
    return nowMs() - t;
  });
  return { perSecond: (options.count / (nowMs() - start)) * 1000, latencyMs: latencies(samples), ids };
}

interface LifecycleRound {
  perSecond: number;
  latencyMs: Latencies;
  ids: string[];
  /** Committed Postgres transactions per lifecycle (baton only; the bare workflow touches no database). */
  transactionsPerLifecycle?: number;
}

/** Runs one one-task graph (`graphId`) through `client` to its end and summarises its task workflow's history. */
export async function probeLifecycle(client: BatonClient, temporal: Client, graphId: string): Promise<HistorySummary> {
  await client.submitGraph(noopGraph(graphId), 'bench');
  await client.waitForGraph(graphId);
  return summariseHistory(temporal, taskWorkflowId(`${graphId}/t0`));
}

/** A benchmark worker of `kind` on task queue `<runId>-<tag>-<kind>`, its own process, with Temporal as `env` names it. */
export async function startSideWorker(
  ctx: BenchContext,
  kind: 'baton' | 'bare',
  tag: string,
  env: Record<string, string> = ctx.stack.workerEnv,
): Promise<{ worker: BenchWorker; taskQueue: string }> {
  const taskQueue = `${ctx.runId}-${tag}-${kind}`;
  const worker = await startBenchWorker(
    { kind, taskQueue, identity: `${tag}-${kind}-worker`, workflowBundlePath: ctx.bundles[kind], slowSteps: 0, slowStepMs: 0 },
    env,
  );
  return { worker, taskQueue };
}

/** Both workers of the lifecycle benchmark: a baton worker and a bare one, own processes. */
export async function startWorkerPair(
  ctx: BenchContext,
  tag: string,
): Promise<{ baton: BenchWorker; bare: BenchWorker; batonQueue: string; bareQueue: string }> {
  const [baton, bare] = await Promise.all([startSideWorker(ctx, 'baton', tag), startSideWorker(ctx, 'bare', tag)]);
  return { baton: baton.worker, bare: bare.worker, batonQueue: baton.taskQueue, bareQueue: bare.taskQueue };
}

/**
 * lifecycle: `count` one-task graphs (claim, no-op run through the function runner, fenced submit,
 * verification by the function verifier, release), `concurrency` in flight, against the same
 * number of bare workflows each running as many no-op activities as baton's lifecycle runs.
 */
export async function runLifecycleBench(ctx: BenchContext, options: { pairs: number; count: number; concurrency: number }) {
  const { stack, log } = ctx;
  const workers = await startWorkerPair(ctx, 'lifecycle');
  const client = createBatonClient({ db: stack.pool, temporal: stack.temporal, taskQueue: workers.batonQueue });
  const admin = await stack.pool.connect();
  try {
    // How many activities one baton lifecycle runs, read from its history; the bare workflow runs as many.
    const probeTask = await probeLifecycle(client, stack.temporal, `${ctx.runId}-probe`);
    const activities = probeTask.activities;
    log(
      `  lifecycle: one baton lifecycle runs ${activities} activities (${probeTask.activityTypes.join(', ')}); the bare workflow runs as many`,
    );

    const batonRound = async (r: number): Promise<LifecycleRound> => {
      const before = await readCounters(admin);
      const round = await batonLifecycles(client, options, `${ctx.runId}-lc${r + 1}`);
      // Worker backends publish their transaction counts within a second of going idle.
      await sleep(1_500);
      const after = await readCounters(admin);
      return { ...round, transactionsPerLifecycle: (after.xactCommit - before.xactCommit) / options.count };
    };
    const bareRound = async (r: number): Promise<LifecycleRound> => {
      const start = nowMs();
      const ids: string[] = [];
      const samples = await runConcurrent(options.count, options.concurrency, async (i) => {
        const id = `${ctx.runId}-bare${r + 1}-${i}-${randomUUID().slice(0, 4)}`;
        ids.push(id);
        const t = nowMs();
        await stack.temporal.workflow.execute('bareWorkflow', { taskQueue: workers.bareQueue, workflowId: id, args: [{ activities }] });
        return nowMs() - t;
      });
      return { perSecond: (options.count / (nowMs() - start)) * 1000, latencyMs: latencies(samples), ids };
    };
    const pairs = await interleave(
      'lifecycle',
      options.pairs,
      { candidate: batonRound, baseline: bareRound },
      log,
      (p) =>
        `baton ${p.candidate.perSecond.toFixed(1)}/s p50 ${p.candidate.latencyMs.p50.toFixed(0)} ms, bare ${p.baseline.perSecond.toFixed(1)}/s p50 ${p.baseline.latencyMs.p50.toFixed(0)} ms`,
    );

    // Where a lifecycle's time goes: the histories of the last pair's workflows.
    const last = pairs.at(-1)!;
    const batonBreakdown = await breakdown(ctx, last.candidate.ids, (id) => taskWorkflowId(taskIdOf(id, 't0')));
    const bareBreakdown = await breakdown(ctx, last.baseline.ids, (id) => id);
    const workerStats = await workers.baton.memory();
    const side = (r: LifecycleRound) => ({
      perSecond: round(r.perSecond, 2),
      p50Ms: round(r.latencyMs.p50, 1),
      p99Ms: round(r.latencyMs.p99, 1),
      ...(r.transactionsPerLifecycle !== undefined ? { transactionsPerLifecycle: round(r.transactionsPerLifecycle, 2) } : {}),
    });
    return {
      lifecyclesPerRound: options.count,
      concurrency: options.concurrency,
      activitiesPerLifecycle: activities,
      batonActivityTypes: probeTask.activityTypes,
      throughputRatio: spread(pairs.map((p) => p.candidate.perSecond / p.baseline.perSecond)),
      // The ratio's baseline follows baton's activity count, so one activity less speeds both sides up.
      batonPerSecond: spread(pairs.map((p) => p.candidate.perSecond)),
      p50Ratio: spread(pairs.map((p) => p.candidate.latencyMs.p50 / p.baseline.latencyMs.p50)),
      p99Ratio: spread(pairs.map((p) => p.candidate.latencyMs.p99 / p.baseline.latencyMs.p99)),
      transactionsPerLifecycle: spread(pairs.map((p) => p.candidate.transactionsPerLifecycle ?? NaN)),
      breakdown: { baton: batonBreakdown, bare: bareBreakdown },
      workerOptions: { baton: workers.baton.workerOptions, bare: workers.bare.workerOptions, batonPoolMax: workers.baton.poolMax },
      pool: { max: workers.baton.poolMax, maxWaiting: workerStats.poolMaxWaiting, waitingShare: round(workerStats.poolWaitingShare, 3) },
      rounds: pairs.map((p) => ({ first: p.first, baton: side(p.candidate), bare: side(p.baseline) })),
    };
  } finally {
    admin.release();
    await Promise.all([workers.baton.stop(), workers.bare.stop()]);
  }
}

const BREAKDOWN_SAMPLE = 10;

/** Median per lifecycle of its workflow's history (one workflow per lifecycle on either side). */
function breakdown(ctx: BenchContext, ids: string[], workflowOf: (id: string) => string) {
  return medianHistory(ctx.stack.temporal, ids.slice(0, BREAKDOWN_SAMPLE).map(workflowOf));
}
