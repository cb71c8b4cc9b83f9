import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createBatonClient, type BatonClient } from '../../src/client.js';
import type { Queryable } from '../../src/db/queryable.js';
import { claimRelease } from '../../src/db/sql/claims.js';
import { taskHeartbeat } from '../../src/db/sql/ownerWrites.js';
import { taskRead } from '../../src/db/sql/reads.js';
import type { Fence } from '../../src/db/storeCall.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { StaleClaimError } from '../../src/errors.js';
import { functionGraph, uniqueGraphId } from '../../src/testkit/graphs.js';
import { slowAgent } from '../helpers/agents.js';
import { insertTask } from '../helpers/tasks.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { passingVerifier } from './claimInvariants.js';
import { spawnFunctionWorker, type FunctionWorkerProcess } from './functionWorker.js';

const stack = useTaskStack();
const LEASE_MS = 1_500;
const HOUR_MS = 3_600_000;
/** Generous bound for each phase on a loaded 2-core machine; an hour-long lease would miss it by far. */
const PHASE_TIMEOUT_MS = 60_000;
const LIBFAKETIME_CANDIDATES = [
  process.env.LIBFAKETIME,
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
];

/** libfaketime, or a loud failure with the install hint: the skew tests never skip. */
function libfaketime(): string {
  const found = LIBFAKETIME_CANDIDATES.find((p) => p && existsSync(p));
  if (!found)
    throw new Error(
      'libfaketime is missing: install it with `apt-get update && apt-get install -y faketime` (as .ci/run does), or set LIBFAKETIME',
    );
  return found;
}

let home: string | undefined;
const workers: FunctionWorkerProcess[] = [];
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const w of workers) await w.stop();
  for (const stop of stops.reverse()) await stop();
  if (home) await rm(home, { recursive: true, force: true });
});

/** A worker process on its own queue whose clock is `offset` (libfaketime syntax, e.g. `+1h`) off, and a client for that queue. */
async function skewedWorker(
  name: string,
  offset: string,
): Promise<{ worker: FunctionWorkerProcess; client: BatonClient; taskQueue: string }> {
  home ??= await mkdtemp(path.join(tmpdir(), 'baton-skew-'));
  const taskQueue = `${stack.temporal.taskQueue}-${name}`;
  const worker = await spawnFunctionWorker(
    {
      identity: `skew-${name}`,
      taskQueue,
      namespace: stack.temporal.namespace,
      temporalAddress: stack.temporal.address,
      databaseUrl: (await stack.db.login('baton_worker')).url,
      workflowBundle: inject('workflowBundlePath'),
      runsFile: path.join(home, `${name}-runs.jsonl`),
      agentMs: 4 * LEASE_MS,
    },
    { LD_PRELOAD: libfaketime(), FAKETIME: offset },
  );
  workers.push(worker);
  const client = createBatonClient({ db: (await stack.db.login('baton_client')).pool, temporal: stack.temporal.client, taskQueue });
  return { worker, client, taskQueue };
}

/** The database's clock now, in ms since the epoch. */
async function databaseNow(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  return rows[0]!.now.getTime();
}

interface LeaseSample {
  status: string;
  claimVersion: number;
  heartbeatAt: string;
  /** The lease is exactly `leaseMs` past the last heartbeat, both on the database clock. */
  exact: boolean;
  /**
   * The lease ends no later than `leaseMs` from the database's now: its clock as the row is read, not
   * now(), the start of the reading transaction. A heartbeat that started after the reader did, and
   * committed before the reader's snapshot, is seen with a heartbeat_at later than the reader's now()
   * (on a loaded machine the gap between the two is long enough to be hit).
   */
  bounded: boolean;
}

async function sampleLease(db: Queryable, taskId: string, leaseMs: number): Promise<LeaseSample> {
  const { rows } = await db.query(
    `SELECT status, claim_version, heartbeat_at::text AS heartbeat_at,
            lease_expires_at - heartbeat_at = $2 * interval '1 millisecond' AS exact,
            lease_expires_at <= clock_timestamp() + $2 * interval '1 millisecond' AS bounded
       FROM baton.tasks WHERE id = $1`,
    [taskId, leaseMs],
  );
  const r = rows[0]!;
  return { status: r.status, claimVersion: r.claim_version, heartbeatAt: r.heartbeat_at, exact: r.exact, bounded: r.bounded };
}

