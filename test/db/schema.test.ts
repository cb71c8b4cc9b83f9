import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/queryable.js';
import { claimsSilent } from '../../src/db/sql/claims.js';
import { dumpSchema, SCHEMA_SNAPSHOT_PATH } from '../../src/db/schemaSnapshot.js';
import { taskNoteAdd } from '../../src/db/sql/ownerWrites.js';
import { taskRead } from '../../src/db/sql/reads.js';
import { TASK_STATUSES } from '../../src/tasks/states.js';
import { useTestDatabase } from '../helpers/db.js';
import { insertTask, storeClaims, verifyTask } from '../helpers/tasks.js';

const DB_DIR = 'src/db';
// CONTRIBUTING.md: no file over about 400 lines; a migration or definition file that grows past this is split.
const MAX_SQL_FILE_LINES = 400;
// Rows of another task in the tables a task's own reads must not pass over.
const OTHER_ROWS = 200;

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

  it('reads tasks through task_view inlined into the query, never called once per task', async () => {
    // Called in the select list (`(baton.task_view(t)).*`), a SQL function is planned again on every
    // read, once per column; named in FROM it is inlined, and the plan has no function left in it.
    const calledAsValue = (await sqlFiles())
      .filter(({ text }) => /\(baton\.task_view\(/.test(text.replace(/--.*$/gm, '')))
      .map(({ file }) => file);
    expect(calledAsValue).toEqual([]);
    const { rows } = await db.pool.query(
      'EXPLAIN (FORMAT JSON) SELECT v.* FROM baton.tasks t, baton.task_view(t) v WHERE t.graph_id = $1',
      ['g'],
    );
    expect(JSON.stringify(rows[0]['QUERY PLAN'])).not.toContain('Function Scan');
  });

  it("reads a task's own rows through indexes: no table is read whole on its way from claim to verified, or for its page", async () => {
    // Another task's notes and verifications (failed checks, written straight in: test-only), so a
    // read of either table that is not narrowed to the task by an index passes over them.
    const other = await insertTask(db.pool, { status: 'verified' });
    await db.pool.query(`INSERT INTO baton.task_notes (task_id, author, body) SELECT $1, 'someone', 'a note' FROM generate_series(1, $2)`, [
      other.id,
      OTHER_ROWS,
    ]);
    await db.pool.query(
      `INSERT INTO baton.verifications (task_id, claim_version, revision, command, exit_code, output_digest, verifier, passed)
       SELECT $1, 1, 'rev-0', 'check', 1, 'sha256:x', 'verifier', false FROM generate_series(1, $2)`,
      [other.id, OTHER_ROWS],
    );
    const task = await insertTask(db.pool);
    const conn = await db.pool.connect();
    try {
      await conn.query('BEGIN');
      // Postgres still reads a table whole when no index serves the query; only then.
      await conn.query('SET LOCAL enable_seqscan = off');
      const before = await tableReads(conn);
      await verifyTask(conn, task.id, 'rev-1');
      await taskNoteAdd(conn, task.id, 'someone', 'a note');
      expect((await taskRead(conn, task.id)).status).toBe('verified');
      await conn.query('SELECT baton.agent_view_task($1)', [task.id]);
      const readWhole = [...(await tableReads(conn))]
        .map(([table, r]) => ({ table, scans: r.scans - (before.get(table)?.scans ?? 0), rows: r.rows - (before.get(table)?.rows ?? 0) }))
        .filter((r) => r.scans > 0 || r.rows >= OTHER_ROWS);
      expect(readWhole).toEqual([]);
    } finally {
      await conn.query('ROLLBACK');
      conn.release();
    }
  });

  // Every worker asks claims_silent four times a second; a store-path claimer may hold thousands of
  // claims, which the watch leaves out (migration 0025), so its read must not pass over them either.
  it('looks for silent run claims without passing over the store-path claims held', async () => {
    await storeClaims(db.pool, OTHER_ROWS, 'store-claimer', 600_000);
    const conn = await db.pool.connect();
    try {
      await conn.query('BEGIN');
      await conn.query('SET LOCAL enable_seqscan = off');
      const before = await tableReads(conn);
      await claimsSilent(conn, 20, 180_000);
      const tasks = (await tableReads(conn)).get('tasks')!;
      expect(tasks.scans - before.get('tasks')!.scans).toBe(0);
      expect(tasks.rows - before.get('tasks')!.rows).toBeLessThan(OTHER_ROWS);
    } finally {
      await conn.query('ROLLBACK');
      conn.release();
    }
  });
});

describe("a shared object's open suggestions", () => {
  // objects.list gathers each listed object's open suggestions; approved ones stay for good (SPEC O6).
  it("are read through an index: a list passes over no other object's suggestions, and none approved", async () => {
    await db.pool.query(
      "INSERT INTO baton.objects (key, silence_timeout_ms, created_by) VALUES ('busy', 60000, 'test'), ('quiet', 60000, 'test')",
    );
    // Another object's open suggestions, and this one's approved ones.
    await db.pool.query(
      `INSERT INTO baton.object_suggestions (object_key, suggested_by, base_version, content, status)
       SELECT o.key, 'someone', 0, 'x', o.status FROM generate_series(1, $1), (VALUES ('busy', 'open'), ('quiet', 'approved')) o(key, status)`,
      [OTHER_ROWS],
    );
    await db.pool.query(
      "INSERT INTO baton.object_suggestions (object_key, suggested_by, base_version, content) VALUES ('quiet', 'someone', 0, 'y')",
    );
    await db.pool.query(
      "INSERT INTO baton.agent_tokens (id, identity, scopes, secret_sha256, created_by) VALUES ('tok_00000000000000ad', 'admin', '{admin}', sha256('t'), 'test')",
    );
    const conn = await db.pool.connect();
    try {
      await conn.query('BEGIN');
      await conn.query('SET LOCAL enable_seqscan = off');
      const before = await tableReads(conn);
      const { rows } = await conn.query<{ view: { objects: { key: string; suggestions: unknown[] }[] } }>(
        `SELECT baton.agent_view_objects(t, '{"key": "quiet"}') AS view FROM baton.agent_tokens t WHERE t.id = 'tok_00000000000000ad'`,
      );
      expect(rows[0]!.view.objects.map((o) => [o.key, o.suggestions.length])).toEqual([['quiet', 1]]);
      const suggestions = (await tableReads(conn)).get('object_suggestions')!;
      expect(suggestions.scans - before.get('object_suggestions')!.scans).toBe(0);
      expect(suggestions.rows - before.get('object_suggestions')!.rows).toBe(1);
    } finally {
      await conn.query('ROLLBACK');
      conn.release();
    }
  });
});

/**
 * Each baton table's sequential scans and rows read (by either kind of scan) on this connection, as
 * far as not yet reported to the statistics: this transaction's reads among them.
 */
async function tableReads(conn: Queryable): Promise<Map<string, { scans: number; rows: number }>> {
  const { rows } = await conn.query<{ relname: string; scans: string; rows: string }>(
    `SELECT relname, seq_scan AS scans, seq_tup_read + coalesce(idx_tup_fetch, 0) AS rows
       FROM pg_stat_xact_user_tables WHERE schemaname = 'baton'`,
  );
  return new Map(rows.map((r) => [r.relname, { scans: Number(r.scans), rows: Number(r.rows) }]));
}
