import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBatonClient } from '../../src/client.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, ensureDatabase, withDatabase } from '../../src/db/pool.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../../src/dev/embeddedPostgres.js';
import { freePort } from '../../src/dev/freePort.js';
import type { AgentFunction } from '../../src/runners/functionRunner.js';
import { connectTestTemporal } from '../helpers/temporal.js';

let postgres: RunningPostgres | undefined;
let home: string | undefined;

afterAll(async () => {
  await postgres?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const slowAgent: AgentFunction = async (ctx) => {
  for (let waited = 0; waited < 2_000; waited += 200) {
    await ctx.heartbeat({ waited });
    await new Promise((r) => setTimeout(r, 200));
  }
  return { revision: `${ctx.claim.key}-v${ctx.claim.claimVersion}`, testCommand: 'check', agentResult: { exitCode: 0, outputDigest: 'd' } };
};

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
      agentFunctions: { slow: slowAgent },
      verifierFunctions: { pass: async () => ({ exitCode: 0, outputDigest: 'd', outputTail: '' }) },
    });
    const running = worker.run();
    try {
      const client = createBatonClient({ db: pool, temporal: temporal.client, taskQueue: temporal.taskQueue });
      const t = (key: string, dependsOn: string[] = []) => ({ key, dependsOn, run: { function: 'slow' }, verify: { function: 'pass' } });
      await client.submitGraph({ id: 'pg', policy: { heartbeatTimeoutMs: 5_000, maxAttempts: 5 }, tasks: [t('a'), t('b'), t('c', ['a', 'b'])] }, 'test');
      for (;;) {
        const tasks = await client.graphTasks('pg');
        if (tasks.filter((x) => x.status === 'running').length === 2) break;
        await new Promise((r) => setTimeout(r, 100));
      }
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
