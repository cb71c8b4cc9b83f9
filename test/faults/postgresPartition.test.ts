import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { waitFor } from '../../src/dev/waitFor.js';
import { startFaultProxy, throughProxy, type FaultProxy } from '../../src/testkit/faultProxy.js';
import { functionGraph, uniqueGraphId } from '../../src/testkit/graphs.js';
import type { BatonWorker } from '../../src/worker.js';
import { slowAgent } from '../helpers/agents.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { claimViolations, passingVerifier, recorded, type AgentRun } from './claimInvariants.js';
import { readRuns, spawnFunctionWorker, type FunctionWorkerProcess } from './functionWorker.js';

const stack = useTaskStack();
const HEARTBEAT_TIMEOUT_MS = 2_000;
/** Generous bound for each phase on a loaded 2-core machine; not a measured figure. */
const PHASE_TIMEOUT_MS = 60_000;

let proxy: FaultProxy | undefined;
let cutOff: FunctionWorkerProcess | undefined;
let home: string | undefined;
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  await cutOff?.stop();
  for (const stop of stops.reverse()) await stop();
  await proxy?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

/** A worker connected to Postgres directly, standing by to take over; stopped after the test. */
async function startStandBy(pool: pg.Pool, identity: string): Promise<{ standBy: BatonWorker; runs: AgentRun[] }> {
  const runs: AgentRun[] = [];
  const standBy = await stack.temporal.createWorker(pool, {
    identity,
    agentFunctions: { work: recorded(identity, runs, slowAgent(1_000)) },
    verifierFunctions: { pass: passingVerifier },
  });
  const running = standBy.run();
  stops.push(async () => {
    standBy.shutdown();
    await running;
  });
  return { standBy, runs };
}

