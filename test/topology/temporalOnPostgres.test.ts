// The production topology (issue 22), without Docker: a real Temporal server (built from
// go.temporal.io/server, not the dev server) with its persistence in PostgreSQL, three `baton worker`
// processes on a least-privilege login with a work folder (and so a mirror) each, the graph's
// repository served by `git daemon` on loopback, and `baton serve` with a remote pool agent that
// clones from the daemon and pushes there (src/testkit/topology.ts, which scripts/topology.ts runs
// for a person). A graph runs on it: a task run by one worker and verified by another, a worker
// SIGKILLed mid-run whose task another recovers, and a pooled task done by the remote agent.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import YAML from 'yaml';
import { createBatonClient } from '../../src/client.js';
import { createPool, withDatabase } from '../../src/db/pool.js';
import { git } from '../../src/runners/git.js';
import { taskIdOf } from '../../src/tasks/taskId.js';
import { uniqueGraphId } from '../../src/testkit/graphs.js';
import { steppingAgent } from '../../src/testkit/scriptedRepo.js';
import { TEMPORAL_SERVER_VERSION } from '../../src/testkit/temporalServer.js';
import { startTopology, type Topology } from '../../src/testkit/topology.js';
import { graphVerified, taskMidRun } from '../helpers/graphStates.js';

const REMOTE_AGENT = fileURLToPath(new URL('../api/remoteAgent.ts', import.meta.url));
const EXAMPLE_AGENT = new URL('../../examples/agents/hello-agent.sh', import.meta.url);

/** The agents' isolation docker-compose.yml gives its workers (`BATON_AGENT_*`): this test's workers run with the same. */
async function composeIsolation(): Promise<Record<string, string>> {
  const compose = YAML.parse(await readFile(new URL('../../docker-compose.yml', import.meta.url), 'utf8')) as {
    services: Record<string, { environment: Record<string, string> }>;
  };
  const settings = Object.entries(compose.services['baton-worker']!.environment).filter(([name]) => name.startsWith('BATON_AGENT_'));
  expect(settings.length, 'docker-compose.yml names the isolation of its workers').toBeGreaterThan(0);
  return Object.fromEntries(settings);
}

let dir: string | undefined;
let topology: Topology | undefined;
let connection: Connection | undefined;
let agent: ChildProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'baton-topology-'));
  // The first run on a machine builds the Temporal server (several minutes); later runs reuse the build.
  topology = await startTopology({
    adminUrl: inject('databaseUrl'),
    temporalCli: inject('temporalCliPath'),
    dir,
    log: console.log,
    files: {
      'README.md': '# app\n',
      'check.sh': 'grep -q "reviewed by" review.txt\n',
      'hello-agent.sh': await readFile(EXAMPLE_AGENT, 'utf8'),
    },
    workerSettings: await composeIsolation(),
  });
}, 3_600_000);

