import { rm } from 'node:fs/promises';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { createBatonClient } from '../client.js';
import type { Queryable } from '../db/queryable.js';
import { taskClaim } from '../db/sql/claims.js';
import { taskSubmit } from '../db/sql/ownerWrites.js';
import { eventRead, taskRead, graphReadTasks } from '../db/sql/reads.js';
import { verificationRecord, verificationStart } from '../db/sql/verification.js';
import { waitFor } from '../dev/waitFor.js';
import { silentLog } from '../log.js';
import { taskIdOf } from '../tasks/taskId.js';
import { commitAll, createScriptedRepo } from '../testkit/scriptedRepo.js';
import { startWorkerFleet } from '../testkit/workerFleet.js';
import { CLAIM_LEASE_MS_DEFAULT, claimFence } from '../testkit/claims.js';
import { insertGraph, uniqueGraphId } from '../testkit/graphs.js';
import type { SubmitFn } from './d3StaleSubmit.js';
import { drillResult, type DrillOutput, type DrillResult } from './types.js';

/**
 * D4 on the store alone (the tests run it against broken variants; `baton drill` runs
 * `runRejectedCommitDrill`): per trial, a diamond (two upstream tasks, one dependent of both, one dependent of that).
 * Upstream `a` passes verification, `b` fails it. Passes when neither dependent is ever ready or
 * claimable afterwards.
 */
export async function runFailedVerificationDrill(db: Queryable, options: { trials: number; submit?: SubmitFn }): Promise<DrillResult> {
  const submit = options.submit ?? taskSubmit;
  const violations: string[] = [];
  let blockedDependents = 0;
  let claimsRefused = 0;
  for (let trial = 0; trial < options.trials; trial++) {
    const graphId = await insertGraph(db, { a: [], b: [], tests: ['a', 'b'], release: ['tests'] }, { prefix: 'd4', actor: 'drill' });
    for (const [key, exitCode] of [
      ['a', 0],
      ['b', 1],
    ] as const) {
      const taskId = taskIdOf(graphId, key);
      const fence = await claimFence(db, taskId, 'agent');
      await submit(db, fence, {
        revision: `${key}-1`,
        testCommand: 'drill',
        agentResult: { exitCode: 0, outputDigest: 'drill' },
      });
      await verificationStart(db, taskId, 'verifier');
      await verificationRecord(db, {
        taskId,
        verifier: 'verifier',
        claimVersion: fence.claimVersion,
        revision: `${key}-1`,
        command: 'drill',
        exitCode,
        outputDigest: 'drill',
        outputTail: '',
      });
    }
    const tasks = await graphReadTasks(db, graphId);
    for (const dependent of tasks.filter((t) => t.dependsOn.length > 0)) {
      if (dependent.status === 'blocked') blockedDependents++;
      else violations.push(`${dependent.id} is ${dependent.status} although ${dependent.key === 'tests' ? 'b' : 'tests'} is not verified`);
      if (await taskClaim(db, dependent.id, 'eager-agent', CLAIM_LEASE_MS_DEFAULT))
        violations.push(`${dependent.id} was claimed before its dependencies were verified`);
      else claimsRefused++;
    }
  }
  return drillResult(
    'D4',
    'failed verification keeps dependents blocked',
    { trials: options.trials, blockedDependents, claimsRefused },
    violations,
  );
}

interface RejectedCommitDrillOptions extends DrillOutput {
  pool: pg.Pool;
  temporal: Client;
  /** DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE for the worker processes. */
  workerEnv: Record<string, string>;
  trials: number;
  /** (Default: 2 s) */
  heartbeatTimeoutMs?: number;
}

/** How long one trial may take before it counts as failed. */
const REJECTED_TRIAL_DEADLINE_MS = 120_000;

/**
 * D4 through the real paths, as `baton drill` runs it: worker processes run real agents that
 * commit; the verifier runs `b`'s verify command in a clean checkout of b's commit, and it fails
 * (the commit lacks what the check needs). Passes when, in every trial, b is rejected by a real
 * verification (a non-zero exit, recorded by a verifier other than its owner) and the dependents
 * of b stay blocked and are never claimed, while a, with a passing check, is verified.
 */
export async function runRejectedCommitDrill(options: RejectedCommitDrillOptions): Promise<DrillResult> {
  const progress = options.progress ?? options.log ?? silentLog;
  const repo = await createScriptedRepo();
  const fleet = await startWorkerFleet({ name: 'drill-d4', env: options.workerEnv, size: 2 });
  const client = createBatonClient({ db: options.pool, temporal: options.temporal, taskQueue: fleet.taskQueue });
  const violations: string[] = [];
  let rejected = 0;
  let blockedDependents = 0;
  try {
    for (let trial = 0; trial < options.trials; trial++) {
      const graph = await client.submitGraph(
        {
          id: uniqueGraphId('d4'),
          repo,
          policy: { heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? 2_000, maxAttempts: 1, onVerificationFailure: 'fail' },
          tasks: [
            { key: 'a', run: { command: `echo a > a.txt; ${commitAll('a')}` }, verify: { command: 'test -f a.txt' } },
            { key: 'b', run: { command: `echo b > b.txt; ${commitAll('b')}` }, verify: { command: 'test -f b-reviewed.txt' } },
            { key: 'tests', dependsOn: ['a', 'b'], run: { command: `echo t > t.txt; ${commitAll('t')}` }, verify: { command: 'true' } },
            { key: 'release', dependsOn: ['tests'], run: { command: `echo r > r.txt; ${commitAll('r')}` }, verify: { command: 'true' } },
          ],
        },
        'drill',
      );
      const id = (key: string) => taskIdOf(graph.id, key);
      try {
        const settled = await waitFor(
          'a verified and b failed',
          async () => {
            const [a, b] = await Promise.all([taskRead(options.pool, id('a')), taskRead(options.pool, id('b'))]);
            if (a.status !== 'verified' || b.status !== 'failed') throw new Error(`a ${a.status}, b ${b.status}`);
            return b;
          },
          { timeoutMs: REJECTED_TRIAL_DEADLINE_MS, intervalMs: 100 },
        );
        const { rows } = await options.pool.query<{ passed: boolean; exit_code: number; verifier: string; revision: string }>(
          'SELECT passed, exit_code, verifier, revision FROM baton.verifications WHERE task_id = $1',
          [id('b')],
        );
        const real = rows.filter(
          (r) => !r.passed && r.exit_code !== 0 && r.verifier !== settled.owner && r.revision === settled.artifact?.revision,
        );
        if (real.length === 1) rejected++;
        else
          violations.push(`${id('b')}: expected one failed verification of its commit by another identity, found ${JSON.stringify(rows)}`);
        for (const key of ['tests', 'release']) {
          const task = await taskRead(options.pool, id(key));
          const claims = (await eventRead(options.pool, 'task', id(key))).filter((e) => e.kind === 'claimed');
          if (task.status === 'blocked' && claims.length === 0) blockedDependents++;
          else violations.push(`${id(key)} is ${task.status} with ${claims.length} claim(s) although b failed verification`);
        }
      } catch (error) {
        violations.push(`${graph.id}: ${(error as Error).message}`);
      } finally {
        // The dependents would wait for b forever: end the trial's workflows.
        await client.cancelGraph(graph.id, 'drill', 'D4 trial done').catch(() => undefined);
      }
      progress(`D4 trial ${trial + 1}/${options.trials}`);
    }
  } finally {
    await fleet.stop();
    await rm(repo, { recursive: true, force: true });
  }
  return drillResult('D4', 'a real verifier rejects a real commit', { trials: options.trials, rejected, blockedDependents }, violations);
}