describe('T11, T4: a worker cut off from Postgres mid-run', () => {
  it('loses nothing, applies none of its writes twice, and lands none after its claims were taken over', async () => {
    home = await mkdtemp(path.join(tmpdir(), 'baton-pg-partition-'));
    const runsFile = path.join(home, 'runs.jsonl');
    const login = await stack.db.login('baton_worker');
    const target = new URL(login.url);
    proxy = await startFaultProxy(`${target.hostname}:${target.port || 5432}`);
    // The worker to be cut off is its own process, its DATABASE_URL through the proxy.
    cutOff = await spawnFunctionWorker({
      identity: 'pg-cut-off',
      taskQueue: stack.temporal.taskQueue,
      namespace: stack.temporal.namespace,
      temporalAddress: stack.temporal.address,
      databaseUrl: throughProxy(login.url, proxy),
      workflowBundle: inject('workflowBundlePath'),
      runsFile,
      agentMs: 3_000,
    });
    const cutOffId = cutOff.identity;

    const graphId = uniqueGraphId('pgcut');
    await stack.client.submitGraph(
      functionGraph(
        graphId,
        { a: [], b: [], c: [], d: ['a', 'b', 'c'] },
        {
          functions: { run: 'work', verify: 'pass' },
          policy: { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, maxAttempts: 5 },
        },
      ),
      'test',
    );
    const first = ['a', 'b', 'c'].map((k) => `${graphId}/${k}`);
    const firstTasks = async () => (await stack.client.graphTasks(graphId)).filter((t) => first.includes(t.id));
    await waitFor(
      'the cut-off worker to be mid-run on a, b and c',
      async () => {
        const tasks = await firstTasks();
        const midRun = tasks.filter((t) => t.status === 'running' && t.owner === cutOffId && Number(t.progress?.waited ?? 0) >= 400);
        if (midRun.length !== 3) throw new Error(tasks.map((t) => `${t.key} ${t.status} ${t.owner}`).join(', '));
      },
      { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 100 },
    );

    // Partition: its connections stay open but nothing crosses, past the leases' end on the
    // database clock. Meanwhile a worker connected directly stands by to take over.
    proxy.setMode({ kind: 'blackhole' });
    const { standBy, runs } = await startStandBy(login.pool, 'pg-stand-by');
    await waitFor(
      "the cut-off worker's leases to run out on the database clock",
      async () => {
        const { rows } = await stack.db.pool.query(
          'SELECT count(*)::int AS live FROM baton.tasks WHERE id = ANY($1) AND lease_expires_at > now()',
          [first],
        );
        if (rows[0].live !== 0) throw new Error(`${rows[0].live} leases still live`);
      },
      { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 200 },
    );
    // Then its connections are reset and new ones refused: every store call it makes fails.
    expect(proxy.reset()).toBeGreaterThan(0);
    proxy.setMode({ kind: 'refuse' });
    await waitFor(
      'the stand-by worker to hold a, b and c under new claims',
      async () => {
        const tasks = await firstTasks();
        const taken = tasks.filter((t) => t.claimVersion >= 2 && t.owner !== cutOffId);
        if (taken.length !== 3) throw new Error(tasks.map((t) => `${t.key} ${t.status} v${t.claimVersion} ${t.owner}`).join(', '));
      },
      { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 200 },
    );
    proxy.setMode({ kind: 'pass' });

    const result = await stack.client.waitForGraph(graphId);
    expect(result.verified.sort()).toEqual([...first, `${graphId}/d`]);
    const events = await stack.client.events(graphId);
    const allRuns = [...readRuns(runsFile), ...runs];
    expect(claimViolations(result.verified, events, allRuns)).toEqual([]);
    for (const taskId of first) {
      const task = await stack.client.task(taskId);
      // Verified on the stand-by's claim: nothing the cut-off worker wrote under claim 1 after
      // the partition landed (its artifact never reached the store).
      expect(task).toMatchObject({ status: 'verified', claimVersion: 2, verifiedRevision: `${task.key}-v2` });
      const mine = events.filter((e) => e.subjectId === taskId);
      expect(mine.filter((e) => e.actor === cutOffId && e.kind !== 'stale_write_refused').map((e) => [e.kind, e.fence])).toEqual([
        ['claimed', 1],
      ]);
      expect(mine.find((e) => e.kind === 'reclaimed_after_silence')).toMatchObject({ fence: 1, actor: standBy.identity });
    }
    // Each claim's agent ran once: the cut-off worker's once per claim it held, the stand-by's once per takeover.
    expect(
      allRuns
        .filter((r) => first.includes(r.taskId))
        .map((r) => `${r.worker}@${r.claimVersion}`)
        .sort(),
    ).toEqual([...Array(3).fill('pg-cut-off@1'), ...Array(3).fill('pg-stand-by@2')]);
    // Both workers poll the file's task queue: stop them before the next test's graph arrives.
    for (const stop of stops.splice(0).reverse()) await stop();
    await cutOff.stop();
    cutOff = undefined;
  });
  it(
    'hands its tasks to a worker that reaches Postgres, well before its long-running agents end, when the partition never ends in an error (no reset, no refusal)',
    { timeout: 330_000 },
    async () => {
      // The worker keeps polling Temporal while its Postgres calls hang: the tasks it held, and any
      // recovery activity it picks up, must not wait for TCP to give up (about 15 minutes). Its agents
      // work for 150 s, as long-running agents do, so their own end cannot be what frees the tasks.
      const AGENT_MS = 150_000;
      const blackholeHome = await mkdtemp(path.join(tmpdir(), 'baton-pg-blackhole-'));
      stops.push(() => rm(blackholeHome, { recursive: true, force: true }));
      const login = await stack.db.login('baton_worker');
      const target = new URL(login.url);
      const hole = await startFaultProxy(`${target.hostname}:${target.port || 5432}`);
      stops.push(() => hole.close());
      const runsFile = path.join(blackholeHome, 'runs.jsonl');
      const silent = await spawnFunctionWorker(
        {
          identity: 'pg-blackholed',
          taskQueue: stack.temporal.taskQueue,
          namespace: stack.temporal.namespace,
          temporalAddress: stack.temporal.address,
          databaseUrl: throughProxy(login.url, hole),
          workflowBundle: inject('workflowBundlePath'),
          runsFile,
          agentMs: AGENT_MS,
        },
        // Its calls give up after 3 s, as a production worker's do after its query timeout.
        { BATON_QUERY_TIMEOUT_MS: '3000' },
      );
      stops.push(() => silent.stop());
      const graphId = uniqueGraphId('pghole');
      await stack.client.submitGraph(
        functionGraph(
          graphId,
          { a: [], b: [] },
          { functions: { run: 'work', verify: 'pass' }, policy: { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, maxAttempts: 5 } },
        ),
        'test',
      );
      const ids = [`${graphId}/a`, `${graphId}/b`];
      await waitFor(
        'the worker to be mid-run on a and b',
        async () => {
          const tasks = (await stack.client.graphTasks(graphId)).filter((t) => t.status === 'running' && t.owner === silent.identity);
          if (tasks.length !== 2) throw new Error(`${tasks.length} running on it`);
        },
        { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 100 },
      );
      hole.setMode({ kind: 'blackhole' });
      const cutAt = Date.now();
      const { standBy, runs } = await startStandBy(login.pool, 'pg-hole-stand-by');
      await waitFor(
        'the stand-by worker to hold a and b under new claims',
        async () => {
          const tasks = (await stack.client.graphTasks(graphId)).filter((t) => t.claimVersion >= 2 && t.owner === standBy.identity);
          if (tasks.length !== 2) throw new Error(`${tasks.length} taken over`);
        },
        { timeoutMs: AGENT_MS, intervalMs: 200 },
      );
      // Long before its agents could have finished (and their failing calls ended their runs).
      const handoverMs = Date.now() - cutAt;
      process.stderr.write(`[pg blackhole] both tasks held by the stand-by ${handoverMs} ms after the cut\n`);
      expect(handoverMs).toBeLessThan(AGENT_MS);
      const result = await stack.client.waitForGraph(graphId);
      expect(result.verified.sort()).toEqual(ids);
      for (const id of ids) {
        const task = await stack.client.task(id);
        expect(task.owner).toBe('pg-hole-stand-by');
        expect(task.claimVersion).toBeGreaterThanOrEqual(2);
      }
      const events = await stack.client.events(graphId);
      expect(claimViolations(result.verified, events, [...readRuns(runsFile), ...runs])).toEqual([]);
      // Still partitioned: nothing the blackholed worker sent reached the store after its claims.
      expect(events.filter((e) => e.actor === silent.identity && e.kind !== 'claimed').map((e) => e.kind)).toEqual([]);
    },
  );
});
