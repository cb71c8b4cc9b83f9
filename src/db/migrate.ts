// The store's schema comes from two places, so the current definition of each function is in one place:
// - numbered migrations (src/db/migrations): tables, types, indexes and data; frozen history,
//   append-only, each applied once and checksummed;
// - definitions (src/db/functions): every function, trigger function and trigger in its current
//   form, one file per concept. Whenever any file's checksum differs from what the database
//   recorded, all of them are dropped and created again in one transaction, so the database holds
//   exactly what the files say: nothing stale, nothing left over.
// Both run under one session advisory lock, so concurrent migrators apply everything once. Before
// them the migrator makes sure baton's roles exist (src/db/roles.ts); after the migrations the
// schema's objects are handed to baton_owner, and the definitions are created as baton_owner.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { BatonError } from '../errors.js';
import type { Queryable } from './queryable.js';
import { adoptSchema, ensureRoles, OWNER_ROLE } from './roles.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
const DEFINITIONS_DIR = fileURLToPath(new URL('./functions/', import.meta.url));
const MIGRATION_LOCK_KEY = 'baton.migrate';
const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
const DEFINITION_FILE = /^[a-z0-9_]+\.sql$/;

/**
 * Checksums of migrations 0002-0006 as databases recorded them before the store's functions moved
 * out of them into src/db/functions (the files are kept in test/fixtures/migrations-0.1). Their
 * tables, types and data are exactly today's files; their functions are replaced by the
 * definitions. A database that recorded one of these is upgraded in place, not refused.
 */
const PRE_DEFINITIONS_CHECKSUMS: Readonly<Record<number, string>> = {
  2: '220ffd18322502b685da35c2a3887723151638357e97ed5cbf3b918921540747',
  3: 'aef8ca0623d5e8fc3b75122d56dfa441c8f8b0c927f609575eb75335a42c02fe',
  4: 'e6061f065d38aa493ba52cdc099c7780c2ce54d489de24598b1e54a56136ba2a',
  5: 'ec0e28d10d4828ca4851e7d7d7e2dc0388b0f577ea76b1b5935c556e695d67f4',
  6: 'f0a25479e6940c9306297a132a3451803964dcf623c8d3c828f6b0e05f9b3247',
};

interface Migration {
  id: number;
  name: string;
  sql: string;
}

/** One file of src/db/functions: functions, trigger functions and their triggers. */
interface Definition {
  file: string;
  sql: string;
}

/** Thrown when a migration's text differs from what was applied to this database. */
export class MigrationChangedError extends BatonError {
  override readonly name = 'MigrationChangedError';
  readonly code = 'migration_changed';
  constructor(
    readonly migrationId: number,
    readonly migrationName: string,
    readonly recorded: string | null,
  ) {
    super(
      `migration ${migrationId}_${migrationName} was changed after it was applied to this database ` +
        `(recorded checksum ${recorded ?? 'none'}). Migrations are append-only: add a new numbered file instead ` +
        '(functions and triggers live in src/db/functions and may be edited). ' +
        'A local embedded database can be started over by deleting .baton/postgres.',
    );
  }
}

export const checksum = (sql: string) => createHash('sha256').update(sql).digest('hex');

export interface MigrateResult {
  applied: Migration[];
  alreadyApplied: number;
  /** Migrations recorded before the split into definitions, accepted and re-recorded. */
  upgraded: number[];
  /** Whether the definitions were (re)created: they changed, or the database had none. */
  definitionsApplied: boolean;
}

/** Reads the numbered migration files, in order; a gap or duplicate number is an error. */
export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = MIGRATION_FILE.exec(file);
    if (!match) throw new Error(`migration file ${file} must be named NNNN_snake_case.sql`);
    const id = Number(match[1]);
    if (id !== migrations.length + 1) throw new Error(`migration ${file}: expected number ${migrations.length + 1}`);
    migrations.push({ id, name: match[2]!, sql: await readFile(path.join(dir, file), 'utf8') });
  }
  return migrations;
}

