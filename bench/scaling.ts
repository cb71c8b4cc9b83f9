import type pg from 'pg';
import type { Log } from '../src/log.js';
import { bareClaimOnce, batonClaimOnce, perOperation, readCounters, seedBareTasks, seedBatonTasks, type ClaimOnce } from './queueTables.js';
import { nowMs, round, spread } from './stats.js';

export const CLAIMER_COUNTS = [1, 2, 4, 8, 16, 32] as const;

interface ScalingRun {
  perSecond: number;
  walBytesPerClaim: number;
  multixactsPerClaim: number;
}

/** `count` ready tasks claimed by `claimers` connections at once, each claiming until none is left. */
async function claimAll(
  admin: pg.ClientBase,
  conns: pg.ClientBase[],
  graphId: string,
  count: number,
  claim: ClaimOnce,
): Promise<ScalingRun> {
  let claimed = 0;
  const before = await readCounters(admin);
  const start = nowMs();
  await Promise.all(
    conns.map(async (conn, i) => {
      while (await claim(conn, graphId, `bench-claimer-${i}`)) claimed++;
    }),
  );
  const elapsed = nowMs() - start;
  if (claimed !== count) throw new Error(`claimed ${claimed} of ${count} tasks with ${conns.length} claimers`);
  const costs = await perOperation(admin, before, await readCounters(admin), count, 0);
  return { perSecond: (count / elapsed) * 1000, walBytesPerClaim: costs.walBytes, multixactsPerClaim: costs.multixacts };
}

/**
 * scaling: both claims at 1..32 concurrent claimers on separate connections. Each round sweeps
 * every claimer count, candidate and baseline back to back (alternating which goes first), so
 * throughput(N)/throughput(1) compares figures taken minutes, not a whole run, apart.
 */
export async function runScalingBench(pool: pg.Pool, options: { pairs: number; count: number; claimers?: readonly number[] }, log: Log) {
  const counts = options.claimers ?? CLAIMER_COUNTS;
  const conns = await Promise.all(Array.from({ length: Math.max(...counts) }, () => pool.connect()));
  const admin = await pool.connect();
  const rounds: Array<Record<number, { baton: ScalingRun; bare: ScalingRun }>> = [];
  try {
    for (let r = -1; r < options.pairs; r++) {
      const sweep: Record<number, { baton: ScalingRun; bare: ScalingRun }> = {};
      for (const [k, n] of counts.entries()) {
        const batonFirst = (r + k) % 2 === 0;
        const run = async (side: 'baton' | 'bare') => {
          const graphId = side === 'baton' ? await seedBatonTasks(pool, options.count) : await seedBareTasks(pool, options.count);
          return claimAll(admin, conns.slice(0, n), graphId, options.count, side === 'baton' ? batonClaimOnce : bareClaimOnce);
        };
        const first = await run(batonFirst ? 'baton' : 'bare');
        const second = await run(batonFirst ? 'bare' : 'baton');
        sweep[n] = batonFirst ? { baton: first, bare: second } : { baton: second, bare: first };
      }
      const line = counts.map((n) => `${n}:${sweep[n]!.baton.perSecond.toFixed(0)}/${sweep[n]!.bare.perSecond.toFixed(0)}`).join(' ');
      log(`  scaling ${r < 0 ? 'warm-up (discarded)' : `round ${r + 1}/${options.pairs}`} claims/s baton/bare by claimers ${line}`);
      if (r >= 0) rounds.push(sweep);
    }
  } finally {
    for (const c of conns) c.release();
    admin.release();
  }
  const one = counts[0]!;
  return {
    claimsPerRound: options.count,
    byClaimers: counts.map((n) => ({
      claimers: n,
      batonPerSecond: spread(rounds.map((s) => s[n]!.baton.perSecond)),
      barePerSecond: spread(rounds.map((s) => s[n]!.bare.perSecond)),
      /** baton / bare at this claimer count, paired within each round. */
      ratio: spread(rounds.map((s) => s[n]!.baton.perSecond / s[n]!.bare.perSecond)),
      /** throughput(N) / throughput(1), within each round. */
      batonScaling: spread(rounds.map((s) => s[n]!.baton.perSecond / s[one]!.baton.perSecond)),
      bareScaling: spread(rounds.map((s) => s[n]!.bare.perSecond / s[one]!.bare.perSecond)),
      walBytesPerClaim: {
        baton: spread(rounds.map((s) => s[n]!.baton.walBytesPerClaim)),
        bare: spread(rounds.map((s) => s[n]!.bare.walBytesPerClaim)),
      },
      multixactsPerClaim: {
        baton: spread(rounds.map((s) => s[n]!.baton.multixactsPerClaim)),
        bare: spread(rounds.map((s) => s[n]!.bare.multixactsPerClaim)),
      },
    })),
    rounds: rounds.map((s) =>
      Object.fromEntries(counts.map((n) => [n, { baton: round(s[n]!.baton.perSecond, 1), bare: round(s[n]!.bare.perSecond, 1) }])),
    ),
  };
}
