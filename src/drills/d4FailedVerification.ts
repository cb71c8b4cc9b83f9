import type { Queryable } from '../db/queryable.js';
import { claimTask } from '../db/sql/claimTask.js';
import { recordVerification } from '../db/sql/recordVerification.js';
import { selectGraphTasks } from '../db/sql/selectTasks.js';
import { startVerification } from '../db/sql/startVerification.js';
import { submitTask } from '../db/sql/submitTask.js';
import { CLAIM_LEASE_MS_DEFAULT, claimFence } from '../testkit/claims.js';
import { insertGraph } from '../testkit/graphs.js';
import type { SubmitFn } from './d3StaleSubmit.js';
import { drillResult, type DrillResult } from './types.js';

/**
 * D4: per trial, a diamond (two upstream tasks, one dependent of both, one dependent of that).
 * Upstream `a` passes verification, `b` fails it. Passes when neither dependent is ever ready or
 * claimable afterwards.
 */
export async function runFailedVerificationDrill(db: Queryable, options: { trials: number; submit?: SubmitFn }): Promise<DrillResult> {
  const submit = options.submit ?? submitTask;
  const violations: string[] = [];
  let blockedDependents = 0;
  let claimsRefused = 0;
  for (let trial = 0; trial < options.trials; trial++) {
    const graphId = await insertGraph(db, { a: [], b: [], tests: ['a', 'b'], release: ['tests'] }, { prefix: 'd4', actor: 'drill' });
    for (const [key, exitCode] of [['a', 0], ['b', 1]] as const) {
      const taskId = `${graphId}/${key}`;
      const fence = await claimFence(db, taskId, 'agent');
      await submit(db, fence, {
        revision: `${key}-1`,
        testCommand: 'drill',
        agentResult: { exitCode: 0, outputDigest: 'drill' },
      });
      await startVerification(db, taskId, 'verifier');
      await recordVerification(db, {
        taskId, verifier: 'verifier', claimVersion: fence.claimVersion, revision: `${key}-1`,
        command: 'drill', exitCode, outputDigest: 'drill', outputTail: '',
      });
    }
    const tasks = await selectGraphTasks(db, graphId);
    for (const dependent of tasks.filter((t) => t.dependsOn.length > 0)) {
      if (dependent.status === 'blocked') blockedDependents++;
      else violations.push(`${dependent.id} is ${dependent.status} although ${dependent.key === 'tests' ? 'b' : 'tests'} is not verified`);
      if (await claimTask(db, dependent.id, 'eager-agent', CLAIM_LEASE_MS_DEFAULT)) violations.push(`${dependent.id} was claimed before its dependencies were verified`);
      else claimsRefused++;
    }
  }
  return drillResult('D4', 'failed verification keeps dependents blocked', { trials: options.trials, blockedDependents, claimsRefused }, violations);
}
