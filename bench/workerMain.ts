// Entry point of a benchmark worker process (spawned by bench/workerProcess.ts): a baton worker
// with no-op (or slow, heartbeating) function agents, or a bare Temporal worker with no-op activities.
import { DefaultLogger, NativeConnection, Runtime, Worker, type CompiledWorkerOptions } from '@temporalio/worker';
import { installTemporalRuntime } from '../src/cli/temporalRuntime.js';
import { createPool } from '../src/db/pool.js';
import { createLogger, loggerLog } from '../src/observability/logger.js';
import { createBatonMetrics } from '../src/observability/metrics.js';
import { startOpsServer } from '../src/observability/opsServer.js';
import { createBatonWorker } from '../src/worker.js';
import type { Artifact } from '../src/tasks/types.js';
import { createBareActivities } from './bareActivities.js';

export interface WorkerProcessConfig {
  kind: 'baton' | 'bare';
  taskQueue: string;
  identity: string;
  /** Prebuilt workflow bundle (baton's or the bench's own). */
  workflowBundlePath: string;
  /** Steps of the `slow` agent, one heartbeat each. */
  slowSteps: number;
  slowStepMs: number;
  /** Extra Temporal worker options, for experiments. */
  workerOptions?: Record<string, unknown>;
  /**
   * Observed as `baton worker --ops-port` observes a worker (SPEC U6): JSON logs at info through
   * pino (the Temporal SDK's too), the SDK's runtime metrics, and an ops port with the deployment
   * metrics, whose address the ready message carries. (Default: the SDK's default logger at WARN, nothing else)
   */
  observed?: boolean;
}

export type WorkerMessage =
  | { type: 'ready'; workerOptions: Array<Record<string, unknown>>; poolMax: number; opsUrl?: string }
  | {
      type: 'memory';
      heapUsedMiB: number;
      rssMiB: number;
      externalMiB: number;
      /** Most callers seen waiting for a pooled Postgres connection, and the share of 50 ms samples with any waiting. */
      poolMaxWaiting: number;
      poolWaitingShare: number;
    }
  | { type: 'error'; message: string };

const POOL_SAMPLE_MS = 50;
let poolSamples = 0;
let poolWaitingSamples = 0;
let poolMaxWaiting = 0;

const config = JSON.parse(process.env.BENCH_WORKER_CONFIG ?? '{}') as WorkerProcessConfig;
const send = (message: WorkerMessage) => process.send?.(message);

const observed = config.observed ? await observe() : undefined;
if (!observed) Runtime.install({ logger: new DefaultLogger('WARN') });

/** Installs the runtime as `baton worker` does with its logger and metrics; the metrics are served once the pool exists. */
async function observe() {
  const logger = createLogger({ format: 'json', level: 'info', base: { component: 'worker', worker: config.identity } });
  const { metricsUrl } = await installTemporalRuntime(logger, { metrics: true });
  const metrics = createBatonMetrics({ temporalRuntimeUrl: metricsUrl, log: (line) => logger.warn(line) });
  return { logger, metrics };
}

// createBatonWorker builds its Temporal workers inside; record what they were resolved to.
const resolved: CompiledWorkerOptions[] = [];
const create = Worker.create.bind(Worker);
Worker.create = async (options) => {
  const worker = await create(options);
  resolved.push(worker.options);
  return worker;
};

const artifactFor = (key: string, claimVersion: number): Artifact => ({
  revision: `bench-${key}-${claimVersion}`,
  testCommand: 'noop',
  agentResult: { exitCode: 0, outputDigest: 'noop' },
});

