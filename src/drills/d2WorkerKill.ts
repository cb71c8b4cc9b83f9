import { rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { createBatonClient } from '../client.js';
import { selectEvents } from '../db/sql/selectEvents.js';
import { selectTask } from '../db/sql/selectTasks.js';
import { waitFor } from '../dev/waitFor.js';
import { silentLog, type Log } from '../log.js';
import { uniqueGraphId } from '../testkit/graphs.js';
import { commitAll, createScriptedRepo } from '../testkit/scriptedRepo.js';
import { withDeadline } from '../testkit/withDeadline.js';
import { startWorkerFleet } from '../testkit/workerFleet.js';
import { drillResult, type DrillResult } from './types.js';

/** Heartbeat timeout the drill runs with unless told otherwise. */
export const DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT = 2_000;
/** How long the scripted agent works: long enough to be killed mid-run. */
const AGENT_STEPS = 60;

export interface WorkerKillDrillOptions {
  pool: pg.Pool;
  temporal: Client;
  /** DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE for the worker processes. */
  workerEnv: Record<string, string>;
  trials: number;
  /** (Default: 2s) */
  heartbeatTimeoutMs?: number;
  /** Give up on a trial after this long; the task then counts as lost. (Default: 3 x timeout + 60s) */
  trialDeadlineMs?: number;
  log?: Log;
}

/**
 * D2: real worker processes run a scripted agent in a git worktree; the claimant is SIGKILLed
 * (alternately right after its claim and mid-run). Passes when every task is recovered by another
 * worker and verified, with a bumped claim version and the reason recorded.
 */
export async function runWorkerKillDrill(options: WorkerKillDrillOptions): Promise<DrillResult> {
  const log = options.log ?? silentLog;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT;
  const trialDeadlineMs = options.trialDeadlineMs ?? heartbeatTimeoutMs * 3 + 60_000;
  const repo = await createScriptedRepo();
  const fleet = await startWorkerFleet({ name: 'drill', env: options.workerEnv, size: 2 });
  const client = createBatonClient({ db: options.pool, temporal: options.temporal, taskQueue: fleet.taskQueue });
  const violations: string[] = [];
  const recoveryMs: number[] = [];
  let recovered = 0;
  let orphans = 0;
  try {
    for (let trial = 0; trial < options.trials; trial++) {
      const deadline = Date.now() + trialDeadlineMs;
      const killMidRun = trial % 2 === 1;
      const graph = await client.submitGraph(
        {
          id: uniqueGraphId('d2'),
          repo,
          policy: { heartbeatTimeoutMs, maxAttempts: 3 },
          tasks: [
            {
              key: 'work',
              run: { command: `for i in $(seq 1 ${AGENT_STEPS}); do echo "step $i"; sleep 0.05; done; echo done > done.txt; ${commitAll('drill work')}` },
              verify: { command: 'test -f done.txt' },
            },
          ],
        },
        'drill',
      );
      const taskId = `${graph.id}/work`;
      try {
        const claimed = await waitFor(
          killMidRun ? 'the claimant to be mid-run' : 'the first claim',
          async () => {
            const task = await selectTask(options.pool, taskId);
            if (task.status !== 'running' || (killMidRun && Number(task.progress?.lines ?? 0) < 3)) {
              throw new Error(`task is ${task.status}`);
            }
            return task;
          },
          { timeoutMs: Math.max(0, deadline - Date.now()), intervalMs: 50 },
        );
        const victim = fleet.ownerOf(claimed.owner);
        const { rows } = await options.pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
        await fleet.killAndReplace(victim);
        log(`D2 trial ${trial + 1}/${options.trials}: killed ${victim.identity} ${killMidRun ? 'mid-run' : 'right after its claim'}`);

        const outcome = await withDeadline(client.waitForGraph(graph.id), deadline);
        const task = await selectTask(options.pool, taskId);
        const events = await selectEvents(options.pool, 'task', taskId);
        const reclaim = events.find((e) => e.kind === 'reclaimed_after_silence' && e.fence === claimed.claimVersion);
        const nextClaim = events.find((e) => e.kind === 'claimed' && (e.fence ?? 0) > claimed.claimVersion);
        if (!outcome || task.status !== 'verified') {
          violations.push(`${taskId}: lost (status ${task.status} after ${trialDeadlineMs} ms)`);
          continue;
        }
        if (!reclaim?.reason || task.claimVersion <= claimed.claimVersion || task.owner === claimed.owner || !nextClaim) {
          violations.push(`${taskId}: verified without a recorded recovery (claim version ${task.claimVersion}, owner ${task.owner})`);
          continue;
        }
        recovered++;
        const agentPid = reclaim.details.agentPid;
        if (typeof agentPid === 'number' && reclaim.details.agentHost === hostname() && isAlive(agentPid)) {
          orphans++;
          violations.push(`${taskId}: the silent owner's agent (pid ${agentPid}) still runs after recovery`);
        }
        recoveryMs.push(new Date(nextClaim.at).getTime() - rows[0]!.now.getTime());
      } catch (error) {
        violations.push(`${taskId}: ${(error as Error).message}`);
      }
    }
  } finally {
    await fleet.stop();
    await rm(repo, { recursive: true, force: true });
  }
  recoveryMs.sort((a, b) => a - b);
  return drillResult(
    'D2',
    'SIGKILL the owner after it claims',
    {
      trials: options.trials,
      recovered,
      lost: options.trials - recovered,
      orphanAgents: orphans,
      recoveryMedianMs: recoveryMs[Math.floor(recoveryMs.length / 2)] ?? 'n/a',
      recoveryMaxMs: recoveryMs.at(-1) ?? 'n/a',
      heartbeatTimeoutMs,
    },
    violations,
  );
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

