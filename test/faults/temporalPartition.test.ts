import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createBatonClient, type BatonClient } from '../../src/client.js';
import { waitFor } from '../../src/dev/waitFor.js';
import type { AgentFunction } from '../../src/runners/functionRunner.js';
import { startFaultProxy } from '../../src/testkit/faultProxy.js';
import { functionGraph, uniqueGraphId } from '../../src/testkit/graphs.js';
import type { TaskEvent } from '../../src/tasks/types.js';
import { slowAgent } from '../helpers/agents.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { claimViolations, passingVerifier, recorded, type AgentRun } from './claimInvariants.js';
import { readRuns, spawnFunctionWorker } from './functionWorker.js';

const stack = useTaskStack();
const HEARTBEAT_TIMEOUT_MS = 2_000;
/** Generous bound for each phase on a loaded 2-core machine; not a measured figure. */
const PHASE_TIMEOUT_MS = 60_000;
const CUT_OFF = 'temporal-cut-off';
const STAND_BY = 'temporal-stand-by';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

interface Outcome {
  client: BatonClient;
  graphId: string;
  /** a, b and c: the tasks the cut-off worker held when it was cut off. */
  first: string[];
  events: TaskEvent[];
  runs: AgentRun[];
}

/**
 * Runs a graph on a worker process whose Temporal connection goes through a fault proxy (its
 * database connection does not), blackholes it mid-run on a, b and c, lets a worker connected
 * directly take over, heals, and then lets the cut-off worker's agents finish: each submits under
 * the claim it lost. `beforeLateSubmits` runs just before that (while the new claims still run).
 */
