import { Client } from '@temporalio/client';
import type pg from 'pg';
import { DATABASE_URL_ENV, DEV_DATABASE_NAME, DEV_POSTGRES_PORT_DEFAULT, readEnv, TEMPORAL_ADDRESS_ENV } from '../config.js';
import { createPool } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import { pingPostgres } from '../dev/embeddedPostgres.js';
import { connectClient, temporalSettings, type TemporalSettings } from '../temporal/connection.js';

/** The database `baton dev` serves, for commands run in another shell without DATABASE_URL. */
export const DEV_DATABASE_URL = `postgresql://postgres:baton@127.0.0.1:${DEV_POSTGRES_PORT_DEFAULT}/${DEV_DATABASE_NAME}`;

export interface Deployment {
  pool: pg.Pool;
  temporal: Client;
  settings: TemporalSettings;
  close(): Promise<void>;
}

/**
 * Opens the database named by DATABASE_URL, or else that of a running `baton dev`, with the
 * schema up to date; explains how to get one when neither answers.
 */
export async function openDatabase(options: { max?: number; applicationName?: string } = {}): Promise<pg.Pool> {
  const databaseUrl = readEnv(DATABASE_URL_ENV) ?? DEV_DATABASE_URL;
  try {
    await pingPostgres(databaseUrl);
  } catch (error) {
    throw new Error(
      `cannot reach Postgres at ${readEnv(DATABASE_URL_ENV) ? DATABASE_URL_ENV : `${DEV_DATABASE_URL} (baton dev's default)`}: ` +
        `${(error as Error).message}. Set ${DATABASE_URL_ENV} and ${TEMPORAL_ADDRESS_ENV}, or start 'npx baton dev' in another shell.`,
    );
  }
  const pool = createPool(databaseUrl, options);
  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return pool;
}

/**
 * Connects to the deployment named by DATABASE_URL / TEMPORAL_ADDRESS, or else to a running
 * `baton dev` on its default ports.
 */
export async function connectDeployment(): Promise<Deployment> {
  const pool = await openDatabase();
  const settings = temporalSettings();
  const connection = await connectClient(settings).catch(async (error: Error) => {
    await pool.end();
    throw new Error(`cannot reach Temporal at ${settings.connectionOptions.address}: ${error.message}`);
  });
  return {
    pool,
    temporal: new Client({ connection, namespace: settings.namespace }),
    settings,
    close: async () => {
      await connection.close();
      await pool.end();
    },
  };
}
