import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { watchChild } from '../src/testkit/workerProcess.js';
import type { WorkerMessage, WorkerProcessConfig } from './workerMain.js';

const WORKER_MAIN = fileURLToPath(new URL('./workerMain.ts', import.meta.url));
/** A worker process bundles nothing itself, but connecting and loading the bundle takes a while on 2 cores. */
const WORKER_READY_TIMEOUT_MS = 120_000;

export interface BenchWorker {
  identity: string;
  pid: number;
  child: ChildProcess;
  /** The Temporal worker options as the SDK resolved them, one entry per Temporal worker. */
  workerOptions: Array<Record<string, unknown>>;
  poolMax: number;
  /** Where an observed worker serves /metrics, /healthz and /readyz. */
  opsUrl?: string;
  exited: Promise<void>;
  /** The process's own view of its memory (V8 heap, RSS). */
  memory(): Promise<Extract<WorkerMessage, { type: 'memory' }>>;
  output(): string;
  /** Asks the worker to shut down cleanly and waits for the process to exit. */
  stop(): Promise<void>;
  kill(): Promise<void>;
}

/** Starts a benchmark worker as its own OS process and resolves once it polls. */
export async function startBenchWorker(config: WorkerProcessConfig, env: Record<string, string>): Promise<BenchWorker> {
  // BENCH_WORKER_NODE_ARGS: extra Node flags for the workers only, e.g. `--cpu-prof --cpu-prof-dir=DIR`
  // (a profile is written when a worker stops cleanly, as the lifecycle benchmark stops its own).
  const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', WORKER_MAIN], {
    env: { ...process.env, ...env, BENCH_WORKER_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const { output, exited } = watchChild(child);
  const ready = await new Promise<Extract<WorkerMessage, { type: 'ready' }>>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`bench worker ${config.identity} not ready after ${WORKER_READY_TIMEOUT_MS} ms:\n${output()}`)),
      WORKER_READY_TIMEOUT_MS,
    );
    child.on('message', (m: WorkerMessage) => {
      if (m.type === 'ready') {
        clearTimeout(timer);
        resolve(m);
      } else if (m.type === 'error') {
        clearTimeout(timer);
        reject(new Error(`bench worker ${config.identity} failed: ${m.message}`));
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`bench worker ${config.identity} exited before it was ready:\n${output()}`));
    });
  });
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return {
    identity: config.identity,
    pid: child.pid!,
    child,
    workerOptions: ready.workerOptions,
    poolMax: ready.poolMax,
    opsUrl: ready.opsUrl,
    exited,
    output,
    memory: () =>
      new Promise((resolve) => {
        const onMessage = (m: WorkerMessage) => {
          if (m.type !== 'memory') return;
          child.off('message', onMessage);
          resolve(m);
        };
        child.on('message', onMessage);
        child.send({ type: 'memory' });
      }),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.send({ type: 'shutdown' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
    kill,
  };
}
