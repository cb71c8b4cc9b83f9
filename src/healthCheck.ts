import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type pg from 'pg';
import { healthCheckRead, type HealthCheckRow } from './db/sql/reads.js';
import { connectClient, connectWorker, type TemporalSettings } from './temporal/connection.js';
import { createBatonWorker } from './worker.js';
import { silentLog, type Log } from './log.js';
import type { batonHealthCheckWorkflow } from '../workflows/healthCheckWorkflow.js';

/**
 * Proves the plumbing end to end: a worker on a private task queue runs the health-check
 * workflow on the Temporal server, its activity writes a row to Postgres, and the row is read back.
 */
export async function runHealthCheck(options: {
  pool: pg.Pool;
  temporal: TemporalSettings;
  message?: string;
  log?: Log;
}): Promise<HealthCheckRow> {
  const log = options.log ?? silentLog;
  const taskQueue = `baton-health-${randomUUID()}`;
  const workflowId = `baton-health-${new Date().toISOString()}-${randomUUID().slice(0, 8)}`;
  const workerConnection = await connectWorker(options.temporal);
  const clientConnection = await connectClient(options.temporal);
  try {
    log('Bundling workflows and starting a worker ...');
    const worker = await createBatonWorker({
      connection: workerConnection,
      namespace: options.temporal.namespace,
      taskQueue,
      db: options.pool,
    });
    const client = new Client({ connection: clientConnection, namespace: options.temporal.namespace });
    log(`Running workflow ${workflowId} ...`);
    const row = await worker.runUntil(
      client.workflow.execute<typeof batonHealthCheckWorkflow>('batonHealthCheckWorkflow', {
        taskQueue,
        workflowId,
        args: [options.message ?? 'baton health check'],
      }),
    );
    const stored = (await healthCheckRead(options.pool, 50)).find((r) => r.workflowId === workflowId);
    if (!stored || stored.id !== row.id) throw new Error(`workflow ${workflowId} returned row ${row.id}, but Postgres does not hold it`);
    return stored;
  } finally {
    await clientConnection.close();
    await workerConnection.close();
  }
}
