import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities/index.js';
import { TASK_QUEUE_DEFAULT } from './config.js';

/** Path of baton's workflow code, for `Worker.create({ workflowsPath })` in a team's own worker. */
// `.ts` when run from source, `.js` when run from the built package.
export const workflowsPath = fileURLToPath(
  new URL(`../workflows/index${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

export interface BatonWorkerOptions extends ActivityDeps {
  connection: NativeConnection;
  namespace: string;
  /** (Default: `baton`) */
  taskQueue?: string;
  /** Any other Temporal worker option, passed through unchanged. */
  workerOptions?: Partial<WorkerOptions>;
}

/** Creates a Temporal worker that runs baton's workflows and activities. */
export function createBatonWorker(options: BatonWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue ?? TASK_QUEUE_DEFAULT,
    workflowsPath,
    activities: createActivities({ db: options.db }),
    ...options.workerOptions,
  });
}
