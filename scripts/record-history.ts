// Regenerates test/fixtures/healthCheckWorkflow.history.json: runs the health-check workflow on
// the embedded stack (or DATABASE_URL / TEMPORAL_ADDRESS) and saves the history the server kept.
// Run it after an intentional change to the workflow, and keep the old file as a second fixture
// while executions recorded with it may still be running.
import { writeFile } from 'node:fs/promises';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { openStack } from '../src/cli/stack.js';
import { runHealthCheck } from '../src/healthCheck.js';
import { stderrLog } from '../src/log.js';
import { connectClient } from '../src/temporal/connection.js';
import { Client } from '@temporalio/client';

Runtime.install({ logger: new DefaultLogger('WARN') });
const target = new URL('../test/fixtures/healthCheckWorkflow.history.json', import.meta.url);
const open = await openStack(stderrLog);
try {
  const row = await runHealthCheck({ pool: open.pool, temporal: open.stack.temporal, message: 'recorded fixture', log: stderrLog });
  const connection = await connectClient(open.stack.temporal);
  const client = new Client({ connection, namespace: open.stack.temporal.namespace });
  const history = await client.workflow.getHandle(row.workflowId).fetchHistory();
  await writeFile(target, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
  await connection.close();
  stderrLog(`Saved the history of ${row.workflowId} to ${target.pathname}`);
} finally {
  await open.close();
}