async function partitionFromTemporal(name: string, beforeLateSubmits: () => Promise<void> = async () => {}): Promise<Outcome> {
  const home = await mkdtemp(path.join(tmpdir(), 'baton-temporal-partition-'));
  cleanups.push(() => rm(home, { recursive: true, force: true }));
  const runsFile = path.join(home, 'runs.jsonl');
  const gateFile = path.join(home, 'finish');
  const taskQueue = `${stack.temporal.taskQueue}-${name}`;
  const client = createBatonClient({ db: (await stack.db.login('baton_client')).pool, temporal: stack.temporal.client, taskQueue });
  const login = await stack.db.login('baton_worker');
  const proxy = await startFaultProxy(stack.temporal.address);
  cleanups.push(() => proxy.close());
  // Its agent works a second, then finishes only when the test says, telling Postgres nothing
  // meanwhile (as a quiet agent does), so its submit comes after the partition has healed.
  const cutOff = await spawnFunctionWorker({
    identity: CUT_OFF,
    taskQueue,
    namespace: stack.temporal.namespace,
    temporalAddress: proxy.address,
    databaseUrl: login.url,
    workflowBundle: inject('workflowBundlePath'),
    runsFile,
    agentMs: 1_000,
    gateFile,
  });
  cleanups.push(() => cutOff.stop());

  const graphId = uniqueGraphId('tcut');
  await client.submitGraph(
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
  const firstTasks = async () => (await client.graphTasks(graphId)).filter((t) => first.includes(t.id));
  // Cut once its agents have sent their last heartbeat (at 800 ms) and only wait to finish.
  await waitFor(
    'the cut-off worker to be mid-run on a, b and c',
    async () => {
      const tasks = await firstTasks();
      const midRun = tasks.filter((t) => t.status === 'running' && t.owner === CUT_OFF && Number(t.progress?.waited ?? 0) >= 800);
      if (midRun.length !== 3) throw new Error(tasks.map((t) => `${t.key} ${t.status} ${t.owner}`).join(', '));
    },
    { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 100 },
  );

  // Partition from Temporal only: its heartbeats stop reaching the server, which times the runs
  // out and hands them to the stand-by. The stand-by's agents hold on until the late submits are in.
  proxy.setMode({ kind: 'blackhole' });
  const runs: AgentRun[] = [];
  let lateSubmitsAnswered!: () => void;
  const answered = new Promise<void>((resolve) => (lateSubmitsAnswered = resolve));
  const afterLateSubmits: AgentFunction = async (ctx) => {
    const artifact = await slowAgent(600)(ctx);
    await answered;
    return artifact;
  };
  const standBy = await stack.temporal.createWorker(login.pool, {
    taskQueue,
    identity: STAND_BY,
    agentFunctions: { work: recorded(STAND_BY, runs, afterLateSubmits) },
    verifierFunctions: { pass: passingVerifier },
  });
  const running = standBy.run();
  cleanups.push(async () => {
    lateSubmitsAnswered();
    standBy.shutdown();
    await running;
  });
  await waitFor(
    'the stand-by worker to have taken a, b and c over',
    async () => {
      const tasks = await firstTasks();
      const taken = tasks.filter((t) => t.status === 'running' && t.claimVersion === 2 && t.owner === STAND_BY);
      if (taken.length !== 3) throw new Error(tasks.map((t) => `${t.key} ${t.status} v${t.claimVersion} ${t.owner}`).join(', '));
    },
    { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 200 },
  );
  // Heal (its connections reset first, as a long partition leaves them), then let its agents finish.
  proxy.reset();
  proxy.setMode({ kind: 'pass' });
  await beforeLateSubmits();
  await writeFile(gateFile, '');
  await waitFor(
    "the cut-off worker's late submits to be answered",
    async () => {
      const late = (await client.events(graphId)).filter((e) => e.actor === CUT_OFF && first.includes(e.subjectId) && e.kind !== 'claimed');
      if (late.length !== 3) throw new Error(`${late.length} answered`);
    },
    { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 200 },
  );
  lateSubmitsAnswered();
  await client.waitForGraph(graphId);
  return { client, graphId, first, events: await client.events(graphId), runs: [...readRuns(runsFile), ...runs] };
}

describe('T6, T4, D3: a worker cut off from Temporal mid-run', () => {
  it('is timed out and replaced; after the partition heals its late submits are refused and nothing is lost or done twice', async () => {
    const { client, graphId, first, events, runs } = await partitionFromTemporal('fenced');
    const verified = [...first, `${graphId}/d`];
    expect(claimViolations(verified, events, runs)).toEqual([]);
    for (const taskId of first) {
      const task = await client.task(taskId);
      expect(task).toMatchObject({ status: 'verified', claimVersion: 2, verifiedRevision: `${task.key}-v2` });
      const mine = events.filter((e) => e.subjectId === taskId);
      // Of the cut-off worker, only its claim landed; its late submit was refused, and logged.
      expect(mine.filter((e) => e.actor === CUT_OFF).map((e) => [e.kind, e.fence, e.details.action ?? null])).toEqual([
        ['claimed', 1, null],
        ['stale_write_refused', 1, 'submit'],
      ]);
      const reclaim = mine.find((e) => e.kind === 'reclaimed_after_silence');
      expect(reclaim).toMatchObject({ fence: 1, actor: STAND_BY });
      expect(reclaim!.reason).toMatch(/^owner silent: Temporal heartbeat timeout/);
    }
    expect(
      runs
        .filter((r) => first.includes(r.taskId))
        .map((r) => `${r.worker}@${r.claimVersion}`)
        .sort(),
    ).toEqual([...Array(3).fill(`${CUT_OFF}@1`), ...Array(3).fill(`${STAND_BY}@2`)]);
  });

  it('negative control: with fencing off in the store, the same partition lets the late submits land, and the invariants say so', async () => {
    // A deliberately broken build (this file's database only): the fence checks the status alone.
    const breakFencing = async () => {
      await stack.db.pool.query(
        "CREATE OR REPLACE FUNCTION baton.claim_holds(t baton.tasks, p_owner text, p_claim_version bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$ SELECT t.status = 'running' $$",
      );
    };
    const { graphId, first, events, runs } = await partitionFromTemporal('unfenced', breakFencing);
    const violations = claimViolations([...first, `${graphId}/d`], events, runs);
    for (const taskId of first) {
      expect(violations).toContain(`${taskId}: submitted by ${CUT_OFF} landed at claim version 1 after that claim ended`);
    }
  });
});
