// `npm run db:snapshot`: migrates a scratch database and writes its whole schema to
// src/db/schema.sql, the file a test compares with every freshly migrated database.
// Uses DATABASE_URL when set (a server baton may create databases on), else an embedded Postgres.
import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { batonHome, DATABASE_URL_ENV, readEnv } from '../src/config.js';
import { startEmbeddedPostgres } from '../src/dev/embeddedPostgres.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, dropDatabase, ensureDatabase, withDatabase } from '../src/db/pool.js';
import { dumpSchema, SCHEMA_SNAPSHOT_PATH } from '../src/db/schemaSnapshot.js';

const given = readEnv(DATABASE_URL_ENV);
// Under .baton like the tests' server: run as root, the `postgres` OS user must reach the data folder.
const home = given ? undefined : path.join(batonHome(), 'snapshot', `run-${process.pid}`);
const embedded = home
  ? await startEmbeddedPostgres({ dataDir: path.join(home, 'postgres'), log: (line) => console.error(line) })
  : undefined;
const serverUrl = given ?? embedded!.url;
const database = `baton_snapshot_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
try {
  await ensureDatabase(serverUrl, database);
  const pool = createPool(withDatabase(serverUrl, database), { max: 1 });
  try {
    await migrate(pool);
    await writeFile(SCHEMA_SNAPSHOT_PATH, await dumpSchema(pool));
  } finally {
    await pool.end();
  }
  await dropDatabase(serverUrl, database);
  console.error(`wrote ${SCHEMA_SNAPSHOT_PATH}`);
} finally {
  await embedded?.stop();
  if (home) await rm(home, { recursive: true, force: true });
}
