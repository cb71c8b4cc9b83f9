import { afterAll, beforeAll } from 'vitest';
import { createBatonClient, type BatonClient } from '../../src/client.js';
import type { BatonWorker, BatonWorkerOptions } from '../../src/worker.js';
import { createTestDatabase, type TestDatabase, type TestLogin } from './db.js';
import { connectTestTemporal, type TestTemporal } from './temporal.js';

export interface TaskStack {
  /** The file's own migrated database. */
  db: TestDatabase;
  /** The run's Temporal server, with a task queue private to the file. */
  temporal: TestTemporal;
  /** A baton client on that database and task queue, as a member of baton_client. */
  client: BatonClient;
  /** The in-process baton worker on that task queue, as a member of baton_worker; only when `useTaskStack` was given `worker`. */
  worker: BatonWorker;
  /** DATABASE_URL (the worker login), TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE of this stack, for worker processes. */
  workerEnv: Record<string, string>;
}

export interface TaskStackOptions {
  /**
   * Runs a baton worker on the file's task queue with these options, read when the stack starts
   * (so they may use what earlier `beforeAll` hooks set up). (Default: no worker)
   */
  worker?: (db: TestDatabase) => Partial<BatonWorkerOptions>;
}

/**
 * The set-up most task tests share, as one fixture: before the file's tests a fresh database, a
 * Temporal connection, a client and (when asked) a running worker; after them, all torn down.
 * Its fields are readable inside tests and in hooks registered after this call.
 */
export function useTaskStack(options: TaskStackOptions = {}): TaskStack {
  let db: TestDatabase | undefined;
  let temporal: TestTemporal | undefined;
  let client: BatonClient | undefined;
  let worker: BatonWorker | undefined;
  let running: Promise<void> | undefined;

  let workerLogin: TestLogin | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    temporal = await connectTestTemporal();
    // Each component on its own least-privilege login, as in a deployment (SPEC S1).
    const clientLogin = await db.login('baton_client');
    workerLogin = await db.login('baton_worker');
    client = createBatonClient({ db: clientLogin.pool, temporal: temporal.client, taskQueue: temporal.taskQueue });
    if (options.worker) {
      worker = await temporal.createWorker(workerLogin.pool, options.worker(db));
      running = worker.run();
    }
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await temporal?.close();
    await db?.drop();
  });

  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not set up: use it in a test, or in a hook registered after useTaskStack()`);
    return value;
  };
  return {
    get db() {
      return ready(db, 'the test database');
    },
    get temporal() {
      return ready(temporal, 'the Temporal connection');
    },
    get client() {
      return ready(client, 'the baton client');
    },
    get worker() {
      return ready(worker, options.worker ? 'the worker' : 'a worker (pass `worker` to useTaskStack)');
    },
    get workerEnv() {
      const { url } = ready(workerLogin, 'the worker login');
      const { address, namespace } = ready(temporal, 'the Temporal connection');
      return { DATABASE_URL: url, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace };
    },
  };
}
