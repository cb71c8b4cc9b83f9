import type pg from 'pg';
import type { Queryable } from '../db/queryable.js';
import { taskClaim } from '../db/sql/claims.js';
import { taskIdOf } from '../tasks/taskId.js';
import { CLAIM_LEASE_MS_DEFAULT } from '../testkit/claims.js';
import { independentTasks, insertGraph } from '../testkit/graphs.js';
import { drillResult, type DrillResult } from './types.js';

/** Claims `taskId` for `owner`; true when this caller got it. */
export type ClaimFn = (db: Queryable, taskId: string, owner: string) => Promise<boolean>;

const batonClaim: ClaimFn = async (db, taskId, owner) => (await taskClaim(db, taskId, owner, CLAIM_LEASE_MS_DEFAULT)) !== undefined;

/**
 * D1: `trials` times, two claimants on separate connections claim the same ready task at once.
 * Passes when every trial has exactly one winner.
 */
export async function runClaimRaceDrill(pool: pg.Pool, options: { trials: number; claim?: ClaimFn }): Promise<DrillResult> {
  const claim = options.claim ?? batonClaim;
  const tasks = independentTasks(options.trials);
  const graphId = await insertGraph(pool, tasks, { prefix: 'd1', actor: 'drill' });
  const [a, b] = [await pool.connect(), await pool.connect()];
  const violations: string[] = [];
  let winners = 0;
  try {
    for (const key of Object.keys(tasks)) {
      const taskId = taskIdOf(graphId, key);
      const results = await Promise.all([claim(a, taskId, 'drill-a'), claim(b, taskId, 'drill-b')]);
      const won = results.filter(Boolean).length;
      winners += won;
      if (won !== 1) violations.push(`${taskId}: ${won} claimants won`);
    }
  } finally {
    a.release();
    b.release();
  }
  return drillResult(
    'D1',
    'two concurrent claims of one ready task',
    { trials: options.trials, winners, violations: violations.length },
    violations,
  );
}
