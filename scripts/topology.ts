// baton's production topology on this machine, as test/topology runs it and as the README's
// "Production topology" describes it for many machines: a Temporal server built from its Go module
// with its persistence in PostgreSQL, baton's database and logins, a git remote served by
// `git daemon`, three `baton worker` processes with a work folder each, and `baton serve`. Each step
// is in src/testkit/topology.ts; this prints how to use what it started, and stops it all on Ctrl-C.
// Usage: DATABASE_URL=postgres://<admin>:<password>@127.0.0.1:5432/postgres node --import tsx scripts/topology.ts [workers]
// (not `npx tsx`, whose own signal handling can end this process before it has dropped what it made)
// (a login that may create databases and roles; Go on PATH builds the server once, into ~/.cache/baton).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { untilSignal } from '../src/cli/options.js';
import { DATABASE_URL_ENV, readEnv } from '../src/config.js';
import { resolveTemporalCli } from '../src/dev/temporalCli.js';
import { stderrLog } from '../src/log.js';
import { commitAll } from '../src/testkit/scriptedRepo.js';
import { startTopology } from '../src/testkit/topology.js';

const adminUrl = readEnv(DATABASE_URL_ENV);
if (!adminUrl) throw new Error(`${DATABASE_URL_ENV} is not set: name a PostgreSQL login that may create databases and roles`);
const workers = Number(process.argv[2] ?? 3);
if (!Number.isInteger(workers) || workers < 1) throw new Error(`workers must be a positive whole number, not ${process.argv[2]}`);

const dir = await mkdtemp(path.join(tmpdir(), 'baton-topology-'));
const temporalCli = await resolveTemporalCli({ log: stderrLog, progress: stderrLog });
const topology = await startTopology({ adminUrl, temporalCli: temporalCli.path, dir, log: stderrLog, workers });
const graph = path.join(dir, 'graph.yaml');
await writeFile(
  graph,
  [
    `repo: ${topology.repo}`,
    'base: main',
    'tasks:',
    '  - key: hello',
    `    run: echo hello > hello.txt && ${commitAll('hello')}`,
    '    verify: test -f hello.txt',
    '',
  ].join('\n'),
);
const env = Object.entries(topology.adminEnv)
  .map(([name, value]) => `${name}='${value}'`)
  .join(' ');
process.stdout.write(
  [
    '',
    `Temporal server ${topology.temporal.address} (namespace ${topology.temporal.namespace}), databases ${topology.temporal.databases.join(', ')}`,
    `Workers: ${topology.workers.workers.map((w) => w.identity).join(', ')} on task queue ${topology.workers.taskQueue}`,
    `Graph repository: ${topology.repo}`,
    `Agent API: ${topology.apiUrl} (tokens: ${env} npx baton token create <identity> --scope read,notes,submit)`,
    '',
    'Submit a graph to it:',
    `  ${env} npx baton submit --task-queue ${topology.workers.taskQueue} --watch ${graph}`,
    '',
    'Press Ctrl-C to stop everything and drop its databases.',
    '',
  ].join('\n'),
);
await untilSignal();
// Another Ctrl-C while stopping does not cut the stop short.
const stopping = () => stderrLog('Stopping: the workers, baton serve, git daemon and the Temporal server, then the databases...');
process.on('SIGINT', stopping).on('SIGTERM', stopping);
await topology.stop();
await rm(dir, { recursive: true, force: true });
