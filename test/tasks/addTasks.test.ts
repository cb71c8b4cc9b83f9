// U11: tasks added to a running graph by an operator: validated with the graph's own, written in one
// transaction, released at once when their dependencies are verified (else when they are), verified
// like any task; a bad addition is refused whole and writes nothing.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/waitFor.js';
import { InvalidGraphError, NotFoundError } from '../../src/errors.js';
import { workflowControl } from '../../src/workflowControl.js';
import { call, tokenFor, useAgentServer } from '../api/helpers.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack({
  worker: () => ({
    agentFunctions: {
      commit: async (ctx) => ({
        revision: `rev-${ctx.claim.key}-${ctx.claim.claimVersion}`,
        testCommand: 'pass',
        agentResult: { exitCode: 0, outputDigest: 'x' },
      }),
    },
    verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'sha256:ok', outputTail: 'ok' }) },
  }),
});

// `baton serve` as the operator's page uses it: adding tasks through it needs the workers' Temporal.
const api = useAgentServer(() => stack.db, {
  workflows: async () => workflowControl(stack.temporal.client, stack.temporal.taskQueue),
});

const task = (key: string, dependsOn: string[] = []) => ({ key, run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn });
const taskCount = async (graphId: string) => (await stack.client.graphTasks(graphId)).length;

describe('tasks added to a running graph (U11)', () => {
  it('runs and verifies added tasks: one whose dependency is verified at once, one behind it when that is, with revisions pinned', async () => {
    const id = `added-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph({ id, tasks: [task('base')] }, 'test');
    expect((await stack.client.waitForGraph(id)).verified).toEqual([`${id}/base`]);

    const added = await stack.client.addTasks(id, { tasks: [task('docs', ['base']), task('publish', ['docs'])] }, 'operator');
    expect(added).toEqual([
      { taskId: `${id}/docs`, status: 'ready' },
      { taskId: `${id}/publish`, status: 'blocked' },
    ]);
    const publish = await waitFor(
      'the added tasks verified',
      async () => {
        const tasks = await stack.client.graphTasks(id);
        const last = tasks.find((t) => t.key === 'publish')!;
        if (!tasks.every((t) => t.status === 'verified')) throw new Error(tasks.map((t) => `${t.key} ${t.status}`).join(', '));
        return last;
      },
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    expect(publish.upstreamRevisions).toEqual({ docs: 'rev-docs-1' });
    expect((await stack.client.graphs({ limit: 1000 })).find((g) => g.id === id)).toMatchObject({ state: 'verified', tasks: 3 });
    const events = await stack.client.events(id);
    expect(events.find((e) => e.subjectId === id && e.kind === 'tasks_added')).toMatchObject({
      actor: 'operator',
      reason: '2 task(s) added: docs, publish',
    });
    expect(events.find((e) => e.subjectId === `${id}/docs` && e.kind === 'created')?.details).toMatchObject({ added: true });
  });

  it('adds tasks through the agent API for an admin token, recorded under its identity; a view token is refused', async () => {
    const id = `added-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph({ id, tasks: [task('base')] }, 'test');
    await stack.client.waitForGraph(id);
    const viewer = await tokenFor(stack.db, 'add-viewer', ['view']);
    expect((await call(api.url, viewer.secret, 'graph.add', { graphId: id, tasks: [task('late', ['base'])] })).status).toBe(403);
    const admin = await tokenFor(stack.db, 'add-admin', ['admin']);
    const bad = await call(api.url, admin.secret, 'graph.add', { graphId: id, tasks: [task('late', ['nowhere'])] });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain("unknown dependency 'nowhere'");
    expect(await taskCount(id)).toBe(1);
    const added = await call(api.url, admin.secret, 'graph.add', { graphId: id, tasks: [task('late', ['base'])] });
    expect(added).toMatchObject({ status: 200, body: { added: [{ taskId: `${id}/late`, status: 'ready' }] } });
    await waitFor(
      'the added task verified',
      async () => {
        const late = await stack.client.task(`${id}/late`);
        if (late.status !== 'verified') throw new Error(`late is ${late.status}`);
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect((await stack.client.events(id)).find((e) => e.kind === 'tasks_added')?.actor).toBe('add-admin');
  });

  it('refuses a whole addition with every problem named, and writes nothing: a key taken, an unknown dependency, a cycle', async () => {
    const id = `added-${randomUUID().slice(0, 8)}`;
    await stack.client.submitGraph({ id, tasks: [task('base')] }, 'test');
    const refused = await stack.client
      .addTasks(id, { tasks: [task('base'), task('x', ['nowhere']), task('y', ['z']), task('z', ['y'])] }, 'operator')
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidGraphError);
    const problems = (refused as InvalidGraphError).problems.join('\n');
    expect(problems).toContain("task 'base': duplicate key");
    expect(problems).toContain("unknown dependency 'nowhere'");
    expect(problems).toMatch(/dependency cycle: (y -> z -> y|z -> y -> z)/);
    expect(await taskCount(id)).toBe(1);
    await expect(stack.client.addTasks(`missing-${randomUUID().slice(0, 8)}`, { tasks: [task('a')] }, 'operator')).rejects.toThrow(
      NotFoundError,
    );
  });
});