async function main(): Promise<void> {
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '' });
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  let run: () => Promise<void>;
  let shutdown: () => void;
  let poolMax = 0;
  let opsUrl: string | undefined;
  if (config.kind === 'baton') {
    const pool = createPool(process.env.DATABASE_URL ?? '');
    poolMax = pool.options.max ?? 0;
    setInterval(() => {
      poolSamples++;
      if (pool.waitingCount > 0) poolWaitingSamples++;
      poolMaxWaiting = Math.max(poolMaxWaiting, pool.waitingCount);
    }, POOL_SAMPLE_MS).unref();
    const worker = await createBatonWorker({
      connection,
      namespace,
      db: pool,
      taskQueue: config.taskQueue,
      identity: config.identity,
      workflowBundle: { codePath: config.workflowBundlePath },
      workerOptions: config.workerOptions,
      agentFunctions: {
        noop: async (ctx) => artifactFor(ctx.claim.key, ctx.claim.claimVersion),
        slow: async (ctx) => {
          for (let step = 1; step <= config.slowSteps; step++) {
            await ctx.heartbeat({ step });
            await new Promise((r) => setTimeout(r, config.slowStepMs));
          }
          return artifactFor(ctx.claim.key, ctx.claim.claimVersion);
        },
      },
      verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'ok', outputTail: '' }) },
      ...(observed && { log: loggerLog(observed.logger) }),
    });
    if (observed) {
      observed.metrics.exportDeployment(pool);
      const ops = await startOpsServer({ host: '127.0.0.1', port: 0, metrics: observed.metrics, readiness: {} });
      opsUrl = ops.url;
    }
    run = worker.run;
    shutdown = worker.shutdown;
  } else {
    const worker = await Worker.create({
      connection,
      namespace,
      taskQueue: config.taskQueue,
      identity: config.identity,
      workflowBundle: { codePath: config.workflowBundlePath },
      activities: createBareActivities(),
      ...config.workerOptions,
    });
    run = () => worker.run();
    shutdown = () => worker.shutdown();
  }
  const running = run();
  // An orchestrator that dies (Ctrl-C, crash) must not leave its workers polling.
  process.on('disconnect', () => process.exit(1));
  send({ type: 'ready', workerOptions: resolved.map(summariseOptions), poolMax, opsUrl });
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'memory') {
      const m = process.memoryUsage();
      send({
        type: 'memory',
        heapUsedMiB: m.heapUsed / 2 ** 20,
        rssMiB: m.rss / 2 ** 20,
        externalMiB: m.external / 2 ** 20,
        poolMaxWaiting,
        poolWaitingShare: poolSamples ? poolWaitingSamples / poolSamples : 0,
      });
    } else if (message.type === 'shutdown') {
      shutdown();
    }
  });
  await running;
  await connection.close();
  process.exit(0);
}

/** The options that shape throughput and recovery, as the SDK resolved them. */
function summariseOptions(o: CompiledWorkerOptions): Record<string, unknown> {
  const pick = (value: unknown) => (typeof value === 'object' && value !== null ? JSON.parse(JSON.stringify(value)) : value);
  return {
    taskQueue: o.taskQueue,
    maxCachedWorkflows: o.maxCachedWorkflows,
    tuner: pick(o.tuner),
    workflowTaskPollerBehavior: pick(o.workflowTaskPollerBehavior),
    activityTaskPollerBehavior: pick(o.activityTaskPollerBehavior),
    nonStickyToStickyPollRatio: o.nonStickyToStickyPollRatio,
    stickyQueueScheduleToStartTimeoutMs: o.stickyQueueScheduleToStartTimeoutMs,
    maxHeartbeatThrottleIntervalMs: o.maxHeartbeatThrottleIntervalMs,
    defaultHeartbeatThrottleIntervalMs: o.defaultHeartbeatThrottleIntervalMs,
    maxActivitiesPerSecond: o.maxActivitiesPerSecond,
    maxTaskQueueActivitiesPerSecond: o.maxTaskQueueActivitiesPerSecond,
    reuseV8Context: o.reuseV8Context,
    workflowThreadPoolSize: o.workflowThreadPoolSize,
  };
}

main().catch((error: unknown) => {
  send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
});
