import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { graphSubmit } from '../../src/db/sql/graphs.js';
import { taskFailAttempt } from '../../src/db/sql/ownerWrites.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { parseGraphSpec } from '../../src/tasks/graphSpec.js';
import { claimFence } from '../../src/testkit/claims.js';
import type { TaskRow } from '../../src/tasks/types.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { taskWorkflowId } from '../../src/tasks/taskId.js';

const verifyCalls: string[] = [];
/** Per task: the first run of a `gated` agent waits for this before it commits. */
const gates = new Map<string, Promise<void>>();
const runFailures = new Map<string, number>();
/** How long a task may take to reach a status after a rerun. */
const SETTLE_TIMEOUT_MS = 60_000;

const stack = useTaskStack({
  worker: () => ({
    agentFunctions: {
      commit: async (ctx) => {
        await ctx.heartbeat({ step: 'working' });
        return {
          revision: `rev-${ctx.claim.key}-${ctx.claim.claimVersion}`,
          testCommand: 'check',
          agentResult: { exitCode: 0, outputDigest: 'x' },
        };
      },
      gated: async (ctx) => {
        const gate = ctx.claim.claimVersion === 1 ? gates.get(ctx.claim.taskId) : undefined;
        let open = false;
        void gate?.then(() => (open = true));
        while (gate && !open) {
          await ctx.heartbeat({ step: 'waiting for the test' });
          await Promise.race([gate, new Promise((r) => setTimeout(r, 500))]);
        }
        return {
          revision: `rev-${ctx.claim.key}-${ctx.claim.claimVersion}`,
          testCommand: 'check',
          agentResult: { exitCode: 0, outputDigest: 'x' },
        };
      },
      // An artifact the store refuses: no revision.
      noRevision: async () => ({ revision: '', testCommand: 'check', agentResult: { exitCode: 0, outputDigest: 'x' } }),
      // Fails like infrastructure does (not an agent verdict): the first run of each task, or always.
      flaky: async (ctx) => {
        if ((runFailures.get(ctx.claim.taskId) ?? 0) === 0 || ctx.claim.spec.payload === 'always') {
          runFailures.set(ctx.claim.taskId, (runFailures.get(ctx.claim.taskId) ?? 0) + 1);
          throw new Error('worktree vanished');
        }
        return {
          revision: `rev-${ctx.claim.key}-${ctx.claim.claimVersion}`,
          testCommand: 'check',
          agentResult: { exitCode: 0, outputDigest: 'x' },
        };
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
  }),
});

/** Waits until the task `key` of graph `id` has `status` (and meets `also`), and returns it. */
const settled = (id: string, key: string, status: string, also: (task: TaskRow) => boolean = () => true) =>
  waitFor(
    `${key} to be ${status}`,
    async () => {
      const task = await stack.client.task(`${id}/${key}`);
      if (task.status !== status || !also(task)) throw new Error(`${key} is ${task.status} at claim version ${task.claimVersion}`);
      return task;
    },
    { timeoutMs: SETTLE_TIMEOUT_MS, intervalMs: 100 },
  );

describe('task lifecycle on real Temporal and Postgres', () => {
  it('runs a graph: the dependent is released only after both upstream tasks are verified, with revisions pinned', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
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
    const result = await stack.client.waitForGraph(id);
    expect(result.verified.sort()).toEqual([`${id}/request`, `${id}/response`, `${id}/tests`]);
    const tasks = await stack.client.graphTasks(id);
    const tests = tasks.find((t) => t.key === 'tests')!;
    expect(tests.upstreamRevisions).toEqual({ request: 'rev-request-1', response: 'rev-response-2' });
    const events = await stack.client.events(id);
    const kinds = (taskKey: string) => events.filter((e) => e.subjectId === `${id}/${taskKey}`).map((e) => e.kind);
    expect(kinds('response')).toEqual([
      'created',
      'claimed',
      'submitted',
      'verification_started',
      'rejected',
      'rerun_after_rejection',
      'claimed',
      'submitted',
      'verification_started',
      'verified',
    ]);
    expect(kinds('tests')).toEqual(['created', 'released', 'claimed', 'submitted', 'verification_started', 'verified']);
    const released = events.find((e) => e.subjectId === `${id}/tests` && e.kind === 'released')!;
    const lastUpstreamVerified = events.filter((e) => e.kind === 'verified' && e.subjectId !== `${id}/tests`).map((e) => e.id);
    expect(released.id).toBeGreaterThan(Math.max(...lastUpstreamVerified));
  });

  // Temporal's client leaves a listener on the signal of every call it makes: waits that shared one
  // signal piled them up over a graph's tasks (Node warned past 33 on the 50,000-task bench).
  it('awaits a graph wider than the waits it keeps open without piling listeners on one signal', async () => {
    const id = `wide-${randomUUID().slice(0, 8)}`;
    const width = 48;
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      await stack.client.submitGraph(
        {
          id,
          tasks: Array.from({ length: width }, (_, i) => ({ key: `t${i}`, run: { function: 'commit' }, verify: { function: 'pass' } })),
        },
        'test',
      );
      const result = await stack.client.waitForGraph(id, { signal: AbortSignal.timeout(SETTLE_TIMEOUT_MS * 5) });
      expect(result.verified).toHaveLength(width);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
  });

  it('with policy mark, reruns an upstream task at a new revision and leaves its verified dependent stale until an operator reruns it', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        policy: { heartbeatTimeoutMs: 5_000, onUpstreamChange: 'mark' },
        tasks: [
          { key: 'up', run: { function: 'commit' }, verify: { function: 'pass' } },
          { key: 'down', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['up'] },
        ],
      },
      'test',
    );
    await stack.client.waitForGraph(id);
    await stack.client.rerunTask(`${id}/up`, 'operator', 'API v3');
    // Once the rerun's workflow has ended, nothing else would move `down`.
    expect(await stack.temporal.client.workflow.getHandle(taskWorkflowId(`${id}/up`)).result()).toMatchObject({ status: 'verified' });
    expect(await stack.client.task(`${id}/down`)).toMatchObject({ status: 'stale', upstreamRevisions: { up: 'rev-up-1' } });
    expect((await stack.client.events(`${id}/down`)).at(-1)).toMatchObject({ kind: 'marked_stale' });
    await stack.client.rerunTask(`${id}/down`, 'operator', 'rebuild on up v2');
    const down = await settled(id, 'down', 'verified');
    expect(down).toMatchObject({ claimVersion: 2, upstreamRevisions: { up: 'rev-up-2' }, verifiedRevision: 'rev-down-2' });
    const kinds = (await stack.client.events(`${id}/down`)).map((e) => e.kind);
    expect(kinds.slice(-6)).toEqual(['marked_stale', 'rerun_requested', 'claimed', 'submitted', 'verification_started', 'verified']);
  });

  it('with policy rerun (the default), re-runs and re-verifies every stale dependent on the new pins, transitively, without a person', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        policy: { heartbeatTimeoutMs: 5_000 },
        tasks: [
          { key: 'up', run: { function: 'commit' }, verify: { function: 'pass' } },
          { key: 'mid', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['up'] },
          { key: 'down', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['mid'] },
        ],
      },
      'test',
    );
    await stack.client.waitForGraph(id);
    await stack.client.rerunTask(`${id}/up`, 'operator', 'API v3');
    const down = await settled(id, 'down', 'verified', (t) => t.claimVersion === 2);
    expect(down).toMatchObject({ upstreamRevisions: { mid: 'rev-mid-2' }, verifiedRevision: 'rev-down-2' });
    expect(await stack.client.task(`${id}/mid`)).toMatchObject({
      status: 'verified',
      upstreamRevisions: { up: 'rev-up-2' },
      verifiedRevision: 'rev-mid-2',
    });
    const kinds = async (key: string) => (await stack.client.events(`${id}/${key}`)).map((e) => e.kind).slice(6);
    expect(await kinds('mid')).toEqual(['marked_stale', 'rerun_after_stale', 'claimed', 'submitted', 'verification_started', 'verified']);
    // down was made stale with mid (transitively), and re-run only once mid was verified again.
    expect(await kinds('down')).toEqual(['marked_stale', 'rerun_after_stale', 'claimed', 'submitted', 'verification_started', 'verified']);
    const events = await stack.client.events(id);
    const at = (key: string, kind: string) => events.filter((e) => e.subjectId === `${id}/${key}` && e.kind === kind).at(-1)!.id;
    expect(at('down', 'rerun_after_stale')).toBeGreaterThan(at('mid', 'verified'));
  });

  it('never verifies a dependent that was running when its upstream task was verified at a new revision: it is re-run on the new pin', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    let openGate = () => {};
    gates.set(`${id}/down`, new Promise<void>((resolve) => (openGate = resolve)));
    await stack.client.submitGraph(
      {
        id,
        policy: { heartbeatTimeoutMs: 5_000 },
        tasks: [
          { key: 'up', run: { function: 'commit' }, verify: { function: 'pass' } },
          { key: 'down', run: { function: 'gated' }, verify: { function: 'pass' }, dependsOn: ['up'] },
        ],
      },
      'test',
    );
    await settled(id, 'down', 'running');
    await stack.client.rerunTask(`${id}/up`, 'operator', 'API v3');
    await settled(id, 'up', 'verified', (t) => t.verifiedRevision === 'rev-up-2');
    openGate(); // down's first run now submits, built on rev-up-1
    expect((await stack.client.waitForGraph(id)).verified).toContain(`${id}/down`);
    expect(await stack.client.task(`${id}/down`)).toMatchObject({
      claimVersion: 2,
      upstreamRevisions: { up: 'rev-up-2' },
      verifiedRevision: 'rev-down-2',
    });
    const events = await stack.client.events(`${id}/down`);
    expect(events.map((e) => e.kind).slice(2)).toEqual([
      'claimed',
      'submitted',
      'verification_started',
      'marked_stale',
      'rerun_after_stale',
      'claimed',
      'submitted',
      'verification_started',
      'verified',
    ]);
    expect(events.find((e) => e.kind === 'marked_stale')!.reason).toBe(
      'revision rev-down-1 passed on superseded pins: up is verified at rev-up-2, not rev-up-1',
    );
  });

  it('gives the claim back when a run fails under the agent, and lets Temporal run it again', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph({ id, tasks: [{ key: 'work', run: { function: 'flaky' }, verify: { function: 'pass' } }] }, 'test');
    expect((await stack.client.waitForGraph(id)).verified).toEqual([`${id}/work`]);
    const events = await stack.client.events(`${id}/work`);
    expect(events.map((e) => e.kind)).toEqual([
      'created',
      'claimed',
      'claim_released',
      'claimed',
      'submitted',
      'verification_started',
      'verified',
    ]);
    expect(events[2]).toMatchObject({ fence: 1, reason: 'run failed before submitting: worktree vanished' });
    expect(await stack.client.task(`${id}/work`)).toMatchObject({ claimVersion: 2, attempts: 2, verifiedRevision: 'rev-work-2' });
  });

  it('fails the task once a run that keeps failing has used its attempts', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        policy: { maxAttempts: 2 },
        tasks: [{ key: 'work', run: { function: 'flaky' }, verify: { function: 'pass' }, payload: 'always' }],
      },
      'test',
    );
    expect((await stack.client.waitForGraph(id)).failed).toEqual([`${id}/work`]);
    const kinds = (await stack.client.events(`${id}/work`)).map((e) => e.kind);
    expect(kinds).toEqual(['created', 'claimed', 'claim_released', 'claimed', 'claim_released', 'failed']);
    expect(runFailures.get(`${id}/work`)).toBe(2);
  });

  it('never claims a task past its attempts when its workflow starts on it as ready: it fails the task instead', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    const spec = { id, policy: { maxAttempts: 1 }, tasks: [{ key: 'work', run: { function: 'commit' }, verify: { function: 'pass' } }] };
    // Another claimer used the task's only attempt before the graph's workflow started: ready, no attempts left.
    await graphSubmit(stack.db.pool, parseGraphSpec(spec), 'test');
    await taskFailAttempt(stack.db.pool, await claimFence(stack.db.pool, `${id}/work`, 'another-claimer'), 'gave up', true);
    expect(await stack.client.task(`${id}/work`)).toMatchObject({ status: 'ready', attempts: 1 });

    await stack.client.submitGraph(spec, 'test');
    expect((await stack.client.waitForGraph(id)).failed).toEqual([`${id}/work`]);
    const kinds = (await stack.client.events(`${id}/work`)).map((e) => e.kind);
    expect(kinds).toEqual(['created', 'claimed', 'attempt_failed', 'failed']);
  });

  it("starts a fresh count of attempts on an operator's rerun: a task failed for its attempts runs again", async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    // flaky fails the first run of each task: with one attempt, the task fails.
    await stack.client.submitGraph(
      { id, policy: { maxAttempts: 1 }, tasks: [{ key: 'work', run: { function: 'flaky' }, verify: { function: 'pass' } }] },
      'test',
    );
    expect((await stack.client.waitForGraph(id)).failed).toEqual([`${id}/work`]);
    await stack.client.rerunTask(`${id}/work`, 'operator', 'the worktree is back');
    const work = await settled(id, 'work', 'verified');
    expect(work).toMatchObject({ claimVersion: 2, attempts: 1, verifiedRevision: 'rev-work-2' });
    expect((await stack.client.events(`${id}/work`)).map((e) => e.kind)).toEqual([
      'created',
      'claimed',
      'claim_released',
      'failed',
      'rerun_requested',
      'claimed',
      'submitted',
      'verification_started',
      'verified',
    ]);
  });

  it('does not count re-runs for upstream changes against the attempts: a one-attempt dependent follows every new upstream revision', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        policy: { heartbeatTimeoutMs: 5_000, maxAttempts: 1 },
        tasks: [
          { key: 'up', run: { function: 'commit' }, verify: { function: 'pass' } },
          { key: 'down', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['up'] },
        ],
      },
      'test',
    );
    await stack.client.waitForGraph(id);
    for (const round of [2, 3]) {
      await stack.client.rerunTask(`${id}/up`, 'operator', `API v${round + 1}`);
      const down = await settled(id, 'down', 'verified', (t) => t.claimVersion === round);
      expect(down).toMatchObject({ attempts: 1, upstreamRevisions: { up: `rev-up-${round}` }, verifiedRevision: `rev-down-${round}` });
    }
  });

  it("counts an artifact the store refuses as the agent's failure, and fails the task when attempts are used", async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      { id, policy: { maxAttempts: 1 }, tasks: [{ key: 'work', run: { function: 'noRevision' }, verify: { function: 'pass' } }] },
      'test',
    );
    expect((await stack.client.waitForGraph(id)).failed).toEqual([`${id}/work`]);
    const events = await stack.client.events(`${id}/work`);
    expect(events.map((e) => e.kind)).toEqual(['created', 'claimed', 'failed']);
    expect(events[2]!.reason).toMatch(/^invalid artifact: .*must name its revision/);
  });
});
