// baton's production topology on one machine, set up step by step as an operator sets it up on
// many (README, "Production topology"), with nothing shared between the workers but Postgres,
// Temporal and the git remote: the Temporal server built from its Go module with its persistence in
// Postgres and docker-compose.yml's dynamic config; baton's database, migrated by `baton migrate`,
// with a worker login and an agent-API login made by `baton login`; the graph's repository, a bare
// repository served by `git daemon` on loopback; `baton worker` processes, each with a work folder
// (and so a mirror) of its own, on the worker login; and `baton serve` on the agent login, for
// remote pool agents. `scripts/topology.ts` runs it for a person; test/topology runs a graph on it.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import { freePort } from '../dev/freePort.js';
import { run } from '../dev/run.js';
import { waitFor } from '../dev/waitFor.js';
import { asLogin } from '../db/logins.js';
import { createPool, dropDatabase, ensureDatabase, withDatabase } from '../db/pool.js';
import type { Log } from '../log.js';
import { BATON_BIN, PACKAGE_ROOT } from '../packageRoot.js';
import { git } from '../runners/git.js';
import { startGitDaemon, type GitDaemon } from './gitDaemon.js';
import { startTemporalServer, type TemporalServer } from './temporalServer.js';
import { startWorkerFleet, type WorkerFleet } from './workerFleet.js';
import { spawnBaton, watchChild } from './workerProcess.js';

/** How long `baton serve` may take to answer on a busy machine. */
const SERVE_TIMEOUT_MS = 120_000;

export interface Topology {
  temporal: TemporalServer;
  /** baton's database as its administrator (the login that migrated it): for `baton submit`, `token create` and the like. */
  adminEnv: Record<string, string>;
  /** What each `baton worker` runs with: the worker login, the Temporal server and namespace. */
  workerEnv: Record<string, string>;
  /** The graph's repository as the workers and agents reach it: `git://127.0.0.1:<port>/app.git`. */
  repo: string;
  /** That repository on disk (the git host's side), for a test to look into. */
  repoDir: string;
  workers: WorkerFleet;
  /** `baton serve`'s agent API. */
  apiUrl: string;
  /** `baton token create <identity> --scope <scopes>`: the token's secret. */
  token(identity: string, scopes: string[]): Promise<string>;
  /** Stops everything, drops baton's database and logins and the Temporal server's databases. */
  stop(): Promise<void>;
}

/** The dynamic config docker-compose.yml gives its Temporal server: this topology's server runs with the same. */
async function composeTemporalDynamicConfig(): Promise<string> {
  const compose = YAML.parse(await readFile(path.join(PACKAGE_ROOT, 'docker-compose.yml'), 'utf8')) as {
    configs?: Record<string, { content?: string }>;
  };
  const content = compose.configs?.['temporal-dynamic-config']?.content;
  if (!content) throw new Error("docker-compose.yml has no config 'temporal-dynamic-config' for its Temporal server");
  return content;
}

/** `baton <args>` to its end, as an operator runs it; its stdout. */
async function baton(args: string[], env: Record<string, string>): Promise<string> {
  return (await run(process.execPath, [BATON_BIN, ...args], { env: { ...process.env, ...env } })).stdout;
}

/**
 * Sets the topology up under `dir` (a folder of its own), on the Postgres `adminUrl` names (a login
 * that may create databases and roles), with `workers` worker processes and a repository whose
 * first commit holds `files`. Each step is logged; a step that fails stops what was started.
 */
