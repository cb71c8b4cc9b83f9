import { createRequire } from 'node:module';
import { Logger, run as runGraphileWorker, runMigrations as migrateGraphileWorker, type Runner } from 'graphile-worker';
import type pg from 'pg';
import PgBoss from 'pg-boss';
import { taskClaimNext } from '../src/db/sql/claims.js';
import { taskSubmit } from '../src/db/sql/ownerWrites.js';
import { verificationRecord, verificationStart } from '../src/db/sql/verification.js';
import { waitFor } from '../src/dev/waitFor.js';
import type { Log } from '../src/log.js';
import { BARE_CLAIM_SQL, barePreparedSubmitOnce, BENCH_ARTIFACT, BENCH_LEASE_MS, seedBareTasks, seedBatonTasks } from './queueTables.js';
import { nowMs, round, spread } from './stats.js';

/** The sides of a round, in the order the first measured round runs them (later rounds rotate it). */
const SIDES = ['baton', 'batonVerified', 'bareFourTransactions', 'graphileWorker', 'pgBoss'] as const;
type Side = (typeof SIDES)[number];

const GRAPHILE_SCHEMA = 'bench_graphile_worker';
const PG_BOSS_SCHEMA = 'bench_pgboss';
const JOB = 'bench-noop';
/**
 * pg-boss 10 waits its polling interval after every fetch, full or empty, so its throughput is
 * batch size x workers / interval: its way to throughput is its shortest interval and batched
 * fetches (each job still completed by id). graphile-worker runs at its defaults (no batching).
 */
const PG_BOSS_WORK = { pollingIntervalSeconds: 0.5, batchSize: 100 };
/** How often the round looks whether every job is done (the same for every side). */
const DONE_POLL_MS = 20;

interface PeersOptions {
  /** Measured rounds after a discarded warm-up; each round runs every side once. */
  rounds: number;
  jobs: number;
  workers: number;
  log: Log;
}

/**
 * peers: jobs/s for no-op jobs drained by `workers` workers on one Postgres, baton's store path
 * (claim + fenced submit, and with a recorded verification) beside graphile-worker and pg-boss at
 * their defaults. Jobs are inserted before the workers start; a side's time runs from its workers'
 * start to every job done in the database.
 */
