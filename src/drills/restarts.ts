import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { createBatonClient, type BatonClient } from '../client.js';
import { DEV_DATABASE_NAME } from '../config.js';
import { migrate } from '../db/migrate.js';
import { createPool, ensureDatabase, withDatabase } from '../db/pool.js';
import { graphReadTasks } from '../db/sql/reads.js';
import { ensureDevLogins } from '../dev/devLogins.js';
import { startEmbeddedPostgres, type PostgresStopMode, type RunningPostgres } from '../dev/embeddedPostgres.js';
import { freePort } from '../dev/freePort.js';
import { startTemporalDevServer, type TemporalDevServer } from '../dev/temporalDevServer.js';
import { waitFor } from '../dev/waitFor.js';
import { silentLog } from '../log.js';
import { uniqueGraphId } from '../testkit/graphs.js';
import { createScriptedRepo, steppingAgent } from '../testkit/scriptedRepo.js';
import { startWorkerFleet, type WorkerFleet } from '../testkit/workerFleet.js';
import {
  DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT,
  DRILL_SETUP_DEADLINE_MS,
  drillResult,
  percentile,
  type DrillOutput,
  type DrillResult,
} from './types.js';

// T11 as rows of `baton drill`: a graph of real agents (two `baton worker` processes, command
// agents that commit in git worktrees) is interrupted mid-run by a restart of a server baton
// depends on. The drill starts that server itself, its state on disk, so a deployment's own is
// never touched: R1 an embedded Postgres, R2 a Temporal dev server.

/** How long the server stays down. (Default of `downtimeMs`) */
const DOWNTIME_MS_DEFAULT = 3_000;
/** How long a trial's graph may take to complete once the server is back. (Default of `trialDeadlineMs`) */
const TRIAL_DEADLINE_MS_DEFAULT = 180_000;

/** How long the scripted agent works, in steps of 50 ms: long enough to be interrupted mid-run. */
const AGENT_STEPS = 40;

/** Where a trial restarts the server, in turn: while the first wave runs, or the second. */
const RESTART_POINTS: readonly RestartPoint[] = [
  { wave: 'first', keys: ['a', 'b'] },
  { wave: 'second', keys: ['c'] },
];
interface RestartPoint {
  wave: string;
  keys: readonly string[];
}

/** Postgres's shutdowns: a fast one and a crash (`immediate`). */
const POSTGRES_STOPS: readonly PostgresStopMode[] = ['fast', 'immediate'];
/**
 * The shutdown of trial `trial`: fast, immediate, immediate, fast, and so on, so that the first
 * two trials take both, and every four trials meet each restart point with each.
 */
const postgresStop = (trial: number) => POSTGRES_STOPS[Math.floor((trial + 1) / 2) % POSTGRES_STOPS.length]!;

interface RestartDrillOptions extends DrillOutput {
  /**
   * DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE for the worker processes, as in the other
   * drills; the server the row restarts replaces its own part.
   */
  workerEnv: Record<string, string>;
  trials: number;
  /** A folder for the restarted server's state, created here; the caller removes it. */
  home: string;
  /** Heartbeat timeout of the drill's tasks. (Default: 2 s) */
  heartbeatTimeoutMs?: number;
  /** Give up on a trial's graph this long after the server is back; its unverified tasks count as lost. (Default: 180 s) */
  trialDeadlineMs?: number;
  /** How long the server stays down. (Default: 3 s) */
  downtimeMs?: number;
}

interface PostgresRestartDrillOptions extends RestartDrillOptions {
  /** The Temporal server of `workerEnv`. */
  temporal: Client;
}

/**
 * R1: Postgres is stopped mid-run (a fast shutdown and a crash, `immediate`, in turn), kept down a
 * few seconds and started again on its data folder. Passes when every graph completes with each
 * task verified exactly once.
 */
