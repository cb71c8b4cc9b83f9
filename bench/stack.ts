import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { batonHome, DATABASE_URL_ENV, readEnv, TEMPORAL_ADDRESS_ENV } from '../src/config.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, dropDatabase, ensureDatabase, withDatabase } from '../src/db/pool.js';
import { startDevStack, type DevStack } from '../src/dev/devStack.js';
import { startTemporalDevServer } from '../src/dev/temporalDevServer.js';
import type { Log } from '../src/log.js';
import { connectClient, temporalSettings } from '../src/temporal/connection.js';

/** Where the benchmark's private embedded stack keeps its Postgres data. */
export const BENCH_HOME = path.join(batonHome(), 'bench');

export interface BenchStack {
  stack: DevStack;
  /** A database of this run's own, migrated; dropped on close. */
  databaseUrl: string;
  databaseName: string;
  pool: pg.Pool;
  temporal: Client;
  connection: Connection;
  /** Root pids whose CPU time the scale benchmark accounts for (embedded servers only). */
  pids: { postgres?: number; temporal?: number };
  /** Environment for worker processes: where to find Postgres and Temporal. */
  workerEnv: Record<string, string>;
  close(): Promise<void>;
}

/**
 * Opens the deployment named by DATABASE_URL / TEMPORAL_ADDRESS, or else a private embedded stack
 * on free ports (as `baton drill` does), so a running `baton dev` is untouched. Either way the run
 * gets a fresh database of its own, so earlier runs' rows do not slow this one down.
 */
export async function openBenchStack(log: Log): Promise<BenchStack> {
  const external = { databaseUrl: readEnv(DATABASE_URL_ENV), temporalAddress: readEnv(TEMPORAL_ADDRESS_ENV) };
  const stack = await startDevStack({
    ...external,
    home: BENCH_HOME,
    postgresPort: 0,
    temporalPort: 0,
    headless: true,
    ephemeralTemporal: true,
    log,
  });
  const databaseName = `baton_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  let databaseUrl = stack.databaseUrl;
  let ownDatabase = false;
  try {
    await ensureDatabase(stack.databaseUrl, databaseName);
    databaseUrl = withDatabase(stack.databaseUrl, databaseName);
    ownDatabase = true;
  } catch (error) {
    // No CREATE DATABASE right on an external server: use the database we were given.
    log(`bench: could not create a database of its own (${(error as Error).message}); using ${DATABASE_URL_ENV} as is`);
  }
  const pool = createPool(databaseUrl, { max: 40, applicationName: 'baton-bench' });
  await migrate(pool);
  const connection = await connectClient(stack.temporal);
  const temporal = new Client({ connection, namespace: stack.temporal.namespace });
  const pids = {
    postgres: stack.embeddedPostgres ? await postmasterPid(path.join(BENCH_HOME, 'postgres')) : undefined,
    temporal: stack.temporalCli ? await findTemporalServerPid(stack.temporal.connectionOptions.address ?? '') : undefined,
  };
  return {
    stack,
    databaseUrl,
    databaseName,
    pool,
    temporal,
    connection,
    pids,
    workerEnv: {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: stack.temporal.connectionOptions.address ?? '',
      TEMPORAL_NAMESPACE: stack.temporal.namespace,
    },
    close: async () => {
      await connection.close();
      await pool.end();
      if (ownDatabase) await dropDatabase(stack.databaseUrl, databaseName).catch(() => {});
      await stack.stop();
    },
  };
}

/** A Temporal server as one side of a measurement uses it. */
export interface BenchTemporal {
  temporal: Client;
  connection: Connection;
  /** The server's root pid, for CPU accounting (a server started here only). */
  pid?: number;
  /** Environment for worker processes: the stack's, with this server's address. */
  workerEnv: Record<string, string>;
}

/**
 * Runs `fn` on a Temporal dev server of its own, in memory as the stack's is, stopped afterwards.
 * The dev server slows as it holds more workflows (four 2,000-task graphs in a row on one server
 * took 44, 88, 100 and 166 s of its CPU), so on the stack's server the side that ran second paid
 * for the first one's workflows. On a deployment named by TEMPORAL_ADDRESS, `fn` runs on that server.
 */
export async function withOwnTemporal<T>(bench: BenchStack, log: Log, fn: (server: BenchTemporal) => Promise<T>): Promise<T> {
  const cli = bench.stack.temporalCli;
  if (!cli) return fn({ temporal: bench.temporal, connection: bench.connection, pid: bench.pids.temporal, workerEnv: bench.workerEnv });
  const server = await startTemporalDevServer({ cliPath: cli.path, headless: true, namespace: bench.stack.temporal.namespace, log });
  try {
    const connection = await connectClient(temporalSettings({ address: server.address, namespace: server.namespace }));
    try {
      return await fn({
        temporal: new Client({ connection, namespace: server.namespace }),
        connection,
        pid: server.process.pid,
        workerEnv: { ...bench.workerEnv, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace },
      });
    } finally {
      await connection.close();
    }
  } finally {
    await server.stop();
  }
}

async function postmasterPid(dataDir: string): Promise<number | undefined> {
  const text = await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => '');
  const pid = Number(text.split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** The dev server started here: the `temporal server start-dev` process listening on `address`. */
async function findTemporalServerPid(address: string): Promise<number | undefined> {
  const port = address.split(':').at(-1);
  const { readdir } = await import('node:fs/promises');
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const args = cmdline.split('\0');
    if (args.includes('start-dev') && args.includes(String(port))) return Number(entry);
  }
  return undefined;
}
