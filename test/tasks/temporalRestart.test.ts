import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createBatonClient } from '../../src/client.js';
import { freePort } from '../../src/dev/freePort.js';
import { startTemporalDevServer, type TemporalDevServer } from '../../src/dev/temporalDevServer.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { functionGraph } from '../../src/testkit/graphs.js';
import { createBatonWorker, type BatonWorker } from '../../src/worker.js';
import { slowAgent } from '../helpers/agents.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase | undefined;
let server: TemporalDevServer | undefined;
let home: string | undefined;

afterAll(async () => {
  await server?.stop();
  await db?.drop();
  if (home) await rm(home, { recursive: true, force: true });
});

/** How long the first wave may take to be verified and the second to start. */
const SECOND_WAVE_TIMEOUT_MS = 60_000;

describe('T11: the Temporal server is killed mid-graph, its state on disk', () => {
  it('completes the graph after a restart and verifies nothing twice', async () => {
    db = await createTestDatabase();
    home = await mkdtemp(path.join(tmpdir(), 'baton-restart-'));
    const port = await freePort();
    const start = () =>
      startTemporalDevServer({ cliPath: inject('temporalCliPath'), dbFilename: path.join(home!, 'temporal.sqlite'), port, headless: true });
    server = await start();
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    const connection = await Connection.connect({ address: server.address });
    let worker: BatonWorker | undefined;
    let running: Promise<void> | undefined;
    try {
      worker = await createBatonWorker({
        connection: nativeConnection,
        namespace: 'default',
        taskQueue: 'restart-test',
        db: (await db.login('baton_worker')).pool,
        identity: 'restart-worker',
        workflowBundle: { codePath: inject('workflowBundlePath') },
        agentFunctions: { slow: slowAgent(1_500) },
        verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'd', outputTail: '' }) },
      });
      running = worker.run();
      const client = createBatonClient({ db: (await db.login('baton_client')).pool, temporal: new Client({ connection }), taskQueue: 'restart-test' });
      await client.submitGraph(
        functionGraph(
          'restart',
          { a: [], b: [], c: ['a', 'b'], d: ['c'], e: ['c'] },
          { functions: { run: 'slow', verify: 'pass' }, policy: { heartbeatTimeoutMs: 5_000, maxAttempts: 5 } },
        ),
        'test',
      );
      // Kill the server once the first wave is verified and the second is under way.
      await waitFor(
        'c to run',
        async () => {
          const c = (await client.graphTasks('restart')).find((x) => x.key === 'c');
          if (c?.status !== 'running') throw new Error(`c is ${c?.status}`);
        },
        { timeoutMs: SECOND_WAVE_TIMEOUT_MS, intervalMs: 100 },
      );
      server.process.kill('SIGKILL');
      await new Promise((r) => server!.process.once('exit', r));
      server = await start();

      const result = await client.waitForGraph('restart');
      expect(result.verified.sort()).toEqual(['restart/a', 'restart/b', 'restart/c', 'restart/d', 'restart/e']);
      const { rows } = await db.pool.query(
        `SELECT subject_id, count(*)::int AS n FROM baton.events WHERE kind = 'verified' AND subject_id LIKE 'restart/%' GROUP BY 1 ORDER BY 1`,
      );
      expect(rows).toEqual(['a', 'b', 'c', 'd', 'e'].map((k) => ({ subject_id: `restart/${k}`, n: 1 })));
      const passed = await db.pool.query("SELECT task_id, count(*)::int AS n FROM baton.verifications WHERE passed GROUP BY 1 HAVING count(*) > 1");
      expect(passed.rows).toEqual([]);
    } finally {
      worker?.shutdown();
      await running?.catch(() => undefined);
      await connection.close();
      await nativeConnection.close();
    }
  });
});
