// `baton` started as a child process of this checkout, with its output kept for assertions and failure reports.
import { spawn, type ChildProcess } from 'node:child_process';
import { BATON_BIN } from '../packageRoot.js';

/** How much of a child's output `watchChild` keeps unless told otherwise: the last 20,000 characters. */
const OUTPUT_TAIL_CHARS_DEFAULT = 20_000;

export interface WorkerProcess {
  identity: string;
  child: ChildProcess;
  exited: Promise<void>;
  output(): string;
}

/** Which `baton` runs, and where. (Default: this checkout's, in this process's folder) */
export interface BatonCommand {
  /** Path of the `baton` command to run with this Node, such as an installed package's. */
  bin?: string;
  cwd?: string;
}

/** Starts `baton <args>` as a child process of this one, its stdout and stderr piped. */
export function spawnBaton(args: string[], env: NodeJS.ProcessEnv, command: BatonCommand = {}): ChildProcess {
  return spawn(process.execPath, [command.bin ?? BATON_BIN, ...args], { env, cwd: command.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Keeps what a child writes (stdout and stderr; the last `tailChars`, default 20,000), and when it exited. */
export function watchChild(child: ChildProcess, options: { tailChars?: number } = {}): { output: () => string; exited: Promise<void> } {
  const tailChars = options.tailChars ?? OUTPUT_TAIL_CHARS_DEFAULT;
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-tailChars);
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
  /** More of `baton worker`'s flags, e.g. `['--shutdown-grace', '0']`. */
  args?: string[];
}): WorkerProcess {
  const args = ['worker', '--task-queue', options.taskQueue, '--work-dir', options.workDir, ...(options.args ?? [])];
  if (options.workflowBundle) args.push('--workflow-bundle', options.workflowBundle);
  const child = spawnBaton(args, { ...process.env, ...options.env, BATON_WORKER_ID: options.identity });
  return { identity: options.identity, child, ...watchChild(child) };
}
