import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dumpSchema, SCHEMA_SNAPSHOT_PATH } from '../../src/db/schemaSnapshot.js';
import { TASK_STATUSES } from '../../src/tasks/states.js';
import { useTestDatabase } from '../helpers/db.js';

const DB_DIR = 'src/db';
// CONTRIBUTING.md: no file over about 400 lines; a migration or definition file that grows past this is split.
const MAX_SQL_FILE_LINES = 400;

const db = useTestDatabase();

async function sqlFiles(): Promise<{ file: string; text: string }[]> {
  const files: { file: string; text: string }[] = [];
  for (const dir of ['migrations', 'functions']) {
    for (const name of (await readdir(path.join(DB_DIR, dir))).filter((f) => f.endsWith('.sql')).sort()) {
      files.push({ file: `${dir}/${name}`, text: await readFile(path.join(DB_DIR, dir, name), 'utf8') });
    }
  }
  return files;
}

describe('the schema', () => {
  it('matches the checked-in snapshot (run `npm run db:snapshot` after a schema change)', async () => {
    const snapshot = await readFile(SCHEMA_SNAPSHOT_PATH, 'utf8');
    const actual = await dumpSchema(db.pool);
    if (actual !== snapshot) {
      const [a, s] = [actual.split('\n'), snapshot.split('\n')];
      const line = a.findIndex((text, i) => text !== s[i]);
      expect.fail(
        `${SCHEMA_SNAPSHOT_PATH} is stale: run \`npm run db:snapshot\` and review the diff.\n` +
          `first difference at line ${line + 1}:\n  snapshot: ${s[line] ?? '(end of file)'}\n  database: ${a[line] ?? '(end of file)'}`,
      );
    }
  });

  it('holds exactly the task statuses defined in TypeScript', async () => {
    const { rows } = await db.pool.query('SELECT status FROM baton.task_statuses ORDER BY status');
    expect(rows.map((r) => r.status)).toEqual([...TASK_STATUSES].sort());
  });

  it('defines every function in exactly one file, never in a migration, and keeps every file short', async () => {
    const definedIn = new Map<string, string[]>();
    for (const { file, text } of await sqlFiles()) {
      expect(text.split('\n').length, `${file} is over ${MAX_SQL_FILE_LINES} lines: split it by concept`).toBeLessThanOrEqual(
        MAX_SQL_FILE_LINES,
      );
      for (const [, name] of text.matchAll(/^CREATE (?:OR REPLACE )?(?:FUNCTION|PROCEDURE|VIEW|TRIGGER) ([\w.]+)/gim)) {
        definedIn.set(name!, [...(definedIn.get(name!) ?? []), file]);
      }
    }
    const inMigrations = [...definedIn].filter(([, files]) => files.some((f) => f.startsWith('migrations/')));
    const twice = [...definedIn].filter(([, files]) => files.length > 1);
    expect(inMigrations, 'functions, triggers and views belong in src/db/functions').toEqual([]);
    expect(twice, 'each definition lives in one file').toEqual([]);
    // Every function the database holds comes from a definition file.
    const { rows } = await db.pool.query("SELECT 'baton.' || proname AS name FROM pg_proc WHERE pronamespace = 'baton'::regnamespace");
    expect(rows.map((r) => r.name).filter((name) => !definedIn.has(name))).toEqual([]);
  });
});