/** Reads the definition files in name order (files do not depend on each other's order). */
async function loadDefinitions(dir: string = DEFINITIONS_DIR): Promise<Definition[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  return Promise.all(
    files.map(async (file) => {
      if (!DEFINITION_FILE.test(file)) throw new Error(`definition file ${file} must be named snake_case.sql`);
      return { file, sql: await readFile(path.join(dir, file), 'utf8') };
    }),
  );
}

/**
 * Applies every migration not yet recorded in `baton.migrations`, each in its own transaction,
 * then the definitions if they changed, all under a session advisory lock. Safe to run
 * concurrently and repeatedly.
 */
export async function migrate(pool: pg.Pool, migrations?: Migration[], definitions?: Definition[]): Promise<MigrateResult> {
  const allMigrations = migrations ?? (await loadMigrations());
  const allDefinitions = definitions ?? (await loadDefinitions());
  // A connection of its own, without the pool's query timeout: a migrator may wait long for the lock
  // and a migration may run long on a big table. Ended, not returned: it never goes back to a pool
  // while it might still hold the lock.
  const client = new pg.Client({ ...(pool as unknown as { options: pg.ClientConfig }).options, query_timeout: 0 });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [MIGRATION_LOCK_KEY]);
    try {
      await ensureRoles(client);
      const result = await applyMigrations(client, allMigrations);
      return { ...result, definitionsApplied: await applyDefinitions(client, allDefinitions) };
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await client.end();
  }
}

async function applyMigrations(client: Queryable, all: Migration[]): Promise<Omit<MigrateResult, 'definitionsApplied'>> {
  await client.query('CREATE SCHEMA IF NOT EXISTS baton');
  await client.query(`CREATE TABLE IF NOT EXISTS baton.migrations (
    id integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    checksum text
  )`);
  const { rows } = await client.query<{ id: number; checksum: string | null }>('SELECT id, checksum FROM baton.migrations');
  const done = new Map(rows.map((r) => [r.id, r.checksum]));
  const applied: Migration[] = [];
  const upgraded: number[] = [];
  for (const migration of all) {
    if (done.has(migration.id)) {
      const recorded = done.get(migration.id);
      if (recorded === checksum(migration.sql)) continue;
      if (recorded === PRE_DEFINITIONS_CHECKSUMS[migration.id]) {
        await client.query('UPDATE baton.migrations SET checksum = $2 WHERE id = $1', [migration.id, checksum(migration.sql)]);
        upgraded.push(migration.id);
        continue;
      }
      // An edited migration never reaches a database that already ran it: say so, loudly.
      throw new MigrationChangedError(migration.id, migration.name, recorded ?? null);
    }
    await inTransaction(client, `migration ${migration.id}_${migration.name}`, async () => {
      await client.query(migration.sql);
      await client.query('INSERT INTO baton.migrations (id, name, checksum) VALUES ($1, $2, $3)', [
        migration.id,
        migration.name,
        checksum(migration.sql),
      ]);
    });
    applied.push(migration);
  }
  return { applied, alreadyApplied: done.size, upgraded };
}

