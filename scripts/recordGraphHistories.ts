// Records the histories of one graph run (the workflows of its tasks, which start one another) for
// the replay tests: `npx tsx scripts/recordGraphHistories.ts <label>` writes
// test/fixtures/graphRun.<label>.histories.json. (The graphWorkflow.*.histories.json files are runs
// of the graph workflow an earlier baton started for each graph, recorded by this script then.)
// It runs a diamond (a -> b, a -> c, b + c -> d) of command tasks on the embedded stack (or
// DATABASE_URL / TEMPORAL_ADDRESS) with an in-process worker. Record again after a change to how a
// graph's workflows start one another, and keep the old file while executions recorded with it may
// still be running.
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { openStack } from '../src/cli/stack.js';
import { createBatonClient } from '../src/client.js';
import { stderrLog } from '../src/log.js';
import { connectClient, connectWorker } from '../src/temporal/connection.js';
import { commitAll, createScriptedRepo } from '../src/testkit/scriptedRepo.js';
import { createBatonWorker } from '../src/worker.js';
import { taskWorkflowId } from '../src/tasks/taskId.js';

const label = process.argv[2];
if (!label || !/^[a-z0-9-]+$/.test(label))
  throw new Error('usage: tsx scripts/recordGraphHistories.ts <label: lowercase letters, digits, dashes>');
const target = new URL(`../test/fixtures/graphRun.${label}.histories.json`, import.meta.url);

Runtime.install({ logger: new DefaultLogger('WARN') });
const open = await openStack(stderrLog, {}, 'admin');
const connection = await connectClient(open.stack.temporal);
const nativeConnection = await connectWorker(open.stack.temporal);
try {
  const temporal = new Client({ connection, namespace: open.stack.temporal.namespace });
  const taskQueue = `record-${randomUUID().slice(0, 8)}`;
  const worker = await createBatonWorker({
    connection: nativeConnection,
    namespace: open.stack.temporal.namespace,
    taskQueue,
    db: open.pool,
    identity: 'recorder',
    workDir: await mkdtemp(path.join(tmpdir(), 'baton-record-')),
    agentIsolation: { sandbox: 'none', user: 'worker', network: 'host' },
    log: () => {},
  });
  const client = createBatonClient({ db: open.pool, temporal, taskQueue });
  const repo = await createScriptedRepo();
  const task = (key: string, dependsOn: string[] = []) => ({
    key,
    dependsOn,
    run: { command: `echo ${key} > ${key}.txt && ${commitAll(key)}` },
    verify: { command: `test -f ${key}.txt` },
  });
  const graphId = `recorded-${randomUUID().slice(0, 8)}`;
  await worker.runUntil(
    (async () => {
      await client.submitGraph(
        { id: graphId, repo, tasks: [task('a'), task('b', ['a']), task('c', ['a']), task('d', ['b', 'c'])] },
        'recorder',
      );
      const result = await client.waitForGraph(graphId);
      if (result.verified.length !== 4) throw new Error(`the graph did not verify every task: ${JSON.stringify(result)}`);
    })(),
  );
  const histories = [];
  for (const key of ['a', 'b', 'c', 'd']) {
    const workflowId = taskWorkflowId(`${graphId}/${key}`);
    const what = `the task workflow of ${key} in a diamond, a -> b, a -> c, b + c -> d`;
    const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
    histories.push({ workflowId, what, history: JSON.parse(historyToJSON(history)) });
  }
  await writeFile(target, `${JSON.stringify(histories, null, 1)}\n`);
  stderrLog(`Saved ${histories.length} histories of graph ${graphId} to ${target.pathname}`);
} finally {
  await connection.close();
  await nativeConnection.close();
  await open.close();
}
