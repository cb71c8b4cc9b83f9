import type pg from 'pg';
import type { Log } from '../src/log.js';
import { statementAnatomy } from './anatomy.js';
import { interleave } from './interleave.js';
import {
  bareClaimOnce,
  batonClaimOnce,
  BENCH_OWNER,
  calibrateCounters,
  perOperation,
  readCounters,
  seedBareTasks,
  seedBatonTasks,
  type ClaimOnce,
} from './queueTables.js';
import { latencies, nowMs, round, spread, type Latencies } from './stats.js';

/** Operations traced statement by statement after the pairs. */
export const ANATOMY_OPERATIONS = 200;

export interface ClaimRound {
  claims: number;
  perSecond: number;
  latencyMs: Latencies;
  walBytesPerClaim: number;
  transactionsPerClaim: number;
}

/** One round: `count` ready tasks claimed one after another on one connection until none is left. */
async function claimRound(
  conn: pg.ClientBase,
  admin: pg.ClientBase,
  overhead: number,
  count: number,
  seed: () => Promise<string>,
  claim: ClaimOnce,
): Promise<ClaimRound> {
  const graphId = await seed();
  const samples: number[] = [];
  const before = await readCounters(admin, [conn]);
  const start = nowMs();
  for (;;) {
    const t = nowMs();
    if (!(await claim(conn, graphId, BENCH_OWNER))) break;
    samples.push(nowMs() - t);
  }
  const elapsed = nowMs() - start;
  const after = await readCounters(admin, [conn]);
  if (samples.length !== count) throw new Error(`claimed ${samples.length} of ${count} tasks`);
  // The final empty claim is one more transaction that claimed nothing.
  const costs = await perOperation(admin, before, after, count, overhead + 1);
  return {
    claims: count,
    perSecond: (count / elapsed) * 1000,
    latencyMs: latencies(samples),
    walBytesPerClaim: costs.walBytes,
    transactionsPerClaim: costs.transactions,
  };
}

/**
 * claim: baton.task_claim_next (SKIP LOCKED, state-machine trigger, event row) against the bare
 * SKIP LOCKED UPDATE on an identical table, one claimer, `count` claims per round.
 */
export async function runClaimBench(pool: pg.Pool, options: { pairs: number; count: number }, log: Log) {
  const conn = await pool.connect();
  const admin = await pool.connect();
  try {
    const overhead = await calibrateCounters(admin, [conn]);
    const pairs = await interleave(
      'claim',
      options.pairs,
      {
        candidate: () => claimRound(conn, admin, overhead, options.count, () => seedBatonTasks(pool, options.count), batonClaimOnce),
        baseline: () => claimRound(conn, admin, overhead, options.count, () => seedBareTasks(pool, options.count), bareClaimOnce),
      },
      log,
      (p) => `baton ${p.candidate.perSecond.toFixed(0)}/s, bare ${p.baseline.perSecond.toFixed(0)}/s`,
    );
    // Outside the measured pairs: where one claim's time and WAL go, statement by statement.
    const anatomy = async (seed: () => Promise<string>, claim: ClaimOnce) => {
      const graphId = await seed();
      return statementAnatomy(conn, ANATOMY_OPERATIONS, async () => void (await claim(conn, graphId, BENCH_OWNER)));
    };
    const batonAnatomy = await anatomy(() => seedBatonTasks(pool, ANATOMY_OPERATIONS), batonClaimOnce);
    const bareAnatomy = await anatomy(() => seedBareTasks(pool, ANATOMY_OPERATIONS), bareClaimOnce);
    const plan = await claimPlan(pool, conn, options.count);
    return {
      claimsPerRound: options.count,
      throughputRatio: spread(pairs.map((p) => p.candidate.perSecond / p.baseline.perSecond)),
      p99Ratio: spread(pairs.map((p) => p.candidate.latencyMs.p99 / p.baseline.latencyMs.p99)),
      p50Ratio: spread(pairs.map((p) => p.candidate.latencyMs.p50 / p.baseline.latencyMs.p50)),
      walBytesPerClaim: {
        baton: spread(pairs.map((p) => p.candidate.walBytesPerClaim)),
        bare: spread(pairs.map((p) => p.baseline.walBytesPerClaim)),
      },
      transactionsPerClaim: {
        baton: spread(pairs.map((p) => p.candidate.transactionsPerClaim)),
        bare: spread(pairs.map((p) => p.baseline.transactionsPerClaim)),
      },
      anatomy: { operations: ANATOMY_OPERATIONS, baton: batonAnatomy, bare: bareAnatomy },
      plan,
      rounds: pairs.map((p) => ({ first: p.first, baton: roundOf(p.candidate), bare: roundOf(p.baseline) })),
    };
  } finally {
    conn.release();
    admin.release();
  }
}

const CLAIM_SELECT_SQL =
  "SELECT id FROM bench.tasks WHERE status = 'ready' AND graph_id = $1 ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED";

/**
 * The plan of the claim's row selection with `count` ready rows (bench.tasks has baton's indexes):
 * evidence that it reads one index entry, not every ready row of the graph and a sort.
 */
async function claimPlan(pool: pg.Pool, conn: pg.ClientBase, count: number) {
  const graphId = await seedBareTasks(pool, count);
  const { rows } = await conn.query<{ 'QUERY PLAN': Array<{ Plan: Record<string, unknown>; 'Execution Time': number }> }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_SELECT_SQL}`,
    [graphId],
  );
  const top = rows[0]!['QUERY PLAN'][0]!;
  const nodes: string[] = [];
  for (
    let node: Record<string, unknown> | undefined = top.Plan;
    node;
    node = (node.Plans as Array<Record<string, unknown>> | undefined)?.[0]
  ) {
    const index = node['Index Name'] ? ` ${String(node['Index Name'])}` : '';
    const sort = node['Sort Method'] ? ` (${String(node['Sort Method'])})` : '';
    nodes.push(`${String(node['Node Type'])}${index}${sort} rows=${String(node['Actual Rows'])}`);
  }
  // Out of the way of later rounds: these rows are no longer ready.
  await pool.query("UPDATE bench.tasks SET status = 'cancelled' WHERE graph_id = $1", [graphId]);
  return { readyRows: count, plan: nodes.join(' <- '), executionMs: round(top['Execution Time'], 3) };
}

const roundOf = (r: ClaimRound) => ({
  perSecond: round(r.perSecond, 1),
  p50Ms: round(r.latencyMs.p50),
  p99Ms: round(r.latencyMs.p99),
  maxMs: round(r.latencyMs.max),
  walBytesPerClaim: round(r.walBytesPerClaim, 1),
  transactionsPerClaim: round(r.transactionsPerClaim, 3),
});
