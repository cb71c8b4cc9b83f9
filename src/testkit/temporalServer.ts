// The Temporal server teams deploy, not the dev server: built from its Go module (once per machine,
// cached), its persistence and visibility in PostgreSQL with the schema applied by Temporal's own
// SQL tool, started on free loopback ports. Used by the production-topology test.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../dev/freePort.js';
import { canBind } from '../dev/portTaken.js';
import { run } from '../dev/run.js';
import { waitFor } from '../dev/waitFor.js';
import type { Log } from '../log.js';

/** The pinned server release: built by Go 1.26.8 or later (the module's own go line). */
export const TEMPORAL_SERVER_VERSION = 'v1.32.0';
const MODULE = 'go.temporal.io/server';
/** How long a server on Postgres may take to answer after it starts, on a busy machine. */
const START_TIMEOUT_MS = 180_000;

interface TemporalServerBuild {
  /** The server binary (`cmd/server`). */
  server: string;
  /** Temporal's SQL schema tool (`cmd/tools/sql`). */
  sqlTool: string;
  /** The release's PostgreSQL schema folder (`schema/postgresql/v12`). */
  schemaDir: string;
}

/** Where builds are kept across clones: `$XDG_CACHE_HOME/baton`, else `~/.cache/baton`. */
function machineCache(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'baton', `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/**
 * The server and its SQL tool, built with `go install` into the machine's cache the first time
 * (several minutes; the module and its dependencies come from the Go module proxy), reused after.
 */
async function temporalServerBuild(log: Log): Promise<TemporalServerBuild> {
  const dir = machineCache();
  const module = `${MODULE}@${TEMPORAL_SERVER_VERSION}`;
  const go = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
    run('go', args, { env }).catch((error: Error) => {
      throw new Error(
        `go ${args[0]} ${module} failed: ${error.message}\n` +
          `The production-topology test builds the Temporal server from its Go module: it needs Go 1.26.8 or later on PATH and the Go module proxy.`,
      );
    });
  const server = path.join(dir, 'server');
  const sqlTool = path.join(dir, 'sql');
  if (!(await exists(server)) || !(await exists(sqlTool))) {
    log(`Building the Temporal server ${TEMPORAL_SERVER_VERSION} from ${MODULE} into ${dir} (once per machine; several minutes)...`);
    const started = Date.now();
    await mkdir(path.dirname(dir), { recursive: true });
    // Built aside and moved into place, so a build cut short leaves nothing that looks finished.
    const building = await mkdtemp(`${dir}.building-`);
    try {
      await go(['install', `${MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`, `${MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`], {
        ...process.env,
        GOBIN: building,
        GOFLAGS: '-mod=mod',
      });
      await rm(dir, { recursive: true, force: true });
      await rename(building, dir);
    } finally {
      await rm(building, { recursive: true, force: true });
    }
    log(`Built the Temporal server in ${Math.round((Date.now() - started) / 1000)} s.`);
  }
  const { Dir } = JSON.parse((await go(['mod', 'download', '-json', module])).stdout) as { Dir: string };
  return { server, sqlTool, schemaDir: path.join(Dir, 'schema', 'postgresql', 'v12') };
}

export interface TemporalServer {
  /** The frontend, `127.0.0.1:<port>`. */
  address: string;
  namespace: string;
  /** The server's own databases on the Postgres it was given: persistence, then visibility. */
  databases: [string, string];
  /** Stops the server and drops its databases. */
  stop(): Promise<void>;
}

/**
 * Starts the built server with its persistence and visibility in two new databases on the Postgres
 * `adminUrl` names (a login that may create databases), schema applied by Temporal's SQL tool as
 * an operator would, and registers the `default` namespace with the Temporal CLI `temporalCli`.
 * `dynamicConfig` is the server's dynamic config file (YAML), if it has one.
 */
export async function startTemporalServer(options: {
  adminUrl: string;
  temporalCli: string;
  log: Log;
  dynamicConfig?: string;
}): Promise<TemporalServer> {
  const build = await temporalServerBuild(options.log);
  const url = new URL(options.adminUrl);
  const suffix = randomBytes(4).toString('hex');
  const databases: [string, string] = [`temporal_${suffix}`, `temporal_${suffix}_visibility`];
  const sql = (database: string, ...args: string[]) =>
    run(
      build.sqlTool,
      [
        '--plugin',
        'postgres12',
        '--ep',
        url.hostname,
        '-p',
        url.port || '5432',
        '-u',
        decodeURIComponent(url.username),
        '--db',
        database,
        ...args,
      ],
      { env: { ...process.env, SQL_PASSWORD: decodeURIComponent(url.password) } },
    );
  for (const [database, schema] of [
    [databases[0], 'temporal'],
    [databases[1], 'visibility'],
  ] as const) {
    await sql(database, 'create-database');
    await sql(database, 'setup-schema', '-v', '0.0');
    await sql(database, 'update-schema', '-d', path.join(build.schemaDir, schema, 'versioned'));
  }
  const home = await mkdtemp(path.join(tmpdir(), 'baton-temporal-server-'));
  const [frontend, frontendHttp, history, matching, worker] = await Promise.all(Array.from({ length: 5 }, () => freePort()));
  // The server records each service's membership port in a smallint column: the kernel's free ports
  // (32768 and up) do not fit, so those are found below it.
  const membership: number[] = [];
  while (membership.length < 4) {
    const port = 10_000 + Math.floor(Math.random() * 22_000);
    if (!membership.includes(port) && (await canBind(port))) membership.push(port);
  }
  const store = (database: string, conns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName: database,
      connectAddr: `${url.hostname}:${url.port || '5432'}`,
      connectProtocol: 'tcp',
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      maxConns: conns,
      maxIdleConns: conns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (grpcPort: number, membershipPort: number, more: Record<string, number> = {}) => ({
    rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...more },
  });
  const address = `127.0.0.1:${frontend}`;
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: 4,
      // Each of the server's four services opens pools of its own: 4 + 2 connections each keep the
      // whole server under 25 of the Postgres's connections, which test files beside it share.
      datastores: { default: store(databases[0], 4), visibility: store(databases[1], 2) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: rpc(frontend!, membership[0]!, { httpPort: frontendHttp! }),
      history: rpc(history!, membership[1]!),
      matching: rpc(matching!, membership[2]!),
      worker: rpc(worker!, membership[3]!),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: address } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    ...(options.dynamicConfig !== undefined && {
      dynamicConfigClient: { filepath: path.join(home, 'dynamic-config.yaml'), pollInterval: '10s' },
    }),
  };
  if (options.dynamicConfig !== undefined) await writeFile(path.join(home, 'dynamic-config.yaml'), options.dynamicConfig);
  // YAML is a superset of JSON: the config file is the object as JSON.
  const configFile = path.join(home, 'temporal-server.yaml');
  await writeFile(configFile, JSON.stringify(config, null, 2));
  let output = '';
  const child: ChildProcess = spawn(build.server, ['--config-file', configFile, '--allow-no-auth', 'start'], {
    cwd: home,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The end of what it printed, for the error when it stops at start.
  const collect = (c: Buffer) => (output = (output + c.toString()).slice(-8_000));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      // A hang guard, as for the dev server: a server that ignores SIGTERM is killed.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    for (const database of databases) {
      await sql(database, 'drop', '-f').catch((error: Error) =>
        options.log(`Temporal server: could not drop database ${database}: ${error.message}`),
      );
    }
    await rm(home, { recursive: true, force: true });
  };
  try {
    await waitFor(
      `the Temporal server at ${address} to answer`,
      () => run(options.temporalCli, ['operator', 'cluster', 'health', '--address', address]),
      {
        timeoutMs: START_TIMEOUT_MS,
        intervalMs: 500,
        abort: () => (child.exitCode !== null ? new Error(`the Temporal server exited (${child.exitCode}):\n${output}`) : undefined),
      },
    );
    await run(options.temporalCli, ['operator', 'namespace', 'create', '--namespace', 'default', '--address', address]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { address, namespace: 'default', databases, stop };
}
