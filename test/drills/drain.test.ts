// A deploy drains: `baton worker` told to stop (SIGTERM) takes no new work, lets its running agents
// finish within `--shutdown-grace`, and hands back what is still running then, so another worker
// takes it at once instead of after a heartbeat timeout.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatonClient, type BatonClient } from '../../src/client.js';
import type { TaskEvent } from '../../src/tasks/types.js';
import { uniqueGraphId } from '../../src/testkit/graphs.js';
import { commitAll, createScriptedRepo, steppingAgent } from '../../src/testkit/scriptedRepo.js';
import { startWorkerFleet, type WorkerFleet } from '../../src/testkit/workerFleet.js';
import { claimViolations } from '../faults/claimInvariants.js';
import { graphVerified, taskMidRun } from '../helpers/graphStates.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack();

/** A command task of a graph spec, as submitted. */
interface TaskInput {
  key: string;
  run: { command: string };
  verify: { command: string };
  dependsOn?: string[];
}

/**
 * Long enough that a task handed back only after it (a worker that hands nothing back) would
 * time the test out: every recovery seen here is a hand-back's.
 */
const HEARTBEAT_TIMEOUT_MS = 300_000;

let repo: string;
const fleets: WorkerFleet[] = [];

beforeAll(async () => {
  repo = await createScriptedRepo();
});

afterAll(async () => {
  await Promise.all(fleets.map((f) => f.stop()));
  if (repo) await rm(repo, { recursive: true, force: true });
});

async function fleetOf(size: number, graceSeconds: number): Promise<{ fleet: WorkerFleet; client: BatonClient }> {
  const fleet = await startWorkerFleet({ name: 'drain', env: stack.workerEnv, size, args: ['--shutdown-grace', String(graceSeconds)] });
  fleets.push(fleet);
  return { fleet, client: createBatonClient({ db: stack.db.pool, temporal: stack.temporal.client, taskQueue: fleet.taskQueue }) };
}

async function submit(client: BatonClient, tasks: TaskInput[]): Promise<string> {
  const graph = await client.submitGraph(
    { id: uniqueGraphId('drain'), repo, policy: { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, maxAttempts: 1 }, tasks },
    'drain-test',
  );
  return graph.id;
}

/**
 * One task whose agent runs `command` (writing `<key>.txt`), on two workers that drain with
 * `graceSeconds`: once it is mid-run, its owner is sent SIGTERM and must exit 0. Returns what the
 * test reads after.
 */
async function stopOwnerMidRun(key: string, command: string, graceSeconds: number) {
  const { fleet, client } = await fleetOf(2, graceSeconds);
  const graphId = await submit(client, [{ key, run: { command }, verify: { command: `test -f ${key}.txt` } }]);
  const running = (await taskMidRun(client, graphId))!;
  const victim = fleet.ownerOf(running.owner);
  victim.child.kill('SIGTERM');
  await victim.exited;
  expect(victim.child.exitCode, victim.output()).toBe(0);
  const [task] = await graphVerified(client, graphId);
  return { running, victim, task: task!, events: await client.events(task!.id) };
}

const ofKind = (events: TaskEvent[], kind: string) => events.filter((e) => e.kind === kind);