export async function startTopology(options: {
  adminUrl: string;
  temporalCli: string;
  dir: string;
  log: Log;
  workers?: number;
  files?: Record<string, string>;
  /** More environment for each worker, e.g. its agents' isolation (`BATON_AGENT_*`). */
  workerSettings?: Record<string, string>;
}): Promise<Topology> {
  const { log, dir } = options;
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch((error: Error) => log(`topology: ${error.message}`));
  };
  try {
    log('1/5 Temporal server on PostgreSQL (Temporal SQL tool for the schema)');
    const temporal = await startTemporalServer({
      adminUrl: options.adminUrl,
      temporalCli: options.temporalCli,
      log,
      dynamicConfig: await composeTemporalDynamicConfig(),
    });
    stops.push(() => temporal.stop());

    log("2/5 baton's database: `baton migrate`, then `baton login` for the workers and the agent API");
    const database = `baton_topology_${randomBytes(4).toString('hex')}`;
    await ensureDatabase(options.adminUrl, database);
    const adminUrl = withDatabase(options.adminUrl, database);
    const logins = { worker: `${database}_worker`, agent: `${database}_agent` };
    stops.push(() => dropBatonDatabase(options.adminUrl, database, Object.values(logins)));
    await baton(['migrate'], { DATABASE_URL: adminUrl });
    const loginUrls: Record<string, string> = {};
    for (const [role, login] of Object.entries(logins)) {
      const password = randomBytes(18).toString('base64url');
      await baton(['login', login, '--role', role], { DATABASE_URL: adminUrl, BATON_LOGIN_PASSWORD: password });
      loginUrls[role] = asLogin(adminUrl, login, password);
    }

    log('3/5 the graph repository: a bare repository, served by `git daemon` on loopback');
    const repos = path.join(dir, 'repos');
    const seed = path.join(dir, 'seed');
    await mkdir(repos, { recursive: true });
    await git(dir, ['init', '--quiet', '-b', 'main', seed]);
    for (const [name, content] of Object.entries(options.files ?? { 'README.md': '# app\n' }))
      await writeFile(path.join(seed, name), content);
    await git(seed, ['add', '.']);
    await git(seed, ['commit', '--quiet', '-m', 'initial']);
    const repoDir = path.join(repos, 'app.git');
    await git(dir, ['clone', '--quiet', '--bare', seed, repoDir]);
    await rm(seed, { recursive: true, force: true });
    const daemon: GitDaemon = await startGitDaemon(repos, 'app.git');
    stops.push(() => daemon.stop());

    log(`4/5 ${options.workers ?? 3} \`baton worker\` processes on the worker login, each with a work folder of its own`);
    const workerEnv = {
      ...options.workerSettings,
      DATABASE_URL: loginUrls.worker!,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
    };
    const workers = await startWorkerFleet({ name: 'topology', env: workerEnv, size: options.workers ?? 3 });
    stops.push(() => workers.stop());

    log('5/5 `baton serve` (the agent API) on the agent login');
    const port = await freePort();
    const serve = spawnBaton(['serve', '--port', String(port)], { ...process.env, DATABASE_URL: loginUrls.agent! });
    const served = watchChild(serve);
    stops.push(async () => {
      serve.kill('SIGTERM');
      await served.exited;
    });
    const apiUrl = `http://127.0.0.1:${port}`;
    let exited = false;
    void served.exited.then(() => (exited = true));
    await waitFor(
      '`baton serve` to answer',
      async () => {
        const response = await fetch(`${apiUrl}/openapi.json`);
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
      },
      {
        timeoutMs: SERVE_TIMEOUT_MS,
        intervalMs: 200,
        abort: () => (exited ? new Error(`baton serve exited: ${served.output()}`) : undefined),
      },
    );

    const adminEnv = { DATABASE_URL: adminUrl, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace };
    return {
      temporal,
      adminEnv,
      workerEnv,
      repo: daemon.url('app.git'),
      repoDir,
      workers,
      apiUrl,
      token: async (identity, scopes) => (await baton(['token', 'create', identity, '--scope', scopes.join(',')], adminEnv)).trim(),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Drops baton's database and its logins (their sessions have ended with the processes). */
async function dropBatonDatabase(serverUrl: string, database: string, logins: string[]): Promise<void> {
  await dropDatabase(serverUrl, database);
  const server = createPool(serverUrl, { max: 1 });
  try {
    for (const login of logins) await server.query(`DROP ROLE IF EXISTS ${login}`);
  } finally {
    await server.end();
  }
}