export async function runPostgresRestartDrill(options: PostgresRestartDrillOptions): Promise<DrillResult> {
  const dataDir = path.join(options.home, 'postgres');
  await mkdir(options.home, { recursive: true });
  const port = await freePort();
  const start = () => startEmbeddedPostgres({ dataDir, port });
  let postgres: RunningPostgres = await start();
  let pool: pg.Pool | undefined;
  let fleet: WorkerFleet | undefined;
  try {
    await ensureDatabase(postgres.url, DEV_DATABASE_NAME);
    const adminUrl = withDatabase(postgres.url, DEV_DATABASE_NAME);
    pool = createPool(adminUrl);
    await migrate(pool);
    const logins = await ensureDevLogins(pool, adminUrl, options.home);
    fleet = await startWorkerFleet({ name: 'drill-r1', env: { ...options.workerEnv, DATABASE_URL: logins.worker }, size: 2 });
    const client = createBatonClient({ db: pool, temporal: options.temporal, taskQueue: fleet.taskQueue });
    const stops = new Set(Array.from({ length: options.trials }, (_, trial) => postgresStop(trial)));
    return await runRestartTrials('R1', `Postgres stopped (${[...stops].join(', ')}) mid-graph, restarted`, options, {
      pool,
      client,
      stop: (trial) => postgres.stop(postgresStop(trial)),
      start: async () => {
        postgres = await start();
      },
    });
  } finally {
    await fleet?.stop();
    await pool?.end();
    await postgres.stop();
  }
}

interface TemporalRestartDrillOptions extends RestartDrillOptions {
  /** The database of `workerEnv`, as the drill (every part's rights). */
  pool: pg.Pool;
  /** The `temporal` binary whose dev server the drill starts and kills. */
  temporalCliPath: string;
  /** Negative control (tests only): the server comes back without its state, as an in-memory one would. */
  forgetState?: boolean;
}

/**
 * R2: the Temporal dev server is SIGKILLed mid-run, kept down a few seconds and started again on
 * its SQLite file. Passes when every graph completes with each task verified exactly once.
 */
export async function runTemporalRestartDrill(options: TemporalRestartDrillOptions): Promise<DrillResult> {
  await mkdir(options.home, { recursive: true });
  const port = await freePort();
  const dbFilename = path.join(options.home, 'temporal.sqlite');
  const start = (withState: boolean) =>
    startTemporalDevServer({ cliPath: options.temporalCliPath, dbFilename: withState ? dbFilename : undefined, port, headless: true });
  let server: TemporalDevServer = await start(true);
  let connection: Connection | undefined;
  let fleet: WorkerFleet | undefined;
  try {
    connection = await Connection.connect({ address: server.address });
    fleet = await startWorkerFleet({
      name: 'drill-r2',
      env: { ...options.workerEnv, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace },
      size: 2,
    });
    const temporal = new Client({ connection, namespace: server.namespace });
    const client = createBatonClient({ db: options.pool, temporal, taskQueue: fleet.taskQueue });
    return await runRestartTrials('R2', 'Temporal server SIGKILLed mid-graph, restarted', options, {
      pool: options.pool,
      client,
      stop: async () => {
        server.process.kill('SIGKILL');
        await server.stop(); // waits for the exit
      },
      start: async () => {
        server = await start(!options.forgetState);
      },
    });
  } finally {
    await fleet?.stop();
    await connection?.close();
    await server.stop();
  }
}

interface RestartTarget {
  /** Where the trials' graphs are read, as the drill (every part's rights). */
  pool: pg.Pool;
  client: BatonClient;
  /** Takes the server down, the way trial `trial` (0-based) does. */
  stop(trial: number): Promise<void>;
  /** Brings it back on its state. */
  start(): Promise<void>;
}

/** What the trials found. */
interface RestartTally {
  tasks: number;
  verified: number;
  duplicated: number;
  /** Tasks that needed more than one claim (the restart cost a run). */
  reclaimed: number;
  /** From the server answering again to the graph's last verification. */
  completionMs: number[];
  violations: string[];
}

