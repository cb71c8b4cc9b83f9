import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { healthCheckRead } from '../src/db/sql/reads.js';
import { useTaskStack } from './helpers/taskStack.js';
import { installQuietTemporalRuntime, uniqueWorkflowId } from './helpers/temporal.js';

installQuietTemporalRuntime();

const stack = useTaskStack();

describe('plumbing: a workflow on the real Temporal server writes to real Postgres', () => {
  it('runs the health-check workflow whose activity inserts a row that the test reads back', async () => {
    const workflowId = uniqueWorkflowId('plumbing');
    // On a worker's own login, as a deployment runs it (SPEC S1).
    const worker = await stack.temporal.createWorker((await stack.db.login('baton_worker')).pool);
    const result = await worker.runUntil(
      stack.temporal.client.workflow.execute('batonHealthCheckWorkflow', {
        taskQueue: stack.temporal.taskQueue,
        workflowId,
        args: ['hello from the plumbing test'],
      }),
    );

    const rows = await healthCheckRead(stack.db.pool);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: result.id, workflowId, message: 'hello from the plumbing test' });

    // The history the server kept replays against today's workflow code.
    const history = await stack.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    expect(JSON.parse(historyToJSON(history)).events.length).toBeGreaterThan(5);
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId);
  });

  it('refuses an invalid message in Postgres and leaves the table unchanged', async () => {
    const before = await healthCheckRead(stack.db.pool);
    await expect(
      stack.db.pool.query('INSERT INTO baton.health_checks (workflow_id, message) VALUES ($1, $2)', ['bad', '']),
    ).rejects.toThrow(/check constraint/);
    expect(await healthCheckRead(stack.db.pool)).toEqual(before);
  });
});
