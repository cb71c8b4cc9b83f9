// U11: subtasks an agent proposes from its run (task.propose), end to end: real command agents call
// their run's endpoint through `baton api` on a real worker, Postgres and Temporal. The graph's
// policy.subtasks decides: added and started at once (accept), kept for an operator (review), or
// refused. A subtask runs and is verified as its proposer is: an agent that names another check,
// agent or tool allowance for it is refused, and the store gives it its proposer's whatever it is sent.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/waitFor.js';
import { git } from '../../src/runners/git.js';
import { taskWorkflowId } from '../../src/tasks/taskId.js';
import { MAX_TASKS_PER_GRAPH } from '../../src/tasks/graphSpec.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import { commitAll } from '../../src/testkit/scriptedRepo.js';
import { workflowControl } from '../../src/workflowControl.js';
import { call, tokenFor, useAgentServer } from '../api/helpers.js';
import { useCommandWorkspace } from '../helpers/commandWorkspace.js';
import { useTaskStack } from '../helpers/taskStack.js';

const workspace = useCommandWorkspace('subtasks');
const stack = useTaskStack({ worker: () => ({ workDir: workspace.workDir }) });
// `baton serve` as operators use it, reaching the workers' Temporal.
const api = useAgentServer(() => stack.db, {
  workflows: async () => workflowControl(stack.temporal.client, stack.temporal.taskQueue),
});

/**
 * One agent for every task of a graph, as a coding agent is: it reads its task, and only the task
 * keyed `plan` runs `proposals` (shell lines calling `baton api task.propose`); each commits what it read.
 */
const agent = (proposals: string[]) =>
  [
    'set -e',
    'baton api context > context.json',
    `if node -e 'process.exit(JSON.parse(require("fs").readFileSync("context.json", "utf8")).key === "plan" ? 0 : 1)'; then`,
    ...proposals,
    'fi',
    commitAll('agent work'),
  ].join('\n');

/** A shell line proposing `tasks`, its answer (or refusal) kept in `file`. */
const propose = (tasks: unknown[], file: string) =>
  `baton api task.propose '${JSON.stringify({ tasks })}' > ${file} 2>&1 || echo "exit $?" >> ${file}`;

const graphTasks = async (id: string) => Object.fromEntries((await stack.client.graphTasks(id)).map((t) => [t.key, t]));

async function allVerified(id: string, count: number) {
  return waitFor(
    `${count} tasks of ${id} verified`,
    async () => {
      const tasks = await stack.client.graphTasks(id);
      if (tasks.length !== count || !tasks.every((t) => t.status === 'verified'))
        throw new Error(tasks.map((t) => `${t.key} ${t.status}`).join(', '));
      return graphTasks(id);
    },
    { timeoutMs: 180_000, intervalMs: 250 },
  );
}

