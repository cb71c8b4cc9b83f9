// SPEC U6: the search attributes baton's workflows carry must be registered in their namespace
// before any workflow sets one (a workflow setting an unknown one fails its workflow task). `baton
// migrate` registers them, like the worker as it starts; a namespace without them still runs
// graphs, whose workflows then set none. Real Temporal (namespaces of the test's own), real Postgres.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createBatonClient } from '../../src/client.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { functionGraph, independentTasks, NOOP_FUNCTIONS, uniqueGraphId } from '../../src/testkit/graphs.js';
import { taskWorkflowId } from '../../src/tasks/taskId.js';
import { missingSearchAttributes } from '../../src/temporal/registerSearchAttributes.js';
import { createBatonWorker } from '../../src/worker.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { useTestDatabase } from '../helpers/db.js';
import { installQuietTemporalRuntime } from '../helpers/temporal.js';

/** As long as a test may wait for a state: a hang guard, never a timing assertion. */
const HANG_GUARD_MS = 600_000;
const ALL = ['BatonGraphId', 'BatonTaskKey', 'BatonTaskStatus'];

const db = useTestDatabase();
let connection: Connection;

/** A namespace of this test's own on the run's Temporal server, without baton's search attributes. */
async function freshNamespace(): Promise<string> {
  const namespace = `baton-sa-${randomUUID().slice(0, 8)}`;
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  await waitFor(
    `namespace ${namespace} to be served`,
    async () => {
      await connection.operatorService.listSearchAttributes({ namespace });
    },
    { timeoutMs: HANG_GUARD_MS, intervalMs: 200 },
  );
  return namespace;
}

beforeAll(async () => {
  installQuietTemporalRuntime();
  connection = await Connection.connect({ address: inject('temporalAddress') });
});

afterAll(async () => {
  await connection?.close();
});

describe('search attributes (SPEC U6)', () => {
  it('are registered by baton migrate where the namespace lacks them, and found there the next time', async () => {
    const namespace = await freshNamespace();
    expect(await missingSearchAttributes(connection, namespace)).toEqual(ALL);
    const env = cleanEnv({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: namespace });
    const first = await runCli(['migrate'], env);
    expect(first.code, first.output).toBe(0);
    expect(first.stderr).toContain(
      `Registered the search attributes BatonGraphId, BatonTaskKey, BatonTaskStatus in namespace ${namespace}`,
    );
    await waitFor(
      'the namespace to list them',
      async () => {
        const missing = await missingSearchAttributes(connection, namespace);
        if (missing.length) throw new Error(`still missing ${missing.join(', ')}`);
      },
      { timeoutMs: HANG_GUARD_MS, intervalMs: 200 },
    );
    const again = await runCli(['migrate'], env);
    expect(again.code, again.output).toBe(0);
    expect(again.stderr).toContain(`Search attributes: baton's are registered in namespace ${namespace}.`);
    expect(again.stderr).not.toContain('Registered');

    // Without a Temporal server named, migrate does the database and says where they come from instead.
    const databaseOnly = await runCli(['migrate'], cleanEnv({ DATABASE_URL: db.url }));
    expect(databaseOnly.code, databaseOnly.output).toBe(0);
    expect(databaseOnly.stderr).toContain(
      'Search attributes: no Temporal server named (TEMPORAL_ADDRESS); each worker registers them as it starts.',
    );
  });

  it('are left off the workflows of a namespace that lacks them, which run as ever', async () => {
    const namespace = await freshNamespace();
    const native = await NativeConnection.connect({ address: inject('temporalAddress') });
    const taskQueue = `sa-${randomUUID()}`;
    const workerLogin = await db.login('baton_worker');
    const worker = await createBatonWorker({
      connection: native,
      namespace,
      taskQueue,
      db: workerLogin.pool,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      agentFunctions: {
        noop: async (ctx) => ({
          revision: `noop-${ctx.claim.claimVersion}`,
          testCommand: 'noop',
          agentResult: { exitCode: 0, outputDigest: 'x' },
        }),
      },
      verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'ok', outputTail: '' }) },
    });
    const running = worker.run();
    try {
      const temporal = new Client({ connection, namespace });
      const client = createBatonClient({ db: (await db.login('baton_client')).pool, temporal, taskQueue });
      const graphId = uniqueGraphId('no-attributes');
      await client.submitGraph(functionGraph(graphId, independentTasks(1), { functions: NOOP_FUNCTIONS }), 'test');
      const result = await client.waitForGraph(graphId);
      expect(result.verified).toEqual([`${graphId}/t0`]);
      const task = await temporal.workflow.getHandle(taskWorkflowId(`${graphId}/t0`)).describe();
      expect(Object.keys(task.searchAttributes).filter((name) => name.startsWith('Baton'))).toEqual([]);
      expect(await missingSearchAttributes(connection, namespace)).toEqual(ALL);
    } finally {
      worker.shutdown();
      await running;
      await native.close();
    }
  });
});
