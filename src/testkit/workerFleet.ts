// Real `baton worker` processes on one private task queue, to freeze, kill and restart as drills and the demo do.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { workflowBundleFile } from '../dev/workflowBundle.js';
import { spawnWorkerProcess, type WorkerProcess } from './workerProcess.js';

/** `baton worker` processes on one private task queue and one workflow bundle, each with a work folder of its own (as on machines of their own). */
export interface WorkerFleet {
  taskQueue: string;
  /** The processes started and not replaced, in start order. */
  workers: WorkerProcess[];
  /** Starts one more worker process. (Default identity: `<name>-worker-<n>`) */
  spawn(identity?: string): WorkerProcess;
  /** The fleet's process with this owner identity; throws for an owner outside the fleet. */
  ownerOf(owner: string | null): WorkerProcess;
  /** Sends `victim` `signal` (Default: SIGKILL), waits for it to exit and starts a replacement in its place. */
  killAndReplace(victim: WorkerProcess, signal?: NodeJS.Signals): Promise<WorkerProcess>;
  /** Sends every process SIGCONT (a frozen one could not stop) then `signal` (Default: SIGKILL), waits for them to exit, and removes the work folders (and the bundle, when it made its own). */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Finds or makes the workflow bundle (`workflowBundleFile`) and starts `size` worker processes on a task queue named
 * `baton-<name>-<random>`, with `env` (DATABASE_URL, TEMPORAL_ADDRESS, ...) added to this process's.
 */
export async function startWorkerFleet(options: {
  name: string;
  env: Record<string, string>;
  size?: number;
  /** More `baton worker` flags for every process. */
  args?: string[];
}): Promise<WorkerFleet> {
  const suffix = randomUUID().slice(0, 8);
  const taskQueue = `baton-${options.name}-${suffix}`;
  const workDir = path.join(tmpdir(), `baton-${options.name}-work-${suffix}`);
  const ownBundle = path.join(tmpdir(), `baton-${options.name}-bundle-${suffix}.js`);
  const workflowBundle = await workflowBundleFile(ownBundle);
  const workers: WorkerProcess[] = [];
  let spawned = 0;
  const start = (identity = `${options.name}-worker-${++spawned}`) =>
    spawnWorkerProcess({
      identity,
      taskQueue,
      env: options.env,
      workflowBundle,
      workDir: path.join(workDir, identity),
      args: options.args,
    });
  const spawn = (identity?: string) => {
    const worker = start(identity);
    workers.push(worker);
    return worker;
  };
  for (let i = 0; i < (options.size ?? 0); i++) spawn();
  return {
    taskQueue,
    workers,
    spawn,
    ownerOf: (owner) => {
      const worker = workers.find((w) => w.identity === owner);
      if (!worker) throw new Error(`task claimed by unknown owner ${owner}`);
      return worker;
    },
    killAndReplace: async (victim, signal = 'SIGKILL') => {
      victim.child.kill(signal);
      await victim.exited;
      const replacement = start();
      workers.splice(workers.indexOf(victim), 1, replacement);
      return replacement;
    },
    stop: async (signal = 'SIGKILL') => {
      for (const w of workers) {
        w.child.kill('SIGCONT');
        w.child.kill(signal);
      }
      await Promise.all(workers.map((w) => w.exited));
      await rm(workDir, { recursive: true, force: true });
      if (workflowBundle === ownBundle) await rm(ownBundle, { force: true });
    },
  };
}
