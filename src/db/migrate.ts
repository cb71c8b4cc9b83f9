import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { MIGRATION_CONSTANTS } from './migrationConstants.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Every migrator takes this lock, so concurrent `baton migrate` runs apply each file once.
const MIGRATION_LOCK_KEY = 'baton.migrate';
const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/** Thrown when a migration's text differs from what was applied to this database. */
export class MigrationChangedError extends Error {
  override readonly name = 'MigrationChangedError';
  constructor(readonly migrationId: number, readonly migrationName: string, readonly recorded: string | null) {
    super(
      `migration ${migrationId}_${migrationName} was changed after it was applied to this database ` +
        `(recorded checksum ${recorded ?? 'none'}). Migrations are append-only: add a new numbered file instead. ` +
        'A local embedded database can be started over by deleting .baton/postgres.',
    );
  }
}

const checksum = (sql: string) => createHash('sha256').update(sql).digest('hex');

export interface MigrateResult {
  applied: Migration[];
  alreadyApplied: number;
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
    migrations.push({ id, name: match[2]!, sql: substituteConstants(file, await readFile(path.join(dir, file), 'utf8')) });
  }
  return migrations;
}

function substituteConstants(file: string, sql: string): string {
  return sql.replace(/\{\{([a-z_]+)\}\}/g, (_, name: string) => {
    const value = MIGRATION_CONSTANTS[name];
    if (value === undefined) throw new Error(`migration ${file}: unknown constant {{${name}}}`);
    return value;
  });
}

/**
 * Applies every migration not yet recorded in `baton.migrations`, each in its own transaction,
 * under a session advisory lock. Safe to run concurrently and repeatedly.
 */
export async function migrate(pool: pg.Pool, migrations?: Migration[]): Promise<MigrateResult> {
  const all = migrations ?? (await loadMigrations());
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [MIGRATION_LOCK_KEY]);
    try {
      await client.query('CREATE SCHEMA IF NOT EXISTS baton');
      await client.query(`CREATE TABLE IF NOT EXISTS baton.migrations (
        id integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now(),
        checksum text
      )`);
      await client.query('ALTER TABLE baton.migrations ADD COLUMN IF NOT EXISTS checksum text');
      const { rows } = await client.query<{ id: number; checksum: string | null }>('SELECT id, checksum FROM baton.migrations');
      const done = new Map(rows.map((r) => [r.id, r.checksum]));
      const applied: Migration[] = [];
      for (const migration of all) {
        if (done.has(migration.id)) {
          // An edited migration never reaches a database that already ran it: say so, loudly.
          if (done.get(migration.id) !== checksum(migration.sql)) {
            throw new MigrationChangedError(migration.id, migration.name, done.get(migration.id) ?? null);
          }
          continue;
        }
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          await client.query('INSERT INTO baton.migrations (id, name, checksum) VALUES ($1, $2, $3)', [
            migration.id,
            migration.name,
            checksum(migration.sql),
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw new Error(`migration ${migration.id}_${migration.name} failed: ${(error as Error).message}`);
        }
        applied.push(migration);
      }
      return { applied, alreadyApplied: done.size };
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}
