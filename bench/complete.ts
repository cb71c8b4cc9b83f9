import type pg from 'pg';
import type { Log } from '../src/log.js';
import { taskIdOf } from '../src/tasks/taskId.js';
import { statementAnatomy } from './anatomy.js';
import { ANATOMY_OPERATIONS } from './claim.js';
import { interleave } from './interleave.js';
import {
  barePreparedSubmitOnce,
  bareSubmitOnce,
  bareSubmitWithEventOnce,
  batonSubmitOnce,
  calibrateCounters,
  claimAllBatonTasks,
  perOperation,
  readCounters,
  seedBareTasks,
  seedBatonTasks,
} from './queueTables.js';
import { latencies, nowMs, round, spread, type Latencies } from './stats.js';

interface CompleteRound {
  perSecond: number;
  latencyMs: Latencies;
  walBytesPerSubmit: number;
  transactionsPerSubmit: number;
}

async function completeRound(
  conn: pg.ClientBase,
  admin: pg.ClientBase,
  overhead: number,
  count: number,
  seedRunning: () => Promise<string>,
  submit: (db: pg.ClientBase, taskId: string) => Promise<void>,
): Promise<CompleteRound> {
  const graphId = await seedRunning();
  const samples: number[] = [];
  const before = await readCounters(admin, [conn]);
  const start = nowMs();
  for (let i = 0; i < count; i++) {
    const t = nowMs();
    await submit(conn, taskIdOf(graphId, `t${i}`));
    samples.push(nowMs() - t);
  }
  const elapsed = nowMs() - start;
  const after = await readCounters(admin, [conn]);
  const costs = await perOperation(admin, before, after, count, overhead);
  return {
    perSecond: (count / elapsed) * 1000,
    latencyMs: latencies(samples),
    walBytesPerSubmit: costs.walBytes,
    transactionsPerSubmit: costs.transactions,
  };
}

/**
 * complete: baton.task_submit (fenced on owner, claim version and status, with its event row)
 * against the same update keyed by id only, on running tasks, one connection; then the floor of
 * any submit that keeps its event row (the id-keyed update with one event row, against the update
 * alone).
 */
export async function runCompleteBench(pool: pg.Pool, options: { pairs: number; count: number }, log: Log) {
  const conn = await pool.connect();
  const admin = await pool.connect();
  try {
    const overhead = await calibrateCounters(admin, [conn]);
    const seedBareRunning = () => seedBareTasks(pool, options.count, 'running');
    const pairs = await interleave(
      'complete',
      options.pairs,
      {
        candidate: () =>
          completeRound(
            conn,
            admin,
            overhead,
            options.count,
            async () => {
              const graphId = await seedBatonTasks(pool, options.count);
              await claimAllBatonTasks(pool, graphId);
              return graphId;
            },
            batonSubmitOnce,
          ),
        baseline: () => completeRound(conn, admin, overhead, options.count, seedBareRunning, bareSubmitOnce),
      },
      log,
      (p) => `baton ${p.candidate.perSecond.toFixed(0)}/s, bare ${p.baseline.perSecond.toFixed(0)}/s`,
    );
    // The floor of E1: the bare completion with one event row against the bare completion alone,
    // both prepared, so neither pays a parse and plan per call that a store function need not.
    const floorPairs = await interleave(
      'complete, bare with an event row',
      options.pairs,
      {
        candidate: () => completeRound(conn, admin, overhead, options.count, seedBareRunning, bareSubmitWithEventOnce),
        baseline: () => completeRound(conn, admin, overhead, options.count, seedBareRunning, barePreparedSubmitOnce),
      },
      log,
      (p) => `with event ${p.candidate.perSecond.toFixed(0)}/s, bare ${p.baseline.perSecond.toFixed(0)}/s`,
    );
    const batonGraph = await seedBatonTasks(pool, ANATOMY_OPERATIONS);
    await claimAllBatonTasks(pool, batonGraph);
    const batonAnatomy = await statementAnatomy(conn, ANATOMY_OPERATIONS, (i) => batonSubmitOnce(conn, taskIdOf(batonGraph, `t${i}`)));
    const bareGraph = await seedBareTasks(pool, ANATOMY_OPERATIONS, 'running');
    const bareAnatomy = await statementAnatomy(conn, ANATOMY_OPERATIONS, (i) => bareSubmitOnce(conn, taskIdOf(bareGraph, `t${i}`)));
    const side = (r: CompleteRound) => ({
      perSecond: round(r.perSecond, 1),
      p50Ms: round(r.latencyMs.p50),
      p99Ms: round(r.latencyMs.p99),
      walBytesPerSubmit: round(r.walBytesPerSubmit, 1),
      transactionsPerSubmit: round(r.transactionsPerSubmit, 3),
    });
    return {
      submitsPerRound: options.count,
      throughputRatio: spread(pairs.map((p) => p.candidate.perSecond / p.baseline.perSecond)),
      p99Ratio: spread(pairs.map((p) => p.candidate.latencyMs.p99 / p.baseline.latencyMs.p99)),
      walBytesPerSubmit: {
        baton: spread(pairs.map((p) => p.candidate.walBytesPerSubmit)),
        bare: spread(pairs.map((p) => p.baseline.walBytesPerSubmit)),
      },
      /**
       * The least a submit with its event row costs: the bare completion plus one row in a table
       * shaped as baton.events over the bare completion alone, both prepared, in pairs as above.
       * Below 0.95, no submit that keeps E1's event row in its transaction reaches the target.
       */
      eventFloor: {
        throughputRatio: spread(floorPairs.map((p) => p.candidate.perSecond / p.baseline.perSecond)),
        walBytesPerSubmit: spread(floorPairs.map((p) => p.candidate.walBytesPerSubmit)),
      },
      anatomy: { operations: ANATOMY_OPERATIONS, baton: batonAnatomy, bare: bareAnatomy },
      rounds: pairs.map((p) => ({ first: p.first, baton: side(p.candidate), bare: side(p.baseline) })),
    };
  } finally {
    conn.release();
    admin.release();
  }
}
