import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { inject } from 'vitest';
import type { Queryable } from '../../src/db/queryable.js';
import { createBatonWorker, type BatonWorker, type BatonWorkerOptions } from '../../src/worker.js';

export interface TestTemporal {
  client: Client;
  namespace: string;
  address: string;
  /** A task queue no other test uses. */
  taskQueue: string;
  /** A baton worker on this file's task queue, running the workflow bundle built once in global setup. */
  createWorker(db: Queryable, options?: Partial<BatonWorkerOptions>): Promise<BatonWorker>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/**
 * Installs this test file's Temporal runtime, logging warnings and failures only (worker state
 * changes are logged at INFO). Call it before the file's first worker, connection or replay: only
 * the files that run Temporal in-process load the worker SDK.
 */
export function installQuietTemporalRuntime(): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  runtimeInstalled = true;
}

/** Connects to the run's Temporal server with a task queue private to the calling test file. */
export async function connectTestTemporal(): Promise<TestTemporal> {
  installQuietTemporalRuntime();
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  const taskQueue = `test-${randomUUID()}`;
  return {
    client: new Client({ connection, namespace }),
    namespace,
    address,
    taskQueue,
    createWorker: (db, options = {}) =>
      createBatonWorker({
        connection: nativeConnection,
        namespace,
        taskQueue,
        db,
        identity: `test-worker-${randomUUID().slice(0, 8)}`,
        workflowBundle: { codePath: inject('workflowBundlePath') },
        ...options,
      }),
    close: async () => {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/** A workflow id no other test uses. */
export function uniqueWorkflowId(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}
