import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import path from 'node:path';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, withUnprefixedAliases, type BatonActivities } from '../activities/index.js';
import { batonHome, readEnv, TASK_QUEUE_DEFAULT } from './config.js';
import { workflowCode, workflowsPath } from './dev/workflowBundle.js';
import type { Queryable } from './db/queryable.js';
import { stderrLog, type Log } from './log.js';
import {
  agentIsolationFromEnv,
  describeAgentIsolation,
  isolationWarning,
  resolveAgentIsolation,
  type AgentIsolationOptions,
} from './runners/isolation/agentIsolation.js';
import { createCommandRunner } from './runners/commandRunner.js';
import { createCommandVerifier } from './runners/commandVerifier.js';
import { createFunctionRunner, createFunctionVerifier, type AgentFunction, type VerifierFunction } from './runners/functionRunner.js';
import { createPoolRunner } from './runners/poolRunner.js';
import { repositoryMirrors } from './runners/repository.js';
import { httpToolsFromEnv } from './tools/httpToolsConfig.js';
import type { Tracing } from './observability/tracing.js';
import { watchSilentAttempts } from './temporal/silentAttempts.js';
import { withRepeating, type Repeating } from './everyInterval.js';
import { sweepSilentHoldersOnTime } from './objects/holderSweep.js';
import type { ToolAdapter } from './tools/types.js';
import { workflowControl } from './workflowControl.js';

export { workflowsPath };

/**
 * How long a workflow task waits on a dead worker's sticky queue before any worker may take it.
 * Temporal's 10 s default stalls every workflow the dead worker had cached for 10 s (a run's
 * recovery does not wait on it: runs are activities, retried by the server); 2 s costs at most a
 * few extra history replays on a busy worker. (Default: 2s)
 */
export const STICKY_QUEUE_TIMEOUT_MS_DEFAULT = 2_000;

/**
 * How many activity polls a worker keeps open. A frozen worker (alive, not answering) is still
 * handed one task per open poll, ahead of the live workers' polls, and each run retry it swallows
 * delays the recovery (by a second or so with the silent-attempt watch, by a heartbeat timeout
 * without): Temporal's default of 10 let one frozen owner hold its task for up to ten more attempts.
 * One poll keeps dispatch far above what agents need (a poll returns in milliseconds; the bench's
 * lifecycles ran as fast as with 10) and bounds the delay to one attempt. Set as the activity poller
 * behaviour: the SDK (1.24) ignores `maxConcurrentActivityTaskPolls`. (Default: 1)
 */
export const ACTIVITY_TASK_POLLS_DEFAULT = 1;

/** Environment variable naming this worker; it becomes the owner of every claim the worker takes (T5). */
const WORKER_ID_ENV = 'BATON_WORKER_ID';

/** What baton's activities run with, wherever they are registered: `createBatonWorker` or `createBatonPlugin`. */
export interface BatonActivityOptions {
  /**
   * baton's database: a pool from `createPool`, or any `pg.Pool` of the host's own (its int8 parsing
   * does not matter; see `Queryable`).
   */
  db: Queryable;
  /** Owner identity of this worker's claims. (Default: `$BATON_WORKER_ID`, else `<host>-<pid>-<random>`) */
  identity?: string;
  /** Folder of this worker alone: worktrees, mirrors of graphs' remote repositories, agent logs. (Default: `.baton/work`) */
  workDir?: string;
  /** Agents for tasks whose spec says `run.function`. (Default: none) */
  agentFunctions?: Record<string, AgentFunction>;
  /** Verifiers for tasks whose spec says `verify.function`. (Default: none) */
  verifierFunctions?: Record<string, VerifierFunction>;
  /**
   * External tools this worker's agents may call through the gateway, by name (X1, X2): command
   * agents with `baton tool call <tool> <step>`, function agents with `ctx.callTool`.
   * (Default: the HTTP tools of `$BATON_HTTP_TOOLS`, else none)
   */
  tools?: Record<string, ToolAdapter>;
  /**
   * How command agents and verification commands are isolated from the worker and each other
   * (docs/isolation.md). Something asked for that this host cannot do stops the worker from
   * starting; with no isolation at all it starts with a loud warning.
   * (Default: `BATON_AGENT_USER`, `BATON_AGENT_SANDBOX`, `BATON_AGENT_NETWORK`, `BATON_AGENT_UIDS`,
   * `BATON_AGENT_ROOT`, else per-run users when the worker runs as root, bubblewrap otherwise if it works)
   */
  agentIsolation?: AgentIsolationOptions;
  /** Where the worker's start-up warnings go. (Default: stderr) */
  log?: Log;
  /** Replaces individual activities by their names (`batonVerifyTask`), e.g. to instrument them; the rest stay baton's own. */
  activityOverrides?: Partial<BatonActivities>;
  /**
   * While the worker runs, watch the claims past their lease and fail the run attempts Temporal
   * handed to a frozen worker, so the next attempt goes to one that answers
   * (src/temporal/silentAttempts.ts). (Default: true)
   */
  silentAttemptWatch?: boolean;
  /**
   * While the worker runs, record the loss of the role of every object holder past its silence
   * timeout, within about a second, rather than at the next call on the object
   * (src/objects/holderSweep.ts). (Default: true)
   */
  holderSweep?: boolean;
}

