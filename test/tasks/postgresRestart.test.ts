import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBatonClient } from '../../src/client.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ensureDatabase, withDatabase } from '../../src/db/pool.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../../src/dev/embeddedPostgres.js';
import { freePort } from '../../src/dev/freePort.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { functionGraph } from '../../src/testkit/graphs.js';
import { slowAgent } from '../helpers/agents.js';
import { connectTestTemporal } from '../helpers/temporal.js';

let postgres: RunningPostgres | undefined;
let home: string | undefined;

afterAll(async () => {
  await postgres?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

/** How long the first wave may take to start. */
const START_TIMEOUT_MS = 60_000;

describe('T11: Postgres is restarted mid-graph', () => {
  it('loses no task and verifies nothing twice', async () => {
    home = await mkdtemp(path.join(tmpdir(), 'baton-pg-restart-'));
    await chmod(home, 0o755); // the embedded server may run as the postgres OS user
    const port = await freePort();
    const start = () => startEmbeddedPostgres({ dataDir: path.join(home!, 'pg'), port });
    postgres = await start();
    await ensureDatabase(postgres.url, 'baton');
    const pool = createPool(withDatabase(postgres.url, 'baton'));
    await migrate(pool);
    const temporal = await connectTestTemporal();
    const worker = await temporal.createWorker(pool, {
      agentFunctions: { slow: slowAgent(2_000) },
      verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'd', outputTail: '' }) },
    });
    const running = worker.run();
    try {
      const client = createBatonClient({ db: pool, temporal: temporal.client, taskQueue: temporal.taskQueue });
      await client.submitGraph(
        functionGraph('pg', { a: [], b: [], c: ['a', 'b'] }, { functions: { run: 'slow', verify: 'pass' }, policy: { heartbeatTimeoutMs: 5_000, maxAttempts: 5 } }),
        'test',
      );
      await waitFor(
        'a and b to run',
        async () => {
          const busy = (await client.graphTasks('pg')).filter((x) => x.status === 'running').length;
          if (busy !== 2) throw new Error(`${busy} running`);
        },
        { timeoutMs: START_TIMEOUT_MS, intervalMs: 100 },
      );
      await postgres.stop();
      await new Promise((r) => setTimeout(r, 2_000)); // heartbeats and activities fail meanwhile
      postgres = await start();

      const result = await client.waitForGraph('pg');
      expect(result.verified.sort()).toEqual(['pg/a', 'pg/b', 'pg/c']);
      const { rows } = await pool.query("SELECT subject_id, count(*)::int AS n FROM baton.events WHERE kind = 'verified' GROUP BY 1 ORDER BY 1");
      expect(rows).toEqual([{ subject_id: 'pg/a', n: 1 }, { subject_id: 'pg/b', n: 1 }, { subject_id: 'pg/c', n: 1 }]);
    } finally {
      worker.shutdown();
      await running;
      await temporal.close();
      await pool.end();
    }
  });
});