describe('a worker told to stop drains', () => {
  it('hands back a run that outlives its grace, and another worker claims it at once', async () => {
    // Under its first claim the agent would take hours, so only a hand-back ends that claim; later claims finish quickly.
    const firstClaimNeverEnds = `if [ "$BATON_CLAIM_VERSION" = 1 ]; then n=100000; else n=5; fi; for i in $(seq 1 $n); do echo "step $i"; sleep 0.05; done; echo long > long.txt; ${commitAll('long')}`;
    const { running, victim, task, events } = await stopOwnerMidRun('long', firstClaimNeverEnds, 1);
    expect(victim.output()).toMatch(/SIGTERM: draining\. No new work is taken; running agents and verifications have 1 s to finish/);
    const [handBack, ...more] = ofKind(events, 'handed_back');
    expect(more).toEqual([]);
    expect(handBack).toMatchObject({ actor: victim.identity, fence: running.claimVersion });
    expect(handBack!.reason).toMatch(/is shutting down and the run had not finished: handed back/);
    const next = ofKind(events, 'claimed').find((e) => e.fence === running.claimVersion + 1)!;
    expect(next.actor).not.toBe(victim.identity);
    // Taken again long before the heartbeat timeout could have handed it on (the database's clock).
    const handedOnMs = new Date(next.at).getTime() - new Date(handBack!.at).getTime();
    expect(handedOnMs).toBeLessThan(HEARTBEAT_TIMEOUT_MS);
    console.log(`hand-back to the next claim: ${handedOnMs} ms`);
    expect(ofKind(events, 'reclaimed_after_silence')).toEqual([]);
    // The hand-back gave its attempt back: with one attempt allowed, the task still ran to the end.
    expect(task.attempts).toBe(1);
    expect(claimViolations([task.id], events, [])).toEqual([]);
  }, 900_000);

  it('lets a run that ends within its grace submit, and hands nothing back', async () => {
    const { running, victim, events } = await stopOwnerMidRun('short', steppingAgent(60, 'short.txt'), 600);
    expect(ofKind(events, 'submitted')).toEqual([expect.objectContaining({ actor: victim.identity, fence: running.claimVersion })]);
    expect(ofKind(events, 'handed_back')).toEqual([]);
    expect(ofKind(events, 'claimed')).toHaveLength(1);
    // Verified by the worker still running: the draining one took no new work.
    expect(ofKind(events, 'verification_started')[0]!.actor).not.toMatch(new RegExp(`^${victim.identity}`));
  }, 900_000);

  it('survives a rolling restart of every worker while a 20-task graph runs: all verified, nothing cut off without a hand-back', async () => {
    const { fleet, client } = await fleetOf(3, 1);
    // Four chains of five: four tasks at a time, each a few seconds of agent work.
    const tasks: TaskInput[] = [];
    for (let chain = 0; chain < 4; chain++) {
      for (let link = 0; link < 5; link++) {
        const key = `c${chain}-${link}`;
        tasks.push({
          key,
          run: { command: steppingAgent(60, `${key}.txt`) },
          verify: { command: `test -f ${key}.txt` },
          dependsOn: link ? [`c${chain}-${link - 1}`] : [],
        });
      }
    }
    const graphId = await submit(client, tasks);
    // One by one, each original worker is stopped, while it owns a run mid-way where one does, and replaced.
    const originals = [...fleet.workers];
    const left = new Set(originals.map((w) => w.identity));
    /** The claims each stopped worker held as it was told to stop. */
    const heldAtStop: { owner: string; taskId: string; claimVersion: number }[] = [];
    while (left.size) {
      const running = await taskMidRun(client, graphId, left);
      const victim = running ? fleet.ownerOf(running.owner) : fleet.workers.find((w) => left.has(w.identity))!;
      left.delete(victim.identity);
      // Its claims as it is told to stop, the one just seen mid-run included (it may have finished since).
      const held = (await client.graphTasks(graphId)).filter((t) => t.status === 'running' && t.owner === victim.identity);
      for (const t of running && !held.some((h) => h.id === running.id) ? [...held, running] : held)
        heldAtStop.push({ owner: victim.identity, taskId: t.id, claimVersion: t.claimVersion });
      await fleet.killAndReplace(victim, 'SIGTERM');
      expect(victim.child.exitCode, victim.output()).toBe(0);
    }
    expect(heldAtStop.length).toBeGreaterThan(0);
    const verified = await graphVerified(client, graphId);
    expect(verified).toHaveLength(20);
    const events = await client.events(graphId);
    expect(
      claimViolations(
        verified.map((t) => t.id),
        events,
        [],
      ),
    ).toEqual([]);
    // No run was cut off without a hand-back: each claim a stopped worker held ended with its own
    // submit (finished within the grace) or its hand-back, and none waited out a heartbeat timeout.
    expect(ofKind(events, 'reclaimed_after_silence')).toEqual([]);
    for (const held of heldAtStop) {
      const ended = events.filter((e) => e.subjectId === held.taskId && e.fence === held.claimVersion && e.actor === held.owner);
      expect(
        ended.filter((e) => e.kind === 'submitted' || e.kind === 'handed_back').map((e) => e.kind),
        `${held.taskId}@${held.claimVersion} of ${held.owner}`,
      ).toHaveLength(1);
    }
    console.log(`rolling restart: ${heldAtStop.length} runs held at a stop, ${ofKind(events, 'handed_back').length} handed back`);
    expect(verified.every((t) => t.attempts === 1)).toBe(true);
  }, 1_200_000);
});