export async function runPeersBench(pool: pg.Pool, databaseUrl: string, options: PeersOptions) {
  const { log } = options;
  await migrateGraphileWorker({ connectionString: databaseUrl, schema: GRAPHILE_SCHEMA, logger: quietGraphileLogger() });
  const boss = new PgBoss({ connectionString: databaseUrl, schema: PG_BOSS_SCHEMA, max: options.workers + 2 });
  boss.on('error', (error) => log(`  pg-boss: ${error.message}`));
  await boss.start();
  await boss.createQueue(JOB);
  const drain: Record<Side, () => Promise<number>> = {
    baton: () => batonRound(pool, options, false),
    batonVerified: () => batonRound(pool, options, true),
    bareFourTransactions: () => bareFourTransactionsRound(pool, options),
    graphileWorker: () => graphileRound(pool, databaseUrl, options),
    pgBoss: () => pgBossRound(pool, boss, options),
  };
  const rounds: Array<Record<Side, number>> = [];
  try {
    for (let i = -1; i < options.rounds; i++) {
      const order = SIDES.map((_, k) => SIDES[(k + Math.max(i, 0)) % SIDES.length]!);
      const perSecond = {} as Record<Side, number>;
      for (const side of order) perSecond[side] = round(await drain[side](), 1);
      log(
        `  peers ${i < 0 ? 'warm-up (discarded)' : `round ${i + 1}/${options.rounds}`}: ` +
          SIDES.map((side) => `${side} ${perSecond[side]}/s`).join(', '),
      );
      if (i >= 0) rounds.push(perSecond);
    }
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
  const fasterPeer = (r: Record<Side, number>) => Math.max(r.graphileWorker, r.pgBoss);
  return {
    jobs: options.jobs,
    workers: options.workers,
    versions: { graphileWorker: packageVersion('graphile-worker'), pgBoss: packageVersion('pg-boss') },
    pgBossWork: PG_BOSS_WORK,
    perSecond: Object.fromEntries(SIDES.map((side) => [side, spread(rounds.map((r) => r[side]))])) as Record<
      Side,
      ReturnType<typeof spread>
    >,
    /** baton's claim + fenced submit + recorded verification over the faster peer of the same round. */
    verifiedToFasterPeer: spread(rounds.map((r) => r.batonVerified / fasterPeer(r))),
    /**
     * The same four transactions a job, each only its row update on the bare table, over the faster
     * peer of the same round: below 1, no store path that spends four transactions on a job reaches
     * the faster peer, however cheap each one is.
     */
    bareFourTransactionsToFasterPeer: spread(rounds.map((r) => r.bareFourTransactions / fasterPeer(r))),
    /** baton's claim + fenced submit over the faster peer of the same round. */
    submittedToFasterPeer: spread(rounds.map((r) => r.baton / fasterPeer(r))),
    rounds,
  };
}

/**
 * Drains the seeded graph `graphId` with `options.workers` workers, one connection each: each
 * calls `next` until it finds no job left. Then checks that every job of the graph is `status` in
 * `table`, and returns jobs/s from the workers' start.
 */
async function drainOnConnections(
  pool: pg.Pool,
  options: PeersOptions,
  graphId: string,
  done: { table: 'baton.tasks' | 'bench.tasks'; status: string },
  next: (conn: pg.PoolClient, worker: number) => Promise<boolean>,
): Promise<number> {
  const conns = await Promise.all(Array.from({ length: options.workers }, () => pool.connect()));
  try {
    const start = nowMs();
    await Promise.all(
      conns.map(async (conn, w) => {
        while (await next(conn, w));
      }),
    );
    const elapsed = nowMs() - start;
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${done.table} WHERE graph_id = $1 AND status = $2`, [
      graphId,
      done.status,
    ]);
    if (rows[0]!.n !== options.jobs) throw new Error(`peers: ${rows[0]!.n} of ${options.jobs} jobs in ${done.table} ${done.status}`);
    return (options.jobs / elapsed) * 1000;
  } finally {
    for (const conn of conns) conn.release();
  }
}

/** baton's store path: each worker claims the next ready task, submits it fenced and, when `verify`, records a passing verification as another identity. */
async function batonRound(pool: pg.Pool, options: PeersOptions, verify: boolean): Promise<number> {
  const graphId = await seedBatonTasks(pool, options.jobs);
  const done = { table: 'baton.tasks', status: verify ? 'verified' : 'submitted' } as const;
  return drainOnConnections(pool, options, graphId, done, async (conn, w) => {
    const owner = `peers-worker-${w}`;
    const claim = await taskClaimNext(conn, owner, BENCH_LEASE_MS, graphId);
    if (!claim) return false;
    await taskSubmit(conn, { taskId: claim.taskId, owner, claimVersion: claim.claimVersion }, BENCH_ARTIFACT);
    if (!verify) return true;
    const verifier = `peers-verifier-${w}`;
    const started = await verificationStart(conn, claim.taskId, verifier);
    const outcome = await verificationRecord(conn, {
      taskId: claim.taskId,
      verifier,
      claimVersion: started.claimVersion,
      revision: BENCH_ARTIFACT.revision,
      command: 'noop',
      exitCode: 0,
      outputDigest: 'noop',
      outputTail: '',
    });
    if (outcome.status !== 'verified') throw new Error(`peers: ${claim.taskId} was ${outcome.status}, not verified`);
    return true;
  });
}

/** The claim and the verification's two updates of a verified job on the bare table, each prepared once per connection (as graphile-worker prepares its own; the submit is barePreparedSubmitOnce). */
const FLOOR_STATEMENTS = {
  claim: { name: 'bench-floor-claim', text: BARE_CLAIM_SQL },
  verifying: { name: 'bench-floor-verifying', text: `UPDATE bench.tasks SET status = 'verifying', verifier = $2 WHERE id = $1` },
  verified: { name: 'bench-floor-verified', text: `UPDATE bench.tasks SET status = 'verified', verified_revision = $2 WHERE id = $1` },
};

/**
 * The floor of baton's verified job: its four transactions (claim, submit, verification start and
 * record), each only the row update it makes, on the bare table (the claim and complete
 * benchmarks' baselines for the first two), prepared: no event rows, no triggers, no fences, no
 * verification rows. No store path that spends four transactions on a job does less.
 */
async function bareFourTransactionsRound(pool: pg.Pool, options: PeersOptions): Promise<number> {
  const graphId = await seedBareTasks(pool, options.jobs);
  return drainOnConnections(pool, options, graphId, { table: 'bench.tasks', status: 'verified' }, async (conn, w) => {
    const { rows } = await conn.query<{ id: string }>({
      ...FLOOR_STATEMENTS.claim,
      values: [`peers-worker-${w}`, BENCH_LEASE_MS, graphId],
    });
    const taskId = rows[0]?.id;
    if (!taskId) return false;
    await barePreparedSubmitOnce(conn, taskId);
    await conn.query({ ...FLOOR_STATEMENTS.verifying, values: [taskId, `peers-verifier-${w}`] });
    await conn.query({ ...FLOOR_STATEMENTS.verified, values: [taskId, BENCH_ARTIFACT.revision] });
    return true;
  });
}

/** graphile-worker at its defaults but for the worker count: one runner with `concurrency` workers. */
async function graphileRound(pool: pg.Pool, databaseUrl: string, options: PeersOptions): Promise<number> {
  await pool.query(`SELECT ${GRAPHILE_SCHEMA}.add_job($1, '{}'::json) FROM generate_series(1, $2)`, [JOB, options.jobs]);
  const start = nowMs();
  const runner: Runner = await runGraphileWorker({
    connectionString: databaseUrl,
    schema: GRAPHILE_SCHEMA,
    concurrency: options.workers,
    noHandleSignals: true,
    logger: quietGraphileLogger(),
    taskList: { [JOB]: async () => {} },
  });
  try {
    await untilDone(pool, 'graphile-worker', `SELECT count(*)::int AS n FROM ${GRAPHILE_SCHEMA}._private_jobs`);
    return (options.jobs / (nowMs() - start)) * 1000;
  } finally {
    await runner.stop();
  }
}

/** pg-boss: `workers` work loops, at its shortest polling interval and fetching in batches (PG_BOSS_WORK). */
async function pgBossRound(pool: pg.Pool, boss: PgBoss, options: PeersOptions): Promise<number> {
  await boss.insert(Array.from({ length: options.jobs }, () => ({ name: JOB })));
  const start = nowMs();
  for (let w = 0; w < options.workers; w++) await boss.work(JOB, PG_BOSS_WORK, async () => {});
  try {
    await untilDone(pool, 'pg-boss', `SELECT count(*)::int AS n FROM ${PG_BOSS_SCHEMA}.job WHERE name = '${JOB}' AND state <> 'completed'`);
    return (options.jobs / (nowMs() - start)) * 1000;
  } finally {
    await boss.offWork(JOB);
    await pool.query(`DELETE FROM ${PG_BOSS_SCHEMA}.job WHERE name = $1`, [JOB]);
  }
}

/** Waits until `countSql` (jobs not yet done) reads 0. */
async function untilDone(pool: pg.Pool, what: string, countSql: string): Promise<void> {
  await waitFor(
    `every ${what} job done`,
    async () => {
      const { rows } = await pool.query<{ n: number }>(countSql);
      if (rows[0]!.n > 0) throw new Error(`${rows[0]!.n} left`);
    },
    { timeoutMs: 600_000, intervalMs: DONE_POLL_MS },
  );
}

/** graphile-worker logs every job at info; the bench prints its own lines. */
function quietGraphileLogger(): Logger {
  return new Logger(() => () => {});
}

function packageVersion(name: string): string {
  return (createRequire(import.meta.url)(`${name}/package.json`) as { version: string }).version;
}