async function applyDefinitions(client: Queryable, definitions: Definition[]): Promise<boolean> {
  await client.query(`CREATE TABLE IF NOT EXISTS baton.definitions (
    file text PRIMARY KEY,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  // Whatever the migrations made (and the two tables above) now belongs to the owner.
  await adoptSchema(client);
  const { rows } = await client.query<{ file: string; checksum: string }>('SELECT file, checksum FROM baton.definitions');
  const recorded = new Map(rows.map((r) => [r.file, r.checksum]));
  const current = definitions.map((d) => ({ ...d, checksum: checksum(d.sql) }));
  if (recorded.size === current.length && current.every((d) => recorded.get(d.file) === d.checksum)) return false;
  await inTransaction(client, 'definitions', async () => {
    // Created by the owner, so SECURITY DEFINER functions run as the owner and nobody else.
    await client.query(`SET LOCAL ROLE ${OWNER_ROLE}`);
    await dropDefinitions(client);
    await client.query('DELETE FROM baton.definitions');
    for (const definition of current) {
      try {
        await client.query(definition.sql);
      } catch (error) {
        throw new Error(`src/db/functions/${definition.file}: ${(error as Error).message}`);
      }
      await client.query('INSERT INTO baton.definitions (file, checksum) VALUES ($1, $2)', [definition.file, definition.checksum]);
    }
    // EXECUTE is what each file grants next to its function, and nothing for PUBLIC.
    await client.query('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA baton FROM PUBLIC');
  });
  return true;
}

/**
 * Drops every trigger, view and function in the baton schema, so the definitions are created from
 * nothing. No CASCADE: anything else that depends on them makes the whole transaction fail instead
 * of disappearing quietly.
 */
async function dropDefinitions(client: Queryable): Promise<void> {
  const { rows } = await client.query<{ statement: string }>(`
    SELECT format('DROP TRIGGER %I ON %s', t.tgname, t.tgrelid::regclass) AS statement
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     WHERE c.relnamespace = 'baton'::regnamespace AND NOT t.tgisinternal
    UNION ALL
    SELECT format('DROP VIEW IF EXISTS %s', c.oid::regclass)
      FROM pg_class c WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind = 'v'
    UNION ALL
    SELECT format('DROP FUNCTION %s', p.oid::regprocedure)
      FROM pg_proc p WHERE p.pronamespace = 'baton'::regnamespace AND p.prokind = 'f'`);
  for (const { statement } of rows) await client.query(statement);
}

const label = (m: Migration) => `${String(m.id).padStart(4, '0')}_${m.name}`;

/**
 * Thrown when a command that does not migrate meets a database without baton's schema, without
 * some of the migrations this baton ships (`missing` names them, `0006_fast_paths`), or with
 * store functions older than this baton's.
 */
export class DatabaseNotMigratedError extends BatonError {
  override readonly name = 'DatabaseNotMigratedError';
  readonly code = 'database_not_migrated';
  constructor(
    readonly missing: string[],
    readonly hasSchema: boolean,
  ) {
    super(
      `database is not migrated${hasSchema ? ` (missing ${missing.join(', ')})` : ''}: run \`baton migrate\` ` +
        '(or start `baton worker` or `baton dev`, which migrate as they start)',
    );
  }
}

/**
 * Refuses a database that lacks a migration or a definition file this baton ships, changing
 * nothing: it only reads the catalog and `baton.read_schema_state()`. Whether applied
 * migrations were edited is `migrate`'s business.
 */
export async function requireMigrated(db: Queryable): Promise<void> {
  const { migrations, definitions } = await shippedSchema();
  // Read through a function: a component's login may read no table (SPEC S1).
  const { rows } = await db.query<{ present: boolean }>("SELECT to_regprocedure('baton.read_schema_state()') IS NOT NULL AS present");
  if (!rows[0]?.present) throw new DatabaseNotMigratedError(migrations.map(label), false);
  const state = (await db.query<{ kind: string; name: string; checksum: string }>('SELECT * FROM baton.read_schema_state()')).rows;
  const applied = new Set(state.filter((r) => r.kind === 'migration').map((r) => Number(r.name)));
  const recorded = new Map(state.filter((r) => r.kind === 'definition').map((r) => [r.name, r.checksum]));
  const missing = [
    ...migrations.filter((m) => !applied.has(m.id)).map(label),
    ...definitions.filter((d) => recorded.get(d.file) !== d.checksum).map((d) => `functions/${d.file}`),
  ];
  if (missing.length) throw new DatabaseNotMigratedError(missing, true);
}

let shipped: Promise<{ migrations: Migration[]; definitions: { file: string; checksum: string }[] }> | undefined;

/**
 * The migrations and definitions this baton ships, read and checksummed once per process: a
 * readiness probe asks `requireMigrated` every few seconds, and the files do not change under it.
 */
function shippedSchema() {
  shipped ??= Promise.all([loadMigrations(), loadDefinitions()]).then(
    ([migrations, definitions]) => ({ migrations, definitions: definitions.map((d) => ({ file: d.file, checksum: checksum(d.sql) })) }),
    (error: unknown) => {
      shipped = undefined;
      throw error;
    },
  );
  return shipped;
}

async function inTransaction(client: Queryable, what: string, work: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await work();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw new Error(`${what} failed: ${(error as Error).message}`);
  }
}
