import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Queryable } from '../src/db/queryable.js';
import { taskClaimNext } from '../src/db/sql/claims.js';
import { taskSubmit } from '../src/db/sql/ownerWrites.js';
import type { Artifact } from '../src/tasks/types.js';
import { independentTasks, insertGraph, NOOP_FUNCTIONS } from '../src/testkit/graphs.js';

/** Lease of benchmark claims; nothing runs under them. */
export const BENCH_LEASE_MS = 600_000;
export const BENCH_OWNER = 'bench-owner';
export const BENCH_ARTIFACT: Artifact = { revision: 'bench-rev', testCommand: 'noop', agentResult: { exitCode: 0, outputDigest: 'noop' } };

/**
 * The baseline's table: the same columns, defaults, checks and indexes as baton.tasks
 * (`LIKE ... INCLUDING ALL`), but no triggers, no foreign keys and no event log. Beside it, an
 * event table shaped as baton.events, for the floor of a write that keeps its event row.
 */
export async function createBareTable(db: Queryable): Promise<void> {
  await db.query('CREATE SCHEMA IF NOT EXISTS bench');
  await db.query('CREATE TABLE IF NOT EXISTS bench.tasks (LIKE baton.tasks INCLUDING ALL)');
  await db.query('CREATE TABLE IF NOT EXISTS bench.events (LIKE baton.events INCLUDING ALL)');
}

/** The bare SKIP LOCKED claim, selecting and ordering exactly as baton.task_claim_next does. */
export const BARE_CLAIM_SQL = `
UPDATE bench.tasks
   SET status = 'running', owner = $1, claim_version = claim_version + 1,
       claimed_at = now(), heartbeat_at = now(), lease_expires_at = now() + $2 * interval '1 millisecond',
       attempts = attempts + 1, progress = NULL, artifact = NULL
 WHERE id = (SELECT id FROM bench.tasks WHERE status = 'ready' AND graph_id = $3
              ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, graph_id, key, spec, claim_version, lease_expires_at, attempts, upstream_revisions`;

/** The bare completion: baton.task_submit's update, keyed by id only (no fence, no event). */
export const BARE_SUBMIT_SQL = `
UPDATE bench.tasks SET status = 'submitted', artifact = $2, lease_expires_at = NULL
 WHERE id = $1
RETURNING true AS accepted, status, owner, claim_version, lease_expires_at`;

/**
 * The floor of a submit that keeps its event row (SPEC E1): the bare completion and one row in an
 * event table shaped as baton.events, in one statement, prepared once per connection (as
 * graphile-worker prepares its own). It numbers the event from the claim version instead of
 * reading the subject's last number. Nothing that writes the event row in the submit's
 * transaction does less.
 */
const BARE_SUBMIT_WITH_EVENT = {
  name: 'bench-submit-with-event',
  text: `
WITH submitted AS (
  UPDATE bench.tasks SET status = 'submitted', artifact = $2, lease_expires_at = NULL
   WHERE id = $1
  RETURNING id, owner, claim_version)
INSERT INTO bench.events (subject_kind, subject_id, subject_seq, kind, actor, fence, details)
SELECT 'task', id, claim_version + 1, 'submitted', owner, claim_version, jsonb_build_object('revision', $3::text) FROM submitted
RETURNING true AS accepted`,
};

/** `count` ready tasks in a fresh baton graph (written by baton.graph_submit, with their events). */
export function seedBatonTasks(db: Queryable, count: number): Promise<string> {
  return insertGraph(db, independentTasks(count), { prefix: 'bench', actor: 'bench' });
}

/** `count` ready rows in a fresh graph of the bare table, with the same spec baton's seed writes. */
export async function seedBareTasks(db: Queryable, count: number, status: 'ready' | 'running' = 'ready'): Promise<string> {
  const graphId = `bench-${randomUUID().slice(0, 8)}`;
  await db.query(
    `INSERT INTO bench.tasks (id, graph_id, key, spec, status, owner, claim_version, lease_expires_at)
     SELECT $1 || '/t' || i, $1, 't' || i,
            jsonb_build_object('description', 't' || i, 'run', jsonb_build_object('function', $5::text),
                               'verify', jsonb_build_object('function', $6::text)),
            $3, CASE WHEN $3 = 'running' THEN $4 END, CASE WHEN $3 = 'running' THEN 1 ELSE 0 END,
            CASE WHEN $3 = 'running' THEN now() + interval '10 minutes' END
       FROM generate_series(0, $2 - 1) AS i`,
    [graphId, count, status, BENCH_OWNER, NOOP_FUNCTIONS.run, NOOP_FUNCTIONS.verify],
  );
  return graphId;
}