export interface BatonWorkerOptions extends BatonActivityOptions {
  connection: NativeConnection;
  namespace: string;
  /** Task queue for workflows, runs and verification. (Default: `baton`) */
  taskQueue?: string;
  /** Prebuilt workflow bundle. (Default: what `workflowCode` gives: the package's prebuilt bundle, a checkout's cached one, else `workflowsPath` bundled at start) */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Any other Temporal worker option (not its queue, identity, activities or workflows), passed through. */
  workerOptions?: Partial<WorkerOptions>;
  /** Traces of workflows and activities, from `startTracing`: the worker then bundles its workflows with tracing's interceptors. (Default: none) */
  tracing?: Tracing;
}

export interface BatonWorker {
  identity: string;
  run(): Promise<void>;
  runUntil<T>(until: Promise<T>): Promise<T>;
  shutdown(): void;
}

/**
 * Owner identity from the worker's configuration, never from task input. The random part keeps a
 * restarted container (same hostname, same pid) from looking like its predecessor.
 */
export function defaultWorkerIdentity(): string {
  return readEnv(WORKER_ID_ENV) ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 4)}`;
}

/**
 * Creates baton's worker: one Temporal worker on the task queue, running workflows, runs (each
 * claims its task as this worker's identity) and verifications.
 */
export async function createBatonWorker(options: BatonWorkerOptions): Promise<BatonWorker> {
  const taskQueue = options.taskQueue ?? TASK_QUEUE_DEFAULT;
  const identity = options.identity ?? defaultWorkerIdentity();
  // This worker runs baton alone, so it also answers to the names of 0.1 (`runTask`) that executions
  // started by 0.1 still schedule; an override serves under both names.
  const activities = withUnprefixedAliases(await batonActivities(options, identity));
  const { tracing, workerOptions = {} } = options;
  // A bundle given is used as it is: with tracing on, its workflows' spans are missing unless it was built with tracing's interceptors.
  const code = options.workflowBundle
    ? { workflowBundle: options.workflowBundle }
    : await workflowCode(tracing?.workflowInterceptorModules);
  const worker = await Worker.create({
    stickyQueueScheduleToStartTimeout: STICKY_QUEUE_TIMEOUT_MS_DEFAULT,
    activityTaskPollerBehavior: { type: 'simple-maximum', maximum: ACTIVITY_TASK_POLLS_DEFAULT },
    ...workerOptions,
    // Never overridden: the queue the client uses, and the identity that owns this worker's claims.
    connection: options.connection,
    namespace: options.namespace,
    identity,
    taskQueue,
    activities,
    ...code,
    interceptors: {
      ...workerOptions.interceptors,
      ...code.interceptors,
      activity: [...(workerOptions.interceptors?.activity ?? []), ...(tracing?.workerOptions.interceptors?.activity ?? [])],
    },
    sinks: { ...workerOptions.sinks, ...tracing?.workerOptions.sinks },
  });
  const whileRunning = <T>(running: () => Promise<T>) => withWorkerLoops(options, options.connection, options.namespace, identity, running);
  return {
    identity,
    run: () => whileRunning(() => worker.run()),
    shutdown: () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    },
    runUntil: (until) => whileRunning(() => worker.runUntil(until)),
  };
}

/**
 * Runs `running` (a worker of baton's activities) with what runs beside it, unless `options` turn
 * it off: the watch on run attempts handed to frozen workers (which needs the worker's connection)
 * and the sweep of silent object holders.
 */
export function withWorkerLoops<T>(
  options: BatonActivityOptions,
  connection: NativeConnection | undefined,
  namespace: string,
  identity: string,
  running: () => Promise<T>,
): Promise<T> {
  const { db } = options;
  const log = options.log ?? stderrLog;
  const loops: Array<() => Repeating> = [];
  if (connection && options.silentAttemptWatch !== false)
    loops.push(() => watchSilentAttempts({ db, connection, namespace, identity, log }));
  if (options.holderSweep !== false) loops.push(() => sweepSilentHoldersOnTime({ db, identity, log }));
  return withRepeating(loops, running);
}

/**
 * baton's activities for a worker whose claims `identity` owns, with the runners and verifiers
 * `options` configure; resolving the agents' isolation may refuse to start (see `agentIsolation`).
 */
export async function batonActivities(options: BatonActivityOptions, identity: string): Promise<BatonActivities> {
  const workDir = options.workDir ?? path.join(batonHome(), 'work');
  const isolation = await resolveAgentIsolation(options.agentIsolation ?? agentIsolationFromEnv());
  const warning = isolationWarning(await describeAgentIsolation(isolation));
  if (warning) (options.log ?? stderrLog)(warning);
  const commandRunner = createCommandRunner({ workDir, isolation });
  const functionRunner = createFunctionRunner(options.agentFunctions ?? {});
  const poolRunner = createPoolRunner({ db: options.db, identity });
  const commandVerifier = createCommandVerifier({ workDir, isolation });
  const functionVerifier = createFunctionVerifier(options.verifierFunctions ?? {});
  return {
    ...createActivities({
      db: options.db,
      identity,
      tools: options.tools ?? httpToolsFromEnv(),
      repositories: repositoryMirrors(path.join(workDir, 'mirrors')),
      workflowControl,
      runnerFor: (spec) => (spec.run.pool ? poolRunner : spec.run.function ? functionRunner : commandRunner),
      verifierFor: (spec) => (spec.verify.function ? functionVerifier : commandVerifier),
    }),
    ...options.activityOverrides,
  };
}
