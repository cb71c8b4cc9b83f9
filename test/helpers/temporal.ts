import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { inject } from 'vitest';
import { createActivities, type ActivityDeps } from '../../activities/index.js';

export interface TestTemporal {
  client: Client;
  namespace: string;
  /** A task queue no other test uses. */
  taskQueue: string;
  /** A worker on this file's task queue, running the workflow bundle built once in global setup. */
  createWorker(deps: ActivityDeps, options?: Partial<WorkerOptions>): Promise<Worker>;
  close(): Promise<void>;
}

/** Connects to the run's Temporal server with a task queue private to the calling test file. */
export async function connectTestTemporal(): Promise<TestTemporal> {
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  const taskQueue = `test-${randomUUID()}`;
  return {
    client: new Client({ connection, namespace }),
    namespace,
    taskQueue,
    createWorker: (deps, options = {}) =>
      Worker.create({
        connection: nativeConnection,
        namespace,
        taskQueue,
        workflowBundle: { codePath: inject('workflowBundlePath') },
        activities: createActivities(deps),
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
