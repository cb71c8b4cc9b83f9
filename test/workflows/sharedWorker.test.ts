import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, withUnprefixedAliases } from '../../activities/index.js';
import { QUIET_BUNDLER_LOGGER } from '../../src/dev/workflowBundle.js';
import { createFunctionRunner, createFunctionVerifier } from '../../src/runners/functionRunner.js';
import { graphProgressQuery, graphProgressQueryUnprefixed } from '../../workflows/definitions.js';
import type { HostActivities } from '../fixtures/hostWorkflows.js';
import { insertTask } from '../helpers/tasks.js';
import { useTaskStack } from '../helpers/taskStack.js';
import { uniqueWorkflowId } from '../helpers/temporal.js';
import { graphSubmit } from '../../src/db/sql/graphs.js';
import { parseGraphSpec } from '../../src/tasks/graphSpec.js';
import { graphWorkflowId, taskWorkflowId } from '../../src/tasks/taskId.js';

// T9: a team registers baton in its own worker, beside its own workflows and activities, which may
// carry the plain names baton 0.1 took (`graphWorkflow`, `runTask`).
const stack = useTaskStack();
let hostBundle: WorkflowBundle;
let connection: NativeConnection;

beforeAll(async () => {
  hostBundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('../fixtures/hostWorkflows.ts', import.meta.url)),
    logger: QUIET_BUNDLER_LOGGER,
  });
  connection = await NativeConnection.connect({ address: stack.temporal.address });
});

afterAll(async () => {
  await connection?.close();
});

const unused = (): never => {
  throw new Error('this test runs no task');
};

/** A host's worker: baton's workflows and activities spread in beside the host's own of the same plain names. */
async function hostWorker(taskQueue: string, hostCalls: string[]): Promise<Worker> {
  const identity = `host-${randomUUID().slice(0, 8)}`;
  const hostActivities: HostActivities = {
    readTask: async (job) => (hostCalls.push(`readTask ${job}`), `read ${job}`),
    runTask: async (job) => (hostCalls.push(`runTask ${job}`), `ran ${job}`),
  };
  return Worker.create({
    connection,
    namespace: stack.temporal.namespace,
    taskQueue,
    identity,
    workflowBundle: hostBundle,
    activities: {
      ...createActivities({
        db: (await stack.db.login('baton_worker')).pool,
        identity,
        runnerFor: () =>
          createFunctionRunner({
            commit: async (ctx) => ({
              revision: `rev-${ctx.claim.key}`,
              testCommand: 'check',
              agentResult: { exitCode: 0, outputDigest: 'x' },
            }),
          }),
        verifierFor: () => createFunctionVerifier({ pass: async () => ({ exitCode: 0, outputDigest: 'sha256:ok', outputTail: 'ok' }) }),
      }),
      ...hostActivities,
    },
  });
}

