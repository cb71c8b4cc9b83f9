import type { ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { createBatonClient, type BatonClient } from '../client.js';
import { eventRead, taskRead } from '../db/sql/reads.js';
import { processAlive } from '../dev/run.js';
import { waitFor } from '../dev/waitFor.js';
import { silentLog } from '../log.js';
import { taskIdOf } from '../tasks/taskId.js';
import { uniqueGraphId } from '../testkit/graphs.js';
import { createScriptedRepo, steppingAgent } from '../testkit/scriptedRepo.js';
import { startWorkerFleet, type WorkerFleet } from '../testkit/workerFleet.js';
import type { WorkerProcess } from '../testkit/workerProcess.js';
import {
  DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT,
  DRILL_SETUP_DEADLINE_MS,
  drillResult,
  percentile,
  type DrillOutput,
  type DrillResult,
} from './types.js';

/** How long the scripted agent works: long enough to be killed mid-run. */
const AGENT_STEPS = 60;

export interface WorkerKillDrillOptions extends DrillOutput {
  pool: pg.Pool;
  temporal: Client;
  /** DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE for the worker processes. */
  workerEnv: Record<string, string>;
  trials: number;
  /** Trials run at once, each lane with a fleet of two worker processes of its own. (Default: 1) */
  lanes?: number;
  /** (Default: 2s) */
  heartbeatTimeoutMs?: number;
  /** Give up on a trial this long after its owner is silenced; the task then counts as lost. (Default: 3 x timeout + 120s) */
  trialDeadlineMs?: number;
  /** How trials silence their owner, in turn. (Default: every way) */
  silences?: readonly Silence[];
  /** The drill's name in progress lines. (Default: D2) */
  label?: string;
}

/**
 * How a trial silences the owner, in turn: SIGKILL as soon as its claim is visible, SIGKILL
 * mid-run, or SIGSTOP mid-run (a frozen worker, resumed once its task is recovered: its late
 * writes must all be refused).
 */
const SILENCES = ['killed after its claim', 'killed mid-run', 'frozen mid-run'] as const;
type Silence = (typeof SILENCES)[number];

/**
 * D2: real worker processes run a scripted agent in a git worktree; the claimant is silenced
 * (SILENCES, in turn). Passes when every task is recovered by another worker and verified, with a
 * bumped claim version and the reason recorded, no silent owner's agent survives and no write of
 * a resumed frozen owner lands. Recovery time is from the silencing to the next claim.
 */
export async function runWorkerKillDrill(options: WorkerKillDrillOptions): Promise<DrillResult> {
  const progress = options.progress ?? options.log ?? silentLog;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT;
  // Room for what a frozen owner costs after its own task is recovered: its open polls can each take
  // an activity of the trial (the verification too) and hold it for that activity's heartbeat
  // timeout (30 s for a verification) before Temporal hands it on (issue 25 measures it).
  const trialDeadlineMs = options.trialDeadlineMs ?? heartbeatTimeoutMs * 3 + 120_000;
  const lanes = Math.max(1, Math.min(options.lanes ?? 1, options.trials));
  const silences = options.silences ?? SILENCES;
  const repo = await createScriptedRepo();
  const tally: Tally = {
    recovered: 0,
    orphans: 0,
    lateWrites: 0,
    refusedLateWrites: 0,
    frozenTrials: 0,
    frozenTrialsRefused: 0,
    violations: [],
    recoveryMs: [],
  };
  let done = 0;
  const fleets: WorkerFleet[] = [];
  try {
    for (let lane = 0; lane < lanes; lane++) fleets.push(await startWorkerFleet({ name: `drill${lane}`, env: options.workerEnv, size: 2 }));
    let next = 0;
    await Promise.all(
      fleets.map(async (fleet, lane) => {
        const client = createBatonClient({ db: options.pool, temporal: options.temporal, taskQueue: fleet.taskQueue });
        // Each lane takes the next trial, so the silences interleave across lanes.
        for (let trial = next++; trial < options.trials; trial = next++) {
          const silence = silences[trial % silences.length]!;
          await runTrial({ ...options, client, fleet, repo, silence, heartbeatTimeoutMs, trialDeadlineMs }, tally);
          done++;
          progress(`${options.label ?? 'D2'} trial ${done}/${options.trials} (lane ${lane + 1}/${lanes}): owner ${silence}`);
        }
      }),
    );
  } finally {
    await Promise.all(fleets.map((f) => f.stop()));
    await rm(repo, { recursive: true, force: true });
  }
  return drillResult(
    'D2',
    'SIGKILL or SIGSTOP the owner after it claims',
    {
      ...(options.silences ? { silences: silences.join(', ') } : {}),
      trials: options.trials,
      lanes,
      recovered: tally.recovered,
      lost: options.trials - tally.recovered,
      orphanAgents: tally.orphans,
      lateWritesLanded: tally.lateWrites,
      lateWritesRefused: tally.refusedLateWrites,
      frozenTrials: tally.frozenTrials,
      frozenTrialsRefused: tally.frozenTrialsRefused,
      recoveryP50Ms: percentile(tally.recoveryMs, 50),
      recoveryP99Ms: percentile(tally.recoveryMs, 99),
      recoveryMaxMs: percentile(tally.recoveryMs, 100),
      heartbeatTimeoutMs,
    },
    tally.violations,
  );
}

interface Trial {
  pool: pg.Pool;
  client: BatonClient;
  fleet: WorkerFleet;
  repo: string;
  silence: Silence;
  heartbeatTimeoutMs: number;
  trialDeadlineMs: number;
}

/** What the trials found, added up across lanes. */
interface Tally {
  recovered: number;
  orphans: number;
  lateWrites: number;
  refusedLateWrites: number;
  /** Trials whose owner was frozen and resumed, and those of them whose late write was refused and logged. */
  frozenTrials: number;
  frozenTrialsRefused: number;
  violations: string[];
  recoveryMs: number[];
}

async function runTrial(trial: Trial, tally: Tally): Promise<void> {
  const { pool, client, fleet, silence } = trial;
  const midRun = silence !== 'killed after its claim';
  const graph = await client.submitGraph(
    {
      id: uniqueGraphId('d2'),
      repo: trial.repo,
      policy: { heartbeatTimeoutMs: trial.heartbeatTimeoutMs, maxAttempts: 3 },
      tasks: [
        {
          key: 'work',
          run: { command: steppingAgent(AGENT_STEPS, 'done.txt') },
          verify: { command: 'test -f done.txt' },
        },
      ],
    },
    'drill',
  );
  const taskId = taskIdOf(graph.id, 'work');
  try {
    const claimed = await waitFor(
      midRun ? 'the claimant to be mid-run' : 'the first claim',
      async () => {
        const task = await taskRead(pool, taskId);
        if (task.status !== 'running' || (midRun && Number(task.progress?.lines ?? 0) < 3)) throw new Error(`task is ${task.status}`);
        return task;
      },
      { timeoutMs: DRILL_SETUP_DEADLINE_MS, intervalMs: 50 },
    );
    const victim = fleet.ownerOf(claimed.owner);
    const deadline = Date.now() + trial.trialDeadlineMs;
    const { rows } = await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
    if (silence === 'frozen mid-run') victim.child.kill('SIGSTOP');
    else await fleet.killAndReplace(victim);

    // Postgres says when the task is done; its workflow may finish later (a frozen
    // worker's pending polls hold the tasks they were handed until those time out).
    const task = await waitFor(
      'the task to be recovered and verified',
      async () => {
        const current = await taskRead(pool, taskId);
        if (current.status !== 'verified') throw new Error(`task is ${current.status}`);
        return current;
      },
      { timeoutMs: Math.max(0, deadline - Date.now()), intervalMs: 100 },
    ).catch(() => taskRead(pool, taskId));
    if (silence === 'frozen mid-run') await resumeFrozen(trial, victim, taskId, tally);
    const events = await eventRead(pool, 'task', taskId);
    const reclaim = events.find((e) => e.kind === 'reclaimed_after_silence' && e.fence === claimed.claimVersion);
    const nextClaim = events.find((e) => e.kind === 'claimed' && (e.fence ?? 0) > claimed.claimVersion);
    if (task.status !== 'verified') {
      tally.violations.push(`${taskId}: lost (status ${task.status} after ${trial.trialDeadlineMs} ms)`);
      return;
    }
    if (!reclaim?.reason || task.claimVersion <= claimed.claimVersion || task.owner === claimed.owner || !nextClaim) {
      tally.violations.push(`${taskId}: verified without a recorded recovery (claim version ${task.claimVersion}, owner ${task.owner})`);
      return;
    }
    tally.recovered++;
    const agentPid = reclaim.details.agentPid;
    if (typeof agentPid === 'number' && reclaim.details.agentHost === hostname() && (await processAlive(agentPid))) {
      tally.orphans++;
      tally.violations.push(`${taskId}: the silent owner's agent (pid ${agentPid}) still runs after recovery`);
    }
    tally.recoveryMs.push(new Date(nextClaim.at).getTime() - rows[0]!.now.getTime());
  } catch (error) {
    tally.violations.push(`${taskId}: ${(error as Error).message}`);
  }
}

/** How long a resumed frozen owner is watched for its first late write before it is replaced. */
const RESUMED_WATCH_MS = 10_000;

/**
 * Resumes a frozen owner once its task is settled, waits until it tries a late write (or `watchMs`,
 * for an owner that had nothing left to write), then has `stop` end it. Returns the events it
 * recorded after its resumption, each of which must be a refusal (`stale_write_refused`).
 */
export async function resumeFrozenOwner(
  pool: pg.Pool,
  victim: { identity: string; child: ChildProcess },
  taskId: string,
  stop: () => Promise<unknown>,
  watchMs = RESUMED_WATCH_MS,
) {
  const { rows } = await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  const late = async () =>
    (await eventRead(pool, 'task', taskId)).filter((e) => e.actor === victim.identity && new Date(e.at) >= rows[0]!.now);
  victim.child.kill('SIGCONT');
  await waitFor(
    'a late write of the resumed owner',
    async () => {
      if (!(await late()).length) throw new Error('none yet');
    },
    { timeoutMs: watchMs, intervalMs: 100 },
  ).catch(() => undefined);
  await stop();
  return late();
}

/** The drill's tally of a resumed frozen owner's late writes. */
async function resumeFrozen(trial: Trial, victim: WorkerProcess, taskId: string, tally: Tally): Promise<void> {
  const events = await resumeFrozenOwner(trial.pool, victim, taskId, () => trial.fleet.killAndReplace(victim));
  const landed = events.filter((e) => e.kind !== 'stale_write_refused');
  tally.refusedLateWrites += events.length - landed.length;
  tally.frozenTrials++;
  if (events.length > landed.length) tally.frozenTrialsRefused++;
  tally.lateWrites += landed.length;
  for (const e of landed)
    tally.violations.push(`${taskId}: a write of the resumed frozen owner landed: ${e.kind} at claim version ${e.fence}`);
}
