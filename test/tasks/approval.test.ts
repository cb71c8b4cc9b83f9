// U11: approval gates on real Temporal and Postgres. A task whose verify names an approval waits
// after its check passes until a person with the approve scope decides; the decision is its
// verification, by the person (never its agent); a wait that runs out decides as its policy says.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/waitFor.js';
import type { TaskRow } from '../../src/tasks/types.js';
import { workflowControl } from '../../src/workflowControl.js';
import { call, tokenFor, useAgentServer } from '../api/helpers.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack({
  worker: () => ({
    agentFunctions: {
      commit: async (ctx) => ({
        revision: `rev-${ctx.claim.key}-${ctx.claim.claimVersion}`,
        testCommand: 'check',
        agentResult: { exitCode: 0, outputDigest: 'x' },
      }),
    },
    verifierFunctions: {
      pass: async () => ({ exitCode: 0, outputDigest: 'sha256:ok', outputTail: 'all 12 tests passed' }),
      fail: async () => ({ exitCode: 1, outputDigest: 'sha256:no', outputTail: '3 tests failed' }),
    },
  }),
});
// The agent API as `baton serve` runs it, telling the task's workflow of a decision through Temporal.
const api = useAgentServer(() => stack.db, {
  workflows: async () => workflowControl(stack.temporal.client, stack.temporal.taskQueue),
});

