import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { batonHome, DATABASE_URL_ENV, readEnv, TEMPORAL_ADDRESS_ENV } from '../src/config.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, dropDatabase, ensureDatabase, withDatabase } from '../src/db/pool.js';
import { startDevStack, type DevStack } from '../src/dev/devStack.js';
import type { Log } from '../src/log.js';
import { connectClient } from '../src/temporal/connection.js';

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
