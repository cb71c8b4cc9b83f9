import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatonClient, type BatonClient } from '../../src/client.js';
import type { BatonWorker } from '../../src/worker.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { connectTestTemporal, type TestTemporal } from '../helpers/temporal.js';

let db: TestDatabase;
let temporal: TestTemporal;
let worker: BatonWorker;
let running: Promise<void>;
let client: BatonClient;
const verifyCalls: string[] = [];
const runFailures = new Map<string, number>();

beforeAll(async () => {
  db = await createTestDatabase();
  temporal = await connectTestTemporal();
  worker = await temporal.createWorker(db.pool, {
    agentFunctions: {
      commit: async (ctx) => {
        await ctx.heartbeat({ step: 'working' });
        return { revision: `rev-${ctx.claim.key}-${ctx.claim.claimVersion}`, testCommand: 'check', agentResult: { exitCode: 0, outputDigest: 'x' } };
      },
      // An artifact the store refuses: no revision.
      noRevision: async () => ({ revision: '', testCommand: 'check', agentResult: { exitCode: 0, outputDigest: 'x' } }),
      // Fails like infrastructure does (not an agent verdict): the first run of each task, or always.
      flaky: async (ctx) => {
        if ((runFailures.get(ctx.claim.taskId) ?? 0) === 0 || ctx.claim.spec.payload === 'always') {
          runFailures.set(ctx.claim.taskId, (runFailures.get(ctx.claim.taskId) ?? 0) + 1);
          throw new Error('worktree vanished');
        }
        return { revision: `rev-${ctx.claim.key}-${ctx.claim.claimVersion}`, testCommand: 'check', agentResult: { exitCode: 0, outputDigest: 'x' } };
      },
    },
    verifierFunctions: {
      pass: async (ctx) => {
        verifyCalls.push(ctx.taskId);
        return { exitCode: 0, outputDigest: 'sha256:ok', outputTail: 'ok' };
      },
      failOnce: async (ctx) => {
        verifyCalls.push(ctx.taskId);
        const failed = verifyCalls.filter((t) => t === ctx.taskId).length === 1;
        return { exitCode: failed ? 1 : 0, outputDigest: 'sha256:x', outputTail: failed ? 'boom' : 'ok' };
      },
    },
  });
  running = worker.run();
  client = createBatonClient({ db: db.pool, temporal: temporal.client, taskQueue: temporal.taskQueue });
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await temporal?.close();
  await db?.drop();
});

describe('task lifecycle on real Temporal and Postgres', () => {
  it('runs a graph: the dependent is released only after both upstream tasks are verified, with revisions pinned', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await client.submitGraph(
      {
        id,
        policy: { heartbeatTimeoutMs: 5_000 },
        tasks: [
          { key: 'request', run: { function: 'commit' }, verify: { function: 'pass' } },
          { key: 'response', run: { function: 'commit' }, verify: { function: 'failOnce' } },
          { key: 'tests', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['request', 'response'] },
        ],
      },
      'test',
    );
    const result = await client.waitForGraph(id);
    expect(result.verified.sort()).toEqual([`${id}/request`, `${id}/response`, `${id}/tests`]);
    const tasks = await client.graphTasks(id);
    const tests = tasks.find((t) => t.key === 'tests')!;
    expect(tests.upstreamRevisions).toEqual({ request: 'rev-request-1', response: 'rev-response-2' });
    const events = await client.events(id);
    const kinds = (taskKey: string) => events.filter((e) => e.subjectId === `${id}/${taskKey}`).map((e) => e.kind);
    expect(kinds('response')).toEqual([
      'created', 'claimed', 'submitted', 'verification_started', 'rejected', 'rerun_after_rejection',
      'claimed', 'submitted', 'verification_started', 'verified',
    ]);
    expect(kinds('tests')).toEqual(['created', 'released', 'claimed', 'submitted', 'verification_started', 'verified']);
    const released = events.find((e) => e.subjectId === `${id}/tests` && e.kind === 'released')!;
    const lastUpstreamVerified = events.filter((e) => e.kind === 'verified' && e.subjectId !== `${id}/tests`).map((e) => e.id);
    expect(released.id).toBeGreaterThan(Math.max(...lastUpstreamVerified));
  });

  it('reruns an upstream task at a new revision, marks its verified dependent stale, and reruns that on the new pins', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await client.submitGraph(
      {
        id,
        policy: { heartbeatTimeoutMs: 5_000 },
        tasks: [
          { key: 'up', run: { function: 'commit' }, verify: { function: 'pass' } },
          { key: 'down', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['up'] },
        ],
      },
      'test',
    );
    await client.waitForGraph(id);
    await client.rerunTask(`${id}/up`, 'operator', 'API v3');
    const settled = async (key: string, status: string) => {
      for (;;) {
        const task = await client.task(`${id}/${key}`);
        if (task.status === status) return task;
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await settled('up', 'verified');
    expect((await settled('down', 'stale')).upstreamRevisions).toEqual({ up: 'rev-up-1' });
    await client.rerunTask(`${id}/down`, 'operator', 'rebuild on up v2');
    const down = await settled('down', 'verified');
    expect(down).toMatchObject({ claimVersion: 2, upstreamRevisions: { up: 'rev-up-2' }, verifiedRevision: 'rev-down-2' });
    const kinds = (await client.events(`${id}/down`)).map((e) => e.kind);
    expect(kinds.slice(-6)).toEqual(['marked_stale', 'rerun_requested', 'claimed', 'submitted', 'verification_started', 'verified']);
  });

  it('gives the claim back when a run fails under the agent, and lets Temporal run it again', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await client.submitGraph({ id, tasks: [{ key: 'work', run: { function: 'flaky' }, verify: { function: 'pass' } }] }, 'test');
    expect((await client.waitForGraph(id)).verified).toEqual([`${id}/work`]);
    const events = await client.events(`${id}/work`);
    expect(events.map((e) => e.kind)).toEqual(['created', 'claimed', 'claim_released', 'claimed', 'submitted', 'verification_started', 'verified']);
    expect(events[2]).toMatchObject({ fence: 1, reason: 'run failed before submitting: worktree vanished' });
    expect(await client.task(`${id}/work`)).toMatchObject({ claimVersion: 2, attempts: 2, verifiedRevision: 'rev-work-2' });
  });

  it('fails the task once a run that keeps failing has used its attempts', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await client.submitGraph(
      { id, policy: { maxAttempts: 2 }, tasks: [{ key: 'work', run: { function: 'flaky' }, verify: { function: 'pass' }, payload: 'always' }] },
      'test',
    );
    expect((await client.waitForGraph(id)).failed).toEqual([`${id}/work`]);
    const kinds = (await client.events(`${id}/work`)).map((e) => e.kind);
    expect(kinds).toEqual(['created', 'claimed', 'claim_released', 'claimed', 'claim_released', 'failed']);
    expect(runFailures.get(`${id}/work`)).toBe(2);
  });

  it("counts an artifact the store refuses as the agent's failure, and fails the task when attempts are used", async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await client.submitGraph({ id, policy: { maxAttempts: 1 }, tasks: [{ key: 'work', run: { function: 'noRevision' }, verify: { function: 'pass' } }] }, 'test');
    expect((await client.waitForGraph(id)).failed).toEqual([`${id}/work`]);
    const events = await client.events(`${id}/work`);
    expect(events.map((e) => e.kind)).toEqual(['created', 'claimed', 'failed']);
    expect(events[2]!.reason).toMatch(/^invalid artifact: .*must name its revision/);
  });
});