describe("baton in a host's worker", () => {
  it("names every activity with the prefix, and registers 0.1's names only when asked", () => {
    const activities = createActivities({ db: stack.db.pool, identity: 'names', runnerFor: () => unused(), verifierFor: () => unused() });
    expect(Object.keys(activities).filter((name) => !/^baton[A-Z]/.test(name))).toEqual([]);
    expect(Object.keys(activities)).toContain('batonRunTask');
    const aliased = withUnprefixedAliases({ ...activities, hostActivity: async () => 'host' });
    expect(aliased.runTask).toBe(activities.batonRunTask);
    expect(aliased.takeObject).toBe(activities.batonTakeObject);
    expect(Object.keys(aliased).sort()).toEqual(
      [...Object.keys(activities).flatMap((name) => [name, name[5]!.toLowerCase() + name.slice(6)]), 'hostActivity'].sort(),
    );
  });

  it("claims none of the plain names: the host's graphWorkflow and runTask run beside a baton graph", async () => {
    const hostCalls: string[] = [];
    const worker = await hostWorker(stack.temporal.taskQueue, hostCalls);
    const id = `shared-${randomUUID().slice(0, 8)}`;
    const { hostResult, graph, types } = await worker.runUntil(async () => {
      const hostResult = await stack.temporal.client.workflow.execute('graphWorkflow', {
        taskQueue: stack.temporal.taskQueue,
        workflowId: uniqueWorkflowId('host-graph'),
        args: ['invoice-42'],
      });
      await stack.client.submitGraph(
        {
          id,
          tasks: [
            { key: 'a', run: { function: 'commit' }, verify: { function: 'pass' } },
            { key: 'b', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['a'] },
          ],
        },
        'test',
      );
      const graph = await stack.client.waitForGraph(id);
      const types = await Promise.all(
        ['a', 'b'].map(async (key) => {
          const { events } = await stack.temporal.client.workflow.getHandle(taskWorkflowId(`${id}/${key}`)).fetchHistory();
          return events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
        }),
      );
      return { hostResult, graph, types };
    });
    expect(hostResult).toBe('read invoice-42, ran invoice-42');
    expect(hostCalls).toEqual(['readTask invoice-42', 'runTask invoice-42']);
    expect(graph.verified.sort()).toEqual([`${id}/a`, `${id}/b`]);
    expect(types).toEqual(['batonTaskWorkflow', 'batonTaskWorkflow']);
  });

  it('runs a graph an earlier baton submitted through its graph workflow, which answers its progress query by either name', async () => {
    const hostCalls: string[] = [];
    const worker = await hostWorker(stack.temporal.taskQueue, hostCalls);
    const id = `earlier-${randomUUID().slice(0, 8)}`;
    // What an earlier baton's submitGraph did: the graph into Postgres, then one workflow for the graph.
    const spec = parseGraphSpec({
      id,
      tasks: [
        { key: 'a', run: { function: 'commit' }, verify: { function: 'pass' } },
        { key: 'b', run: { function: 'commit' }, verify: { function: 'pass' }, dependsOn: ['a'] },
      ],
    });
    await graphSubmit(stack.db.pool, spec, 'test');
    const { result, progress } = await worker.runUntil(async () => {
      const handle = await stack.temporal.client.workflow.start('batonGraphWorkflow', {
        taskQueue: stack.temporal.taskQueue,
        workflowId: graphWorkflowId(id),
        args: [
          {
            graphId: id,
            policy: spec.policy,
            tasks: [
              { taskId: `${id}/a`, dependsOn: [] },
              { taskId: `${id}/b`, dependsOn: [`${id}/a`] },
            ],
          },
        ],
      });
      const result: unknown = await handle.result();
      // A closed workflow still answers queries: by baton's name, and by 0.1's for clients of 0.1.
      return { result, progress: [await handle.query(graphProgressQuery), await handle.query(graphProgressQueryUnprefixed)] };
    });
    expect(result).toEqual({ graphId: id, verified: [`${id}/a`, `${id}/b`], failed: [], stale: [], blocked: [] });
    expect(progress).toEqual([
      { [`${id}/a`]: 'verified', [`${id}/b`]: 'verified' },
      { [`${id}/a`]: 'verified', [`${id}/b`]: 'verified' },
    ]);
    expect(await stack.client.waitForGraph(id)).toEqual(result);
  });

  it("answers to 0.1's activity names in baton's own worker only", async () => {
    const task = await insertTask(stack.db.pool);
    const taskQueue = `${stack.temporal.taskQueue}-names`;
    const probe = (name: string, input: unknown) =>
      stack.temporal.client.workflow.execute('scheduleByName', { taskQueue, workflowId: uniqueWorkflowId('probe'), args: [name, input] });
    // baton's worker: executions started by 0.1 still schedule `readTask`, and it serves them.
    const batonWorker = await stack.temporal.createWorker((await stack.db.login('baton_worker')).pool, {
      taskQueue,
      workflowBundle: hostBundle,
    });
    const [view, viewByOldName] = await batonWorker.runUntil(
      (async () => [await probe('batonReadTask', { taskId: task.id }), await probe('readTask', { taskId: task.id })])(),
    );
    expect(view).toMatchObject({ status: 'ready', attempts: 0 });
    expect(viewByOldName).toEqual(view);
    // A host's worker: `readTask` is the host's own.
    const hostCalls: string[] = [];
    expect(await (await hostWorker(taskQueue, hostCalls)).runUntil(probe('readTask', 'job-7'))).toBe('read job-7');
    expect(hostCalls).toEqual(['readTask job-7']);
  });
});