afterAll(async () => {
  agent?.kill('SIGKILL');
  await connection?.close();
  await topology?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe(`the production topology: Temporal server ${TEMPORAL_SERVER_VERSION} on PostgreSQL, three workers, a git remote, the agent API`, () => {
  it('runs, verifies and releases through it, recovers the task of a worker killed mid-run, and takes a pooled task from a remote agent', async () => {
    const { workers } = topology!;
    connection = await Connection.connect({ address: topology!.temporal.address });
    const adminPool = createPool(topology!.adminEnv.DATABASE_URL!, { max: 2 });
    const client = createBatonClient({
      db: adminPool,
      temporal: new Client({ connection, namespace: topology!.temporal.namespace }),
      taskQueue: workers.taskQueue,
    });
    try {
      const graph = await client.submitGraph(
        {
          id: uniqueGraphId('topology'),
          repo: topology!.repo,
          base: 'main',
          policy: { heartbeatTimeoutMs: 3_000, maxAttempts: 3 },
          tasks: [
            { key: 'build', run: { command: steppingAgent(60, 'build.txt') }, verify: { command: 'test -f build.txt' } },
            {
              key: 'test',
              dependsOn: ['build'],
              run: { command: steppingAgent(5, 'test.txt') },
              verify: { command: 'test -f build.txt -a -f test.txt' },
            },
            // The example agent of the worker image, isolated as the compose file isolates it.
            { key: 'hello', dependsOn: ['build'], run: { command: 'sh ./hello-agent.sh' }, verify: { command: 'test -s hello.txt' } },
            // Done by the remote agent: it clones from the daemon, merges build's verified commit, pushes there.
            { key: 'review', dependsOn: ['build'], run: { pool: 'reviewers' }, verify: { command: 'sh ./check.sh && test -f build.txt' } },
          ],
        },
        'topology-test',
      );
      const token = await topology!.token('reviewer', ['read', 'notes', 'submit']);
      // The agent holds its token and the API's address, nothing else of baton's.
      agent = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          REMOTE_AGENT,
          JSON.stringify({ url: topology!.apiUrl, pool: 'reviewers', transport: 'http', behaviour: 'work' }),
        ],
        {
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), REMOTE_AGENT_TOKEN: token },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const steps: Array<Record<string, unknown>> = [];
      createInterface({ input: agent.stdout! }).on('line', (line) => steps.push(JSON.parse(line) as Record<string, unknown>));

      const build = taskIdOf(graph.id, 'build');
      // Only `build` can run first: the others wait for it.
      const running = (await taskMidRun(client, graph.id))!;
      expect(running.id).toBe(build);
      const victim = workers.ownerOf(running.owner);
      await workers.killAndReplace(victim);

      const tasks = await graphVerified(client, graph.id);
      const byKey = Object.fromEntries(tasks.map((t) => [t.key, t]));
      const built = byKey.build!;
      const events = await client.events(build);
      expect(events.find((e) => e.kind === 'reclaimed_after_silence')).toMatchObject({ fence: running.claimVersion });
      expect(built.claimVersion).toBe(running.claimVersion + 1);
      expect(built.owner).not.toBe(victim.identity);
      // Verified as a verifier, never as the agent's own identity; the dependents ran on the verified revision.
      const started = events.find((e) => e.kind === 'verification_started')!;
      expect(started.actor).toMatch(/\/verifier$/);
      for (const key of ['test', 'hello', 'review']) expect(byKey[key]!.upstreamRevisions).toEqual({ build: built.artifact!.revision });

      // The pooled task was the remote agent's: it claimed it through `baton serve` and submitted its pushed commit.
      expect(steps.find((s) => s.step === 'claimed')).toMatchObject({ taskId: byKey.review!.id, identity: 'reviewer' });
      expect(steps.find((s) => s.step === 'submit')).toMatchObject({ ok: true, revision: byKey.review!.artifact!.revision });
      const submitted = (await client.events(byKey.review!.id)).find((e) => e.kind === 'agent_submitted');
      expect(submitted?.actor).toBe('reviewer');

      // Every commit went through the remote: each on its claim's branch there, and no worker shares a folder with another.
      const branches = await git(topology!.repoDir, ['for-each-ref', '--format=%(refname:short) %(objectname)', 'refs/heads/baton/']);
      for (const t of tasks) expect(branches).toContain(`baton/${graph.id}/${t.key}/v${t.claimVersion} ${t.artifact!.revision}`);

      // The example agent read its task through the agent API from inside its sandbox, and its work is on the remote.
      expect(await git(topology!.repoDir, ['show', `${byKey.hello!.artifact!.revision}:hello.txt`])).toBe(
        'done by the example agent for hello',
      );

      // The workflows lived in the server's own Postgres database, not in a dev server's SQLite.
      const temporalDb = createPool(withDatabase(inject('databaseUrl'), topology!.temporal.databases[0]), { max: 1 });
      try {
        const { rows } = await temporalDb.query<{ n: number }>('SELECT count(*)::int AS n FROM executions');
        expect(rows[0]!.n).toBeGreaterThanOrEqual(5); // the graph's workflow and one per task
      } finally {
        await temporalDb.end();
      }
    } finally {
      await adminPool.end();
    }
  }, 1_200_000);
});
