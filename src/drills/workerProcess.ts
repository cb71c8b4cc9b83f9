import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BATON_BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));

export interface WorkerProcess {
  identity: string;
  child: ChildProcess;
  exited: Promise<void>;
  output(): string;
}

/** Keeps the last 20,000 characters a child wrote (stdout and stderr), and when it exited. */
export function watchChild(child: ChildProcess): { output: () => string; exited: Promise<void> } {
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return { output: () => output, exited: new Promise<void>((resolve) => child.once('exit', () => resolve())) };
}

/** Starts `baton worker` as a separate OS process, as a deployment would run it. */
export function spawnWorkerProcess(options: {
  identity: string;
  taskQueue: string;
  env: Record<string, string>;
  workflowBundle?: string;
  workDir: string;
}): WorkerProcess {
  const args = [BATON_BIN, 'worker', '--task-queue', options.taskQueue, '--work-dir', options.workDir];
  if (options.workflowBundle) args.push('--workflow-bundle', options.workflowBundle);
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...options.env, BATON_WORKER_ID: options.identity },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { identity: options.identity, child, ...watchChild(child) };
}