/** Waits until task `taskId` has `status`, and returns it. */
const reaches = (taskId: string, status: string) =>
  waitFor(
    `${taskId} to be ${status}`,
    async (): Promise<TaskRow> => {
      const task = await stack.client.task(taskId);
      if (task.status !== status) throw new Error(`${taskId} is ${task.status} (claim version ${task.claimVersion})`);
      return task;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );

const kindsOf = async (taskId: string) => (await stack.client.events(taskId)).map((e) => e.kind);

describe('approval gates (U11)', () => {
  it('holds a task whose check passed until a person approves it: then it is verified by that person and its dependents run', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        tasks: [
          { key: 'deploy', run: { function: 'commit' }, verify: { function: 'pass', approval: true } },
          { key: 'announce', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['deploy'] },
        ],
      },
      'test',
    );
    await reaches(`${id}/deploy`, 'awaiting_approval');
    const { secret } = await tokenFor(stack.db, 'alice', ['approve']);
    const waiting = await call(api.url, secret, 'approvals.list');
    expect(waiting.status).toBe(200);
    expect(waiting.body.filter((a: { graphId: string }) => a.graphId === id)).toEqual([
      expect.objectContaining({ taskId: `${id}/deploy`, key: 'deploy', revision: 'rev-deploy-1', dueAt: null, decision: null }),
    ]);
    // Nothing downstream moves while the person has not decided.
    expect((await stack.client.task(`${id}/announce`)).status).toBe('blocked');

    const approved = await call(api.url, secret, 'task.approve', { taskId: `${id}/deploy`, reason: 'release window open' });
    expect(approved).toMatchObject({ status: 200, body: { taskId: `${id}/deploy`, status: 'verified', released: [`${id}/announce`] } });
    const result = await stack.client.waitForGraph(id);
    expect(result.verified.sort()).toEqual([`${id}/announce`, `${id}/deploy`]);

    const deployEvents = await stack.client.events(`${id}/deploy`);
    expect(deployEvents.map((e) => e.kind)).toEqual([
      'created',
      'claimed',
      'submitted',
      'verification_started',
      'approval_requested',
      'approved',
      'verified',
    ]);
    expect(deployEvents.find((e) => e.kind === 'approved')).toMatchObject({ actor: 'alice', reason: 'release window open' });
    expect(deployEvents.find((e) => e.kind === 'verified')?.actor).toBe('alice');
    // The check's pass and the person's decision are both on record, each by who made it.
    const shown = await call(api.url, (await tokenFor(stack.db, 'ops', ['view'])).secret, 'task.show', { taskId: `${id}/deploy` });
    expect(
      shown.body.verifications.map((v: { command: string; passed: boolean; verifier: string }) => [v.command, v.passed, v.verifier]),
    ).toEqual([
      ['function:pass', true, expect.stringMatching(/\/verifier$/)],
      ['baton: approval by alice', true, 'alice'],
    ]);
    expect(shown.body.approvals).toEqual([
      expect.objectContaining({ decision: 'approved', decidedBy: 'alice', reason: 'release window open' }),
    ]);
    // The dependent was released by the approval, not before it.
    const announceEvents = await stack.client.events(`${id}/announce`);
    const releasedAt = announceEvents.find((e) => e.kind === 'released')!.id;
    expect(releasedAt).toBeGreaterThan(deployEvents.find((e) => e.kind === 'approved')!.id);
  });

  it('refuses a decision from a token without the approve scope and from the task’s own agent; a rejection is its verification’s failure', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        policy: { onVerificationFailure: 'fail' },
        tasks: [{ key: 'migrate', run: { function: 'commit', agent: 'bot' }, verify: { approval: {} } }],
      },
      'test',
    );
    const taskId = `${id}/migrate`;
    await reaches(taskId, 'awaiting_approval');

    const viewer = await tokenFor(stack.db, 'carol', ['view', 'read']);
    const byViewer = await call(api.url, viewer.secret, 'task.approve', { taskId });
    expect(byViewer.status).toBe(403);
    // The agent's identity, even on a token with the approve scope: it produced the artifact (T7).
    const agent = await tokenFor(stack.db, 'bot', ['approve']);
    const byAgent = await call(api.url, agent.secret, 'task.approve', { taskId });
    expect(byAgent.status).toBe(400);
    expect(byAgent.body.detail).toContain('bot produced the artifact and may not approve or reject it');
    // A rejection needs its reason.
    const approver = await tokenFor(stack.db, 'alice', ['approve']);
    expect((await call(api.url, approver.secret, 'task.reject', { taskId })).status).toBe(400);
    expect((await stack.client.task(taskId)).status).toBe('awaiting_approval');
    expect(await kindsOf(taskId)).not.toContain('approved');

    const rejected = await call(api.url, approver.secret, 'task.reject', { taskId, reason: 'the migration drops a column still read' });
    expect(rejected).toMatchObject({ status: 200, body: { status: 'rejected', released: [] } });
    // The graph's policy (fail) acts on it, as on any rejected verification.
    expect((await stack.client.waitForGraph(id)).failed).toEqual([taskId]);
    const events = await stack.client.events(taskId);
    expect(events.map((e) => e.kind).slice(-4)).toEqual(['approval_requested', 'approval_refused', 'rejected', 'failed']);
    expect(events.find((e) => e.kind === 'approval_refused')).toMatchObject({
      actor: 'alice',
      reason: 'the migration drops a column still read',
    });
    // Decided once: a second decision is refused and changes nothing.
    const again = await call(api.url, approver.secret, 'task.approve', { taskId });
    expect(again.status).toBe(409);
    expect((await stack.client.task(taskId)).status).toBe('failed');
  });

  it('negative control: the same approval by another identity with the same scope is accepted', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      { id, tasks: [{ key: 'migrate', run: { function: 'commit', agent: 'bot' }, verify: { approval: true } }] },
      'test',
    );
    await reaches(`${id}/migrate`, 'awaiting_approval');
    // From the command line (the client), as an operator identity.
    const outcome = await stack.client.decideApproval(`${id}/migrate`, 'alice', 'approved');
    expect(outcome).toMatchObject({ status: 'verified', workflowTold: true });
    expect((await stack.client.waitForGraph(id)).verified).toEqual([`${id}/migrate`]);
  });

  it('a wait that runs out under onTimeout fail fails the task, decided by the worker on the database clock', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        tasks: [
          { key: 'ship', run: { function: 'commit' }, verify: { function: 'pass', approval: { timeoutMs: 1_500, onTimeout: 'fail' } } },
        ],
      },
      'test',
    );
    expect((await stack.client.waitForGraph(id)).failed).toEqual([`${id}/ship`]);
    const events = await stack.client.events(`${id}/ship`);
    expect(events.map((e) => e.kind).slice(-4)).toEqual(['approval_requested', 'approval_timed_out', 'rejected', 'failed']);
    const timedOut = events.find((e) => e.kind === 'approval_timed_out')!;
    expect(timedOut.actor).toMatch(/\/verifier$/);
    expect(timedOut.reason).toMatch(/^nobody decided by .*: the approval policy says fail$/);
    // Not before it was due: the decision came 1.5 s or more after the request, on the database's clock.
    const requested = events.find((e) => e.kind === 'approval_requested')!;
    expect(Date.parse(timedOut.at) - Date.parse(requested.at)).toBeGreaterThanOrEqual(1_500);
  });

  it('a wait that runs out under onTimeout reject is a rejection: the graph policy runs the agent again, then gives up', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        policy: { maxAttempts: 2, onVerificationFailure: 'rerun' },
        tasks: [{ key: 'ship', run: { function: 'commit' }, verify: { approval: { timeoutMs: 1_000 } } }],
      },
      'test',
    );
    expect((await stack.client.waitForGraph(id)).failed).toEqual([`${id}/ship`]);
    const kinds = await kindsOf(`${id}/ship`);
    expect(kinds.filter((k) => k === 'approval_timed_out')).toHaveLength(2);
    expect(kinds).toContain('rerun_after_rejection');
    expect((await stack.client.task(`${id}/ship`)).claimVersion).toBe(2);
  });

  it('a failing check never reaches a person', async () => {
    const id = `g-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph(
      {
        id,
        policy: { onVerificationFailure: 'fail' },
        tasks: [{ key: 'ship', run: { function: 'commit' }, verify: { function: 'fail', approval: true } }],
      },
      'test',
    );
    expect((await stack.client.waitForGraph(id)).failed).toEqual([`${id}/ship`]);
    expect(await kindsOf(`${id}/ship`)).not.toContain('approval_requested');
  });
});