async function runRestartTrials(
  drill: 'R1' | 'R2',
  title: string,
  options: RestartDrillOptions,
  target: RestartTarget,
): Promise<DrillResult> {
  const progress = options.progress ?? options.log ?? silentLog;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT;
  const downtimeMs = options.downtimeMs ?? DOWNTIME_MS_DEFAULT;
  const deadlineMs = options.trialDeadlineMs ?? TRIAL_DEADLINE_MS_DEFAULT;
  const repo = await createScriptedRepo();
  const tally: RestartTally = { tasks: 0, verified: 0, duplicated: 0, reclaimed: 0, completionMs: [], violations: [] };
  try {
    for (let trial = 0; trial < options.trials; trial++) {
      const point = RESTART_POINTS[trial % RESTART_POINTS.length]!;
      await runRestartTrial({ drill, trial, point, repo, heartbeatTimeoutMs, downtimeMs, deadlineMs, target }, tally);
      progress(`${drill} trial ${trial + 1}/${options.trials}: restarted while the ${point.wave} wave ran`);
    }
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
  return drillResult(
    drill,
    title,
    {
      trials: options.trials,
      tasks: tally.tasks,
      verified: tally.verified,
      lost: tally.tasks - tally.verified,
      duplicated: tally.duplicated,
      reclaimed: tally.reclaimed,
      downtimeMs,
      completionP50Ms: percentile(tally.completionMs, 50),
      completionP99Ms: percentile(tally.completionMs, 99),
      heartbeatTimeoutMs,
    },
    tally.violations,
  );
}

/** The trial's graph: two tasks, one dependent of both, two dependents of that. */
const GRAPH: Record<string, string[]> = { a: [], b: [], c: ['a', 'b'], d: ['c'], e: ['c'] };

interface RestartTrial {
  drill: 'R1' | 'R2';
  trial: number;
  point: RestartPoint;
  repo: string;
  heartbeatTimeoutMs: number;
  downtimeMs: number;
  deadlineMs: number;
  target: RestartTarget;
}

async function runRestartTrial(trial: RestartTrial, tally: RestartTally): Promise<void> {
  const { pool, client } = trial.target;
  const graph = await client.submitGraph(
    {
      id: uniqueGraphId(trial.drill.toLowerCase()),
      repo: trial.repo,
      policy: { heartbeatTimeoutMs: trial.heartbeatTimeoutMs, maxAttempts: 5 },
      tasks: Object.entries(GRAPH).map(([key, dependsOn]) => ({
        key,
        dependsOn,
        run: { command: steppingAgent(AGENT_STEPS, `${key}.txt`) },
        verify: { command: `test -f ${key}.txt` },
      })),
    },
    'drill',
  );
  tally.tasks += Object.keys(GRAPH).length;
  try {
    await waitFor(
      `the ${trial.point.wave} wave to be mid-run`,
      async () => {
        const tasks = await graphReadTasks(pool, graph.id);
        const midRun = tasks.some((t) => trial.point.keys.includes(t.key) && t.status === 'running' && Number(t.progress?.lines ?? 0) >= 3);
        if (!midRun) throw new Error(tasks.map((t) => `${t.key} ${t.status}`).join(', '));
      },
      { timeoutMs: DRILL_SETUP_DEADLINE_MS, intervalMs: 50 },
    );
    await trial.target.stop(trial.trial);
    await sleep(trial.downtimeMs);
    await trial.target.start();
    const up = Date.now();
    const done = await waitFor(
      'every task verified',
      async () => {
        const tasks = await graphReadTasks(pool, graph.id);
        const open = tasks.filter((t) => t.status !== 'verified');
        if (open.length) throw new Error(open.map((t) => `${t.key} ${t.status}`).join(', '));
      },
      { timeoutMs: trial.deadlineMs, intervalMs: 100 },
    ).then(
      () => true,
      (error: Error) => {
        tally.violations.push(`${graph.id}: not complete after ${trial.deadlineMs} ms (${error.message})`);
        return false;
      },
    );
    if (done) tally.completionMs.push(Date.now() - up);
    const audit = await auditGraph(pool, graph.id);
    tally.verified += audit.verified;
    tally.reclaimed += audit.reclaimed;
    tally.duplicated += audit.duplicated.length;
    tally.violations.push(...audit.duplicated);
  } catch (error) {
    tally.violations.push(`${graph.id}: ${(error as Error).message}`);
  }
}

/**
 * What the record says of graph `graphId`: how many of its tasks are verified, which were verified
 * more than once (one line each), and how many needed more than one claim.
 */
export async function auditGraph(pool: pg.Pool, graphId: string): Promise<{ verified: number; duplicated: string[]; reclaimed: number }> {
  const { rows } = await pool.query<{ id: string; status: string; verified_events: number; passes: number; claims: number }>(
    `SELECT t.id, t.status,
            (SELECT count(*) FROM baton.events e WHERE e.subject_kind = 'task' AND e.subject_id = t.id AND e.kind = 'verified')::int AS verified_events,
            (SELECT count(*) FROM baton.verifications v WHERE v.task_id = t.id AND v.passed)::int AS passes,
            (SELECT count(*) FROM baton.events e WHERE e.subject_kind = 'task' AND e.subject_id = t.id AND e.kind = 'claimed')::int AS claims
       FROM baton.tasks t WHERE t.graph_id = $1 ORDER BY t.id`,
    [graphId],
  );
  return {
    verified: rows.filter((task) => task.status === 'verified').length,
    duplicated: rows
      .filter((task) => task.verified_events > 1 || task.passes > 1)
      .map((task) => `${task.id}: verified ${task.verified_events} times, ${task.passes} passing verifications`),
    reclaimed: rows.filter((task) => task.claims > 1).length,
  };
}