/** Lease samples of `taskId` while it runs under claim version 1, until it is no longer running. */
async function sampleWhileRunning(db: Queryable, taskId: string): Promise<LeaseSample[]> {
  const samples: LeaseSample[] = [];
  await waitFor(
    `${taskId} to finish running`,
    async () => {
      const sample = await sampleLease(db, taskId, LEASE_MS);
      if (sample.status === 'running') {
        samples.push(sample);
        throw new Error('still running');
      }
    },
    { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 100 },
  );
  return samples;
}

/** Samples of a lease that was not taken from the database clock. */
const leaseViolations = (samples: LeaseSample[]) => samples.filter((s) => !s.exact || !s.bounded);

/** Broken on purpose (test only): a heartbeat that takes the lease from the worker's clock, `workerNow`. */
async function heartbeatOnWorkerClock(db: Queryable, fence: Fence, leaseMs: number, workerNow: number): Promise<void> {
  await db.query(
    `UPDATE baton.tasks SET heartbeat_at = now(), lease_expires_at = to_timestamp($4 / 1000.0) + $3 * interval '1 millisecond'
      WHERE id = $1 AND claim_version = $2 AND status = 'running'`,
    [fence.taskId, fence.claimVersion, leaseMs, workerNow],
  );
}

describe('T6: leases use the database clock, whatever the worker clock says', () => {
  it('a worker an hour behind and one an hour ahead keep their claims by heartbeat: no early reclaim, leases on the database clock', async () => {
    for (const [name, offset, direction] of [
      ['behind', '-1h', -1],
      ['ahead', '+1h', 1],
    ] as const) {
      const { worker, client } = await skewedWorker(name, offset);
      // The fake clock is really in force in the worker process.
      expect(Math.sign(worker.startClock - (await databaseNow(stack.db.pool)))).toBe(direction);
      expect(Math.abs(worker.startClock - (await databaseNow(stack.db.pool)))).toBeGreaterThan(HOUR_MS / 2);

      const graphId = uniqueGraphId(`skew-${name}`);
      await client.submitGraph(
        functionGraph(
          graphId,
          { t: [] },
          { functions: { run: 'work', verify: 'pass' }, policy: { heartbeatTimeoutMs: LEASE_MS, maxAttempts: 3 } },
        ),
        'test',
      );
      const taskId = `${graphId}/t`;
      await waitFor(
        `${taskId} to be claimed`,
        async () => {
          if ((await client.task(taskId)).status === 'ready') throw new Error('not claimed yet');
        },
        { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 50 },
      );
      const samples = await sampleWhileRunning(stack.db.pool, taskId);

      // The run outlasted several leases, kept alive by heartbeats each setting the lease from the database's now().
      expect(new Set(samples.map((s) => s.heartbeatAt)).size).toBeGreaterThanOrEqual(3);
      expect(leaseViolations(samples)).toEqual([]);
      expect(samples.every((s) => s.claimVersion === 1)).toBe(true);
      expect((await client.waitForGraph(graphId)).verified).toEqual([taskId]);
      expect(await client.task(taskId)).toMatchObject({ status: 'verified', claimVersion: 1, verifiedRevision: 't-v1' });
      // Never reclaimed: one claim, by the skewed worker, submitted and verified.
      const events = (await client.events(taskId)).map((e) => [e.kind, e.actor]);
      expect(events).toEqual([
        ['created', 'test'],
        ['claimed', worker.identity],
        ['submitted', worker.identity],
        ['verification_started', `${worker.identity}/verifier`],
        ['verified', `${worker.identity}/verifier`],
      ]);
    }
  });

  it('a worker an hour ahead that dies mid-run leaves a lease that runs out on the database clock, and its task is recovered', async () => {
    const { worker, client, taskQueue } = await skewedWorker('ahead-dies', '+1h');
    const graphId = uniqueGraphId('skew-dies');
    await client.submitGraph(
      functionGraph(
        graphId,
        { t: [] },
        { functions: { run: 'work', verify: 'pass' }, policy: { heartbeatTimeoutMs: LEASE_MS, maxAttempts: 3 } },
      ),
      'test',
    );
    const taskId = `${graphId}/t`;
    await waitFor(
      `${taskId} to be mid-run`,
      async () => {
        const task = await client.task(taskId);
        if (task.status !== 'running' || Number(task.progress?.waited ?? 0) < 400) throw new Error(`${task.status}`);
      },
      { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 50 },
    );
    worker.child.kill('SIGKILL');
    await worker.exited;
    expect(leaseViolations([await sampleLease(stack.db.pool, taskId, LEASE_MS)])).toEqual([]);
    // What the workflow's recovery reads (task_view.lease_expired) turns true within the bound, not an hour on.
    await waitFor(
      `${taskId}'s lease to read expired`,
      async () => {
        const task = await taskRead(stack.db.pool, taskId);
        if (task.status === 'running' && !task.leaseExpired) throw new Error('lease still live');
      },
      { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 100 },
    );

    const standBy = await stack.temporal.createWorker((await stack.db.login('baton_worker')).pool, {
      taskQueue,
      identity: 'skew-stand-by',
      agentFunctions: { work: slowAgent(500) },
      verifierFunctions: { pass: passingVerifier },
    });
    const running = standBy.run();
    stops.push(async () => {
      standBy.shutdown();
      await running;
    });
    expect((await client.waitForGraph(graphId)).verified).toEqual([taskId]);
    expect(await client.task(taskId)).toMatchObject({ claimVersion: 2, verifiedRevision: 't-v2' });
    const events = await client.events(taskId);
    expect(events.find((e) => e.kind === 'reclaimed_after_silence')).toMatchObject({ fence: 1, actor: 'skew-stand-by' });
  });

  it('negative control: a lease taken from a skewed worker clock is reclaimed early (behind) or outlives its owner (ahead)', async () => {
    for (const [offsetMs, expected] of [
      [-HOUR_MS, 'premature'],
      [HOUR_MS, 'extended'],
    ] as const) {
      const task = await insertTask(stack.db.pool, { status: 'running', owner: 'skewed' });
      const fence = { taskId: task.id, owner: 'skewed', claimVersion: task.claimVersion };

      // Baton's heartbeat: the worker sends no time, the database sets the lease.
      await taskHeartbeat(stack.db.pool, fence, LEASE_MS);
      expect(leaseViolations([await sampleLease(stack.db.pool, task.id, LEASE_MS)])).toEqual([]);
      expect((await taskRead(stack.db.pool, task.id)).leaseExpired).toBe(false);

      // The broken variant: the same heartbeat, the lease from the worker's (skewed) clock.
      await heartbeatOnWorkerClock(stack.db.pool, fence, LEASE_MS, Date.now() + offsetMs);
      expect(leaseViolations([await sampleLease(stack.db.pool, task.id, LEASE_MS)])).toHaveLength(1);
      const after = await taskRead(stack.db.pool, task.id);
      if (expected === 'premature') {
        // The owner heartbeated a moment ago, yet the workflow's recovery check sees a dead lease
        // and reclaims: the live owner's next heartbeat is refused.
        expect(after.leaseExpired).toBe(true);
        expect(
          await claimRelease(stack.db.pool, {
            taskId: task.id,
            claimVersion: fence.claimVersion,
            actor: 'recovery',
            kind: 'reclaimed_after_silence',
            reason: 'lease expired',
          }),
        ).toBe(true);
        await expect(taskHeartbeat(stack.db.pool, fence, LEASE_MS)).rejects.toBeInstanceOf(StaleClaimError);
      } else {
        // The lease reaches an hour past the database's now: a dead owner would hold the task that long.
        expect(after.leaseExpired).toBe(false);
        expect(new Date(after.leaseExpiresAt!).getTime() - (await databaseNow(stack.db.pool))).toBeGreaterThan(HOUR_MS / 2);
      }
    }
  });
});
