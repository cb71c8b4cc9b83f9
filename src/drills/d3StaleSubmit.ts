import type { Queryable } from '../db/queryable.js';
import type { Fence } from '../db/storeCall.js';
import { taskSubmit } from '../db/sql/ownerWrites.js';
import { eventRead, taskRead } from '../db/sql/reads.js';
import { StaleClaimError } from '../errors.js';
import type { Artifact } from '../tasks/types.js';
import { taskIdOf } from '../tasks/taskId.js';
import { claimFence, reclaim } from '../testkit/claims.js';
import { independentTasks, insertGraph } from '../testkit/graphs.js';
import { runWorkerKillDrill, type WorkerKillDrillOptions } from './d2WorkerKill.js';
import { drillResult, type DrillResult } from './types.js';

/** Submits an artifact under a fence; throws StaleClaimError when refused. */
export type SubmitFn = (db: Queryable, fence: Fence, artifact: Artifact) => Promise<unknown>;

function artifact(revision: string): Artifact {
  return { revision, testCommand: 'drill', agentResult: { exitCode: 0, outputDigest: 'drill' } };
}

/**
 * D3 on the store alone: A claims, goes silent and the task is reclaimed by B; then A's late submit
 * arrives, then B's. Passes when A's is refused and logged, and B's is accepted exactly once. (The
 * tests run it against broken fences too; `baton drill` runs `runFrozenOwnerDrill`.)
 */
export async function runStaleSubmitDrill(db: Queryable, options: { trials: number; submit?: SubmitFn }): Promise<DrillResult> {
  const submit = options.submit ?? taskSubmit;
  const tasks = independentTasks(options.trials);
  const graphId = await insertGraph(db, tasks, { prefix: 'd3', actor: 'drill' });
  const violations: string[] = [];
  let refused = 0;
  let logged = 0;
  let accepted = 0;
  for (const key of Object.keys(tasks)) {
    const taskId = taskIdOf(graphId, key);
    const first = await claimFence(db, taskId, 'owner-a');
    const second = await reclaim(db, first, 'owner-b', { actor: 'drill', reason: 'drill: owner-a silent' });
    try {
      await submit(db, first, artifact('late-a'));
      violations.push(`${taskId}: the old owner's late submit was accepted`);
    } catch (error) {
      if (!(error instanceof StaleClaimError)) throw error;
      refused++;
    }
    await submit(db, second, artifact('b'));
    const task = await taskRead(db, taskId);
    const events = await eventRead(db, 'task', taskId);
    if (events.some((e) => e.kind === 'stale_write_refused' && e.fence === first.claimVersion && e.details.action === 'submit')) logged++;
    else violations.push(`${taskId}: no stale_write_refused event for the old owner's submit`);
    const submits = events.filter((e) => e.kind === 'submitted').length;
    if (task.status === 'submitted' && task.artifact?.revision === 'b' && task.owner === 'owner-b' && submits === 1) accepted++;
    else
      violations.push(
        `${taskId}: expected B's artifact submitted once, found ${task.status} ${task.artifact?.revision} by ${task.owner}, ${submits} submit event(s)`,
      );
  }
  return drillResult('D3', "old owner's submit after a reclaim", { trials: options.trials, refused, logged, accepted }, violations);
}

/**
 * D3 through the real paths, as `baton drill` runs it: a worker process is frozen (SIGSTOP) mid-run;
 * Temporal's heartbeat timeout hands its task to another worker, which recovers the claim and
 * finishes the task; then the frozen worker is resumed and its late writes (heartbeat, submit)
 * arrive. Passes when, in every trial, the task was recovered, a late write of the resumed owner
 * was refused and logged (`stale_write_refused`), and none landed.
 */
export async function runFrozenOwnerDrill(options: Omit<WorkerKillDrillOptions, 'silences' | 'label'>): Promise<DrillResult> {
  const result = await runWorkerKillDrill({ ...options, silences: ['frozen mid-run'], label: 'D3' });
  const violations = [...result.violations];
  const silent = options.trials - Number(result.figures.frozenTrialsRefused);
  if (silent > 0) violations.push(`${silent} resumed owner(s) made no late write that was refused and logged`);
  return drillResult('D3', "a frozen owner's late writes after a reclaim", result.figures, violations);
}
