import { DATABASE_URL_ENV, readEnv, TEMPORAL_ADDRESS_ENV } from '../config.js';
import { startDevStack, type DevStack, type DevStackOptions } from '../dev/devStack.js';
import { createPool } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import type { Log } from '../log.js';
import type pg from 'pg';

export interface OpenStack {
  stack: DevStack;
  pool: pg.Pool;
  close(): Promise<void>;
}

/**
 * Connects to the deployment named by `DATABASE_URL` / `TEMPORAL_ADDRESS`, starting the embedded
 * default for whichever is unset, and brings the schema up to date.
 */
export async function openStack(log: Log, options: DevStackOptions = {}): Promise<OpenStack> {
  const stack = await startDevStack({
    databaseUrl: readEnv(DATABASE_URL_ENV),
    temporalAddress: readEnv(TEMPORAL_ADDRESS_ENV),
    log,
    ...options,
  });
  const pool = createPool(stack.databaseUrl);
  try {
    const { applied } = await migrate(pool);
    if (applied.length) log(`Applied migrations: ${applied.map((m) => `${m.id}_${m.name}`).join(', ')}`);
  } catch (error) {
    await pool.end();
    await stack.stop();
    throw error;
  }
  return {
    stack,
    pool,
    close: async () => {
      await pool.end();
      await stack.stop();
    },
  };
}

/** Prints where everything runs, with the variables another shell needs to reach it. */
export function describeStack(stack: DevStack, log: Log): void {
  log(`Postgres ${stack.postgresVersion}${stack.embeddedPostgres ? ' (embedded)' : ''}: ${stack.databaseUrl}`);
  const version = stack.temporalServerVersion ? ` ${stack.temporalServerVersion}` : '';
  log(`Temporal${version}: ${stack.temporal.connectionOptions.address} (namespace ${stack.temporal.namespace})`);
  if (stack.temporalUiUrl) log(`Temporal UI: ${stack.temporalUiUrl}`);
}
