// The server teams deploy: a real Temporal server (built from go.temporal.io/server, not the dev
// server) with its persistence in PostgreSQL, and `baton worker` processes on least-privilege
// logins running a graph on it: one task run by one worker and verified by another, its dependent
// released after, and a worker SIGKILLed mid-run whose task another worker recovers.
import { rm } from 'node:fs/promises';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createBatonClient } from '../../src/client.js';
import { createPool, withDatabase } from '../../src/db/pool.js';
import { taskIdOf } from '../../src/tasks/taskId.js';
import { uniqueGraphId } from '../../src/testkit/graphs.js';
import { createScriptedRepo, steppingAgent } from '../../src/testkit/scriptedRepo.js';
import { startTemporalServer, TEMPORAL_SERVER_VERSION, type TemporalServer } from '../../src/testkit/temporalServer.js';
import { startWorkerFleet, type WorkerFleet } from '../../src/testkit/workerFleet.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { graphVerified, taskMidRun } from '../helpers/graphStates.js';

let server: TemporalServer | undefined;
let db: TestDatabase | undefined;
let fleet: WorkerFleet | undefined;
let connection: Connection | undefined;
let repo: string | undefined;

beforeAll(async () => {
  // The first run on a machine builds the server (several minutes); later runs reuse the build.
  server = await startTemporalServer({ adminUrl: inject('databaseUrl'), temporalCli: inject('temporalCliPath'), log: console.log });
  db = await createTestDatabase();
  repo = await createScriptedRepo();
}, 3_600_000);

afterAll(async () => {
  await fleet?.stop();
  await connection?.close();
  await server?.stop();
  await db?.drop();
  if (repo) await rm(repo, { recursive: true, force: true });
});

describe(`baton on a Temporal server ${TEMPORAL_SERVER_VERSION} whose persistence is PostgreSQL`, () => {
  it('runs, verifies and releases through it, and recovers the task of a worker killed mid-run', async () => {
    const workerLogin = await db!.login('baton_worker');
    const clientLogin = await db!.login('baton_client');
    fleet = await startWorkerFleet({
      name: 'topology',
      env: { DATABASE_URL: workerLogin.url, TEMPORAL_ADDRESS: server!.address, TEMPORAL_NAMESPACE: server!.namespace },
      size: 2,
    });
    connection = await Connection.connect({ address: server!.address });
    const client = createBatonClient({
      db: clientLogin.pool,
      temporal: new Client({ connection, namespace: server!.namespace }),
      taskQueue: fleet.taskQueue,
    });
    const graph = await client.submitGraph(
      {
        id: uniqueGraphId('topology'),
        repo,
        policy: { heartbeatTimeoutMs: 3_000, maxAttempts: 3 },
        tasks: [
          { key: 'build', run: { command: steppingAgent(60, 'build.txt') }, verify: { command: 'test -f build.txt' } },
          {
            key: 'test',
            dependsOn: ['build'],
            run: { command: steppingAgent(5, 'test.txt') },
            verify: { command: 'test -f build.txt -a -f test.txt' },
          },
        ],
      },
      'topology-test',
    );
    const build = taskIdOf(graph.id, 'build');
    // Only `build` can run first: `test` waits for it.
    const running = (await taskMidRun(client, graph.id))!;
    expect(running.id).toBe(build);
    const victim = fleet.ownerOf(running.owner);
    await fleet.killAndReplace(victim);

    const tasks = await graphVerified(client, graph.id);
    const built = tasks.find((t) => t.id === build)!;
    const tested = tasks.find((t) => t.key === 'test')!;
    const events = await client.events(build);
    expect(events.find((e) => e.kind === 'reclaimed_after_silence')).toMatchObject({ fence: running.claimVersion });
    expect(built.claimVersion).toBe(running.claimVersion + 1);
    expect(built.owner).not.toBe(victim.identity);
    // Verified by a verifier, never by the agent's own identity; the dependent ran on the verified revision.
    const started = events.find((e) => e.kind === 'verification_started')!;
    expect(started.actor).toMatch(/\/verifier$/);
    expect(tested.upstreamRevisions).toEqual({ build: built.artifact!.revision });

    // The workflows lived in the server's own Postgres database, not in a dev server's SQLite.
    const temporalDb = createPool(withDatabase(inject('databaseUrl'), server!.databases[0]), { max: 1 });
    try {
      const { rows } = await temporalDb.query<{ n: number }>('SELECT count(*)::int AS n FROM executions');
      expect(rows[0]!.n).toBeGreaterThanOrEqual(3); // the graph's workflow and one per task
    } finally {
      await temporalDb.end();
    }
  }, 1_200_000);
});