/** Claims every task of a seeded baton graph for BENCH_OWNER, each through baton.task_claim. */
export async function claimAllBatonTasks(db: Queryable, graphId: string): Promise<void> {
  await db.query('SELECT c.task_id FROM baton.tasks t, LATERAL baton.task_claim(t.id, $2, $3) c WHERE t.graph_id = $1', [
    graphId,
    BENCH_OWNER,
    BENCH_LEASE_MS,
  ]);
}

/** One side of a claim benchmark: claims one task of `graphId`; false when none was left. */
export type ClaimOnce = (db: Queryable, graphId: string, owner: string) => Promise<boolean>;

export const batonClaimOnce: ClaimOnce = async (db, graphId, owner) =>
  (await taskClaimNext(db, owner, BENCH_LEASE_MS, graphId)) !== undefined;
export const bareClaimOnce: ClaimOnce = async (db, graphId, owner) =>
  ((await db.query(BARE_CLAIM_SQL, [owner, BENCH_LEASE_MS, graphId])).rowCount ?? 0) > 0;

export const batonSubmitOnce = (db: Queryable, taskId: string) =>
  taskSubmit(db, { taskId, owner: BENCH_OWNER, claimVersion: 1 }, BENCH_ARTIFACT).then(() => undefined);
/** Runs a bare completion (`statement`, prepared once per connection when it has a name) with `values` and checks it matched its row. */
async function bareSubmit(db: pg.ClientBase, statement: { name?: string; text: string }, values: [taskId: string, ...rest: unknown[]]) {
  const { rows } = await db.query<{ accepted: boolean }>({ ...statement, values });
  if (!rows[0]?.accepted) throw new Error(`bare submit of ${values[0]} matched no row`);
}
/** The bare completion prepared once per connection: the baseline of the floors. */
const BARE_SUBMIT_PREPARED = { name: 'bench-submit', text: BARE_SUBMIT_SQL };
export const bareSubmitOnce = (db: pg.ClientBase, taskId: string) => bareSubmit(db, { text: BARE_SUBMIT_SQL }, [taskId, BENCH_ARTIFACT]);
export const barePreparedSubmitOnce = (db: pg.ClientBase, taskId: string) => bareSubmit(db, BARE_SUBMIT_PREPARED, [taskId, BENCH_ARTIFACT]);
export const bareSubmitWithEventOnce = (db: pg.ClientBase, taskId: string) =>
  bareSubmit(db, BARE_SUBMIT_WITH_EVENT, [taskId, BENCH_ARTIFACT, BENCH_ARTIFACT.revision]);

/** WAL position and committed transactions of the database, to compute per-operation costs. */
export interface DbCounters {
  walLsn: string;
  xactCommit: number;
  /** MultiXact ids handed out so far (relative): rows share-locked by several transactions at once need one. */
  multixacts: number;
}

/**
 * Reads the counters. Backends publish their transaction counts lazily (at most once a second
 * when idle), so each connection that did work is first asked to flush them.
 */
export async function readCounters(admin: pg.ClientBase, workers: pg.ClientBase[] = []): Promise<DbCounters> {
  for (const w of workers) {
    await w.query('SELECT pg_stat_force_next_flush()');
    await w.query('SELECT 1');
  }
  await admin.query('SELECT pg_stat_force_next_flush()');
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await admin.query<{ lsn: string; xact_commit: string; multixacts: number }>(
    `SELECT pg_current_wal_lsn()::text AS lsn, s.xact_commit, mxid_age(d.datminmxid) AS multixacts
       FROM pg_stat_database s JOIN pg_database d ON d.oid = s.datid WHERE s.datname = current_database()`,
  );
  return { walLsn: rows[0]!.lsn, xactCommit: Number(rows[0]!.xact_commit), multixacts: Number(rows[0]!.multixacts) };
}

/** Transactions that two back-to-back readings themselves commit, so that they can be subtracted. */
export async function calibrateCounters(admin: pg.ClientBase, workers: pg.ClientBase[] = []): Promise<number> {
  const counts: number[] = [];
  for (let i = 0; i < 3; i++) {
    const before = await readCounters(admin, workers);
    const after = await readCounters(admin, workers);
    counts.push(after.xactCommit - before.xactCommit);
  }
  return Math.min(...counts);
}

/** WAL bytes and committed transactions between two readings, per operation. */
export async function perOperation(
  admin: pg.ClientBase,
  before: DbCounters,
  after: DbCounters,
  operations: number,
  overheadTransactions: number,
) {
  const { rows } = await admin.query<{ bytes: string }>('SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn) AS bytes', [
    after.walLsn,
    before.walLsn,
  ]);
  return {
    multixacts: (after.multixacts - before.multixacts) / operations,
    walBytes: Number(rows[0]!.bytes) / operations,
    // The readings themselves are transactions too; they are not the operation's.
    transactions: (after.xactCommit - before.xactCommit - overheadTransactions) / operations,
  };
}
