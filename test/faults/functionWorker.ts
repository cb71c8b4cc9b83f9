// A baton worker as its own OS process, running a function agent the fault tests control: so a
// test can put it behind a fault proxy or under a fake clock (libfaketime applies per process)
// while another worker on the same queue runs in the test's own process (the Temporal SDK allows
// one worker per queue per process).
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { createPool } from '../../src/db/pool.js';
import type { AgentFunction } from '../../src/runners/functionRunner.js';
import { watchChild, type WorkerProcess } from '../../src/testkit/workerProcess.js';
import { createBatonWorker } from '../../src/worker.js';
import type { AgentRun } from './claimInvariants.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const READY_LINE = /^worker running, clock (\d+)$/m;
const START_TIMEOUT_MS = 60_000;
const STEP_MS = 200;

export interface FunctionWorkerOptions {
  identity: string;
  taskQueue: string;
  namespace: string;
  temporalAddress: string;
  databaseUrl: string;
  workflowBundle: string;
  /** Where each agent start is appended as a JSON line (an AgentRun). */
  runsFile: string;
  /** How long the agent works, in steps of 200 ms. */
  agentMs: number;
  /** Heartbeat through baton at each step (Postgres lease and progress); else only Temporal hears the run. (Default: true) */
  heartbeats?: boolean;
  /** The agent returns only once this file exists: the test decides when it finishes. */
  gateFile?: string;
}

export interface FunctionWorkerProcess extends WorkerProcess {
  /** The worker's own clock (ms since the epoch) when it started, as it read it. */
  startClock: number;
  stop(): Promise<void>;
}

/** Starts the worker process with `env` added (e.g. LD_PRELOAD and FAKETIME); resolves once it polls. */
export async function spawnFunctionWorker(
  options: FunctionWorkerOptions,
  env: Record<string, string> = {},
): Promise<FunctionWorkerProcess> {
  // The credential goes in the environment, never in argv: any user may read /proc/<pid>/cmdline
  // (the hostile-agent tests, running beside this one, look there).
  const { databaseUrl, ...rest } = options;
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), THIS_FILE, JSON.stringify(rest)], {
    env: { ...process.env, ...env, DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const watched = watchChild(child);
  const startClock = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // nobody holds it to stop it later
      reject(new Error(`worker ${options.identity} did not start within ${START_TIMEOUT_MS} ms:\n${watched.output()}`));
    }, START_TIMEOUT_MS);
    const onData = () => {
      const match = READY_LINE.exec(watched.output());
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker ${options.identity} exited (${code}) before running:\n${watched.output()}`));
    });
  });
  return {
    identity: options.identity,
    child,
    ...watched,
    startClock,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await watched.exited;
    },
  };
}

/** The agent runs recorded in `runsFile`. */
export function readRuns(runsFile: string): AgentRun[] {
  if (!existsSync(runsFile)) return [];
  return readFileSync(runsFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AgentRun);
}

function controlledAgent(options: FunctionWorkerOptions): AgentFunction {
  return async (ctx) => {
    appendFileSync(
      options.runsFile,
      `${JSON.stringify({ worker: options.identity, taskId: ctx.claim.taskId, claimVersion: ctx.claim.claimVersion })}\n`,
    );
    for (let waited = 0; waited < options.agentMs; waited += STEP_MS) {
      if (options.heartbeats !== false) await ctx.heartbeat({ waited });
      await new Promise((r) => setTimeout(r, STEP_MS));
    }
    while (options.gateFile && !existsSync(options.gateFile)) await new Promise((r) => setTimeout(r, 100));
    return {
      revision: `${ctx.claim.key}-v${ctx.claim.claimVersion}`,
      testCommand: 'check',
      agentResult: { exitCode: 0, outputDigest: 'd' },
    };
  };
}

if (process.argv[1] === THIS_FILE) {
  const options = { ...JSON.parse(process.argv[2]!), databaseUrl: process.env.DATABASE_URL! } as FunctionWorkerOptions;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const pool = createPool(options.databaseUrl);
  const connection = await NativeConnection.connect({ address: options.temporalAddress });
  const worker = await createBatonWorker({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    db: pool,
    identity: options.identity,
    workflowBundle: { codePath: options.workflowBundle },
    agentFunctions: { work: controlledAgent(options) },
    verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'd', outputTail: '' }) },
    log: () => {},
  });
  const running = worker.run();
  process.stdout.write(`worker running, clock ${Date.now()}\n`);
  await running;
}