describe('subtasks proposed by agents (U11)', () => {
  it('adds and runs them at once under policy accept, each as its proposer runs and is verified; an agent naming its own check is refused', async () => {
    const id = `subtasks-${randomUUID().slice(0, 8)}`;
    const command = agent([
      propose(
        [
          { key: 'sub-a', description: 'write part a', payload: { part: 'a' }, dependsOn: ['plan'] },
          { key: 'sub-b', description: 'write part b', dependsOn: ['sub-a'] },
        ],
        'proposal.json',
      ),
      // Gaming: a subtask with a check that always passes, and one with more tools than its proposer.
      propose([{ key: 'sneak', verify: 'true' }], 'sneak.txt'),
      propose([{ key: 'tooled', tools: { allow: ['deploy'] } }], 'tooled.txt'),
    ]);
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        policy: { maxAttempts: 1, onVerificationFailure: 'fail', subtasks: 'accept' },
        tasks: [{ key: 'plan', description: 'plan the work', run: { command, agent: 'planner' }, verify: 'test -s context.json' }],
      },
      'test',
    );
    const tasks = await allVerified(id, 3);
    expect(Object.keys(tasks).sort()).toEqual(['plan', 'sub-a', 'sub-b']);
    // Each subtask's spec is its proposer's, with the agent's description and payload.
    expect(tasks['sub-a']!.spec).toEqual({ ...tasks.plan!.spec, description: 'write part a', payload: { part: 'a' } });
    expect(tasks['sub-b']!.spec).toEqual({ ...tasks.plan!.spec, description: 'write part b' });
    expect(tasks['sub-b']!.upstreamRevisions).toEqual({ 'sub-a': tasks['sub-a']!.verifiedRevision });

    const file = async (name: string) => git(workspace.repo, ['show', `${tasks.plan!.verifiedRevision}:${name}`]);
    expect(JSON.parse(await file('proposal.json'))).toMatchObject({
      status: 'accepted',
      added: [
        { taskId: `${id}/sub-a`, status: 'blocked' },
        { taskId: `${id}/sub-b`, status: 'blocked' },
      ],
    });
    expect(await file('sneak.txt')).toContain('its verify is not the proposal');
    expect(await file('tooled.txt')).toContain('its tools is not the proposal');
    const events = await stack.client.events(id);
    expect(events.find((e) => e.kind === 'subtasks_proposed')).toMatchObject({
      subjectId: `${id}/plan`,
      actor: 'planner',
      details: expect.objectContaining({ keys: ['sub-a', 'sub-b'], policy: 'accept' }),
    });
    expect(events.find((e) => e.subjectId === `${id}/sub-a` && e.kind === 'created')?.details).toMatchObject({
      added: true,
      proposer: `${id}/plan`,
    });
    // plan's workflow, whose verification released sub-a, woke sub-a's workflow (started when it was added) at once.
    const history = async (key: string) =>
      (await stack.temporal.client.workflow.getHandle(taskWorkflowId(`${id}/${key}`)).fetchHistory()).events!;
    const activities = (await history('plan')).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
    expect(activities).toContain('batonWakeTasks');
    const signals = (await history('sub-a')).map((e) => e.workflowExecutionSignaledEventAttributes?.signalName);
    expect(signals).toContain('batonRecheckTask');
    // The subtask's run was its own agent's, verified by the worker, never by the proposer.
    expect(events.find((e) => e.subjectId === `${id}/sub-b` && e.kind === 'verified')?.actor).not.toBe('planner');
  });

  it('keeps them for an operator under policy review: accepted by an admin (never their proposer), declined with a reason the agent reads', async () => {
    const id = `subtasks-${randomUUID().slice(0, 8)}`;
    const command = agent([
      propose([{ key: 'docs', description: 'document it', dependsOn: ['plan'] }], 'first.json'),
      propose([{ key: 'rewrite', description: 'rewrite everything' }], 'second.json'),
    ]);
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        policy: { maxAttempts: 1, onVerificationFailure: 'fail' },
        tasks: [{ key: 'plan', run: { command, agent: 'planner' }, verify: 'test -s context.json' }],
      },
      'test',
    );
    expect((await stack.client.waitForGraph(id)).verified).toEqual([`${id}/plan`]);
    expect(Object.keys(await graphTasks(id))).toEqual(['plan']);
    const [first, second] = await stack.client.proposals({ graphId: id });
    expect(first).toMatchObject({
      taskId: `${id}/plan`,
      proposedBy: 'planner',
      status: 'pending',
      tasks: [{ key: 'docs', description: 'document it', dependsOn: ['plan'] }],
    });
    expect(second).toMatchObject({ status: 'pending', tasks: [{ key: 'rewrite', dependsOn: [] }] });

    const viewer = await tokenFor(stack.db, 'proposal-viewer', ['view']);
    expect((await call(api.url, viewer.secret, 'proposals.list', { graphId: id })).body).toHaveLength(2);
    expect((await call(api.url, viewer.secret, 'proposal.accept', { proposalId: first!.id })).status).toBe(403);
    const proposer = await tokenFor(stack.db, 'planner', ['admin']);
    const own = await call(api.url, proposer.secret, 'proposal.accept', { proposalId: first!.id });
    expect(own.status).toBe(400);
    expect(own.body.detail).toContain('planner proposed it and may not decide it');
    const lead = await tokenFor(stack.db, 'lead', ['admin']);
    const inbox = await call(api.url, lead.secret, 'inbox.wait', { afterId: 0 });
    expect(
      inbox.body.items.filter((i: { why: string; subjectId: string }) => i.why === 'proposal' && i.subjectId === `${id}/plan`),
    ).toHaveLength(2);

    const accepted = await call(api.url, lead.secret, 'proposal.accept', { proposalId: first!.id, reason: 'docs are due' });
    expect(accepted).toMatchObject({
      status: 200,
      body: { status: 'accepted', decidedBy: 'lead', added: [{ taskId: `${id}/docs`, status: 'ready' }] },
    });
    const declined = await stack.client.decideProposal(second!.id, 'operator', false, 'out of scope');
    expect(declined).toMatchObject({ status: 'declined', decidedBy: 'operator', reason: 'out of scope', added: [] });
    await expect(stack.client.decideProposal(first!.id, 'operator', false, 'changed my mind')).rejects.toThrow(
      /was accepted by lead already/,
    );

    const tasks = await allVerified(id, 2);
    expect(tasks.docs!.upstreamRevisions).toEqual({ plan: tasks.plan!.verifiedRevision });
    expect((await stack.client.events(id)).find((e) => e.kind === 'tasks_added')).toMatchObject({
      actor: 'lead',
      details: expect.objectContaining({ proposal: first!.id }),
    });
    // The proposer hears of both decisions.
    const heard = await call(api.url, proposer.secret, 'inbox.wait', { afterId: 0 });
    const answers = heard.body.items.filter(
      (i: { why: string; subjectId: string }) => i.why === 'proposal_answered' && i.subjectId === `${id}/plan`,
    );
    expect(answers.map((a: { details: { decision: string } }) => a.details.decision)).toEqual(['accepted', 'declined']);
    expect(await stack.client.proposals({ graphId: id })).toEqual([]);
  });

  it('refuses proposals under policy refuse, recording nothing but the refusal', async () => {
    const id = `subtasks-${randomUUID().slice(0, 8)}`;
    const command = agent([propose([{ key: 'more' }], 'refused.txt')]);
    await stack.client.submitGraph(
      {
        id,
        repo: workspace.repo,
        policy: { subtasks: 'refuse' },
        tasks: [{ key: 'plan', run: { command, agent: 'planner' }, verify: 'test -s refused.txt' }],
      },
      'test',
    );
    expect((await stack.client.waitForGraph(id)).verified).toEqual([`${id}/plan`]);
    const plan = (await graphTasks(id)).plan!;
    expect(await git(workspace.repo, ['show', `${plan.verifiedRevision}:refused.txt`])).toContain(
      `graph ${id} takes no subtasks from its agents (policy.subtasks: refuse)`,
    );
    expect(Object.keys(await graphTasks(id))).toEqual(['plan']);
    expect(await stack.client.proposals({ graphId: id, all: true })).toEqual([]);
  });

  it('keeps a graph within its 50,000 tasks however its subtasks nest', async () => {
    const keys = Object.fromEntries(Array.from({ length: MAX_TASKS_PER_GRAPH - 10 }, (_, i) => [`t${i}`, []]));
    const id = await insertGraph(stack.db.pool, keys, { prefix: 'nesting', policy: { subtasks: 'accept' } });
    const propose = async (n: number) => {
      const tasks = Array.from({ length: n }, (_, i) => ({ key: `more-${n}-${i}`, dependsOn: [] }));
      const { rows } = await stack.db.pool.query(
        `SELECT baton.task_propose(t, 'planner', $2::jsonb) AS outcome FROM baton.tasks t WHERE t.id = $1`,
        [`${id}/t0`, JSON.stringify(tasks)],
      );
      return rows[0].outcome;
    };
    expect(await propose(11)).toEqual({
      refusal: 'limit',
      reason: `graph ${id} would pass ${MAX_TASKS_PER_GRAPH} tasks (MAX_TASKS_PER_GRAPH) with 11 more`,
    });
    expect(await propose(10)).toMatchObject({ status: 'accepted' });
    expect(await propose(1)).toMatchObject({ refusal: 'limit' });
  });

  it("gives a subtask its proposer's run, check and tools whatever the store is sent", async () => {
    const id = `subtasks-${randomUUID().slice(0, 8)}`;
    const spec = {
      run: { command: 'true', agent: 'planner' },
      verify: { command: 'make test' },
      tools: { allow: ['search'], maxCalls: 3 },
    };
    await stack.client.submitGraph({ id, repo: workspace.repo, policy: { subtasks: 'accept' }, tasks: [{ key: 'plan', ...spec }] }, 'test');
    await stack.client.cancelGraph(id, 'test', 'only its row is used here');
    // What a caller past the API's validation could send: another check, another agent, more tools.
    const forged = [
      {
        key: 'forged',
        description: 'looks harmless',
        dependsOn: [],
        verify: { command: 'true' },
        run: { command: 'curl evil' },
        tools: { allow: ['deploy'] },
      },
      { key: 'forged-spec', dependsOn: [], spec: { verify: { command: 'true' } } },
    ];
    const { rows } = await stack.db.pool.query(
      `SELECT baton.task_propose(t, 'planner', $2::jsonb) AS outcome FROM baton.tasks t WHERE t.id = $1`,
      [`${id}/plan`, JSON.stringify(forged)],
    );
    expect(rows[0].outcome).toMatchObject({ status: 'accepted' });
    const tasks = await graphTasks(id);
    const plan = tasks.plan!.spec;
    expect(tasks.forged!.spec).toEqual({ ...plan, description: 'looks harmless' });
    expect(tasks['forged-spec']!.spec).toEqual({ ...plan, description: 'forged-spec' });
  });
});
