import { describe, expect, inject, it } from 'vitest';
import { auditGraph, runPostgresRestartDrill, runTemporalRestartDrill } from '../../src/drills/restarts.js';
import { claimFence, reclaim } from '../../src/testkit/claims.js';
import { insertGraph } from '../../src/testkit/graphs.js';
import { usePostgresHomes } from '../helpers/postgresHomes.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack();
/** A folder for a restarted server's state. */
const home = usePostgresHomes('baton-restart');

/** R2 on this file's database, with its own Temporal dev server in a fresh folder. */
const temporalRestarts = async (options: { trials: number; forgetState?: boolean; trialDeadlineMs?: number }) =>
  runTemporalRestartDrill({
    ...options,
    home: await home(),
    pool: stack.db.pool,
    workerEnv: stack.workerEnv,
    temporalCliPath: inject('temporalCliPath'),
  });

// SPEC T11 as `baton drill` runs it (rows R1 and R2): two trials each, so the first restart
// comes while the first wave (a, b) runs and the second while c runs; for Postgres the first is
// a fast shutdown and the second a crash (`immediate`, recovered from its WAL at the next start).
describe('T11: the servers baton depends on are restarted mid-graph (drill rows R1, R2)', () => {
  it('R1: Postgres stopped and restarted; every task verified exactly once', async () => {
    const result = await runPostgresRestartDrill({
      trials: 2,
      home: await home(),
      temporal: stack.temporal.client,
      workerEnv: stack.workerEnv,
    });
    expect(result.violations).toEqual([]);
    expect(result.title).toContain('fast, immediate');
    expect(result.figures).toMatchObject({ trials: 2, tasks: 10, verified: 10, lost: 0, duplicated: 0 });
  }, 900_000);

  it('R2: the Temporal server SIGKILLed and restarted on its state; every task verified exactly once', async () => {
    const result = await temporalRestarts({ trials: 2 });
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ trials: 2, tasks: 10, verified: 10, lost: 0, duplicated: 0 });
  }, 900_000);

  it('R2 fails when the server comes back without its state (the workflows are gone)', async () => {
    const result = await temporalRestarts({ trials: 1, forgetState: true, trialDeadlineMs: 10_000 });
    expect(result.passed).toBe(false);
    expect(result.figures.lost).toBeGreaterThan(0);
    expect(result.violations[0]).toMatch(/not complete after 10000 ms/);
  }, 900_000);

  // The rows' exactly-once check, shown to fail: no restart above produced a double.
  it('the audit reports a task verified twice and one claimed twice', async () => {
    const graphId = await insertGraph(stack.db.pool, { a: [], b: [] }, { prefix: 'r-audit', actor: 'test' });
    expect(await auditGraph(stack.db.pool, graphId)).toEqual({ verified: 0, duplicated: [], reclaimed: 0 });
    await reclaim(stack.db.pool, await claimFence(stack.db.pool, `${graphId}/a`, 'first'), 'second');
    for (let i = 0; i < 2; i++) await stack.db.pool.query("SELECT baton.event_append('task', $1, 'verified', 'forger')", [`${graphId}/b`]);
    expect(await auditGraph(stack.db.pool, graphId)).toEqual({
      verified: 0,
      duplicated: [`${graphId}/b: verified 2 times, 0 passing verifications`],
      reclaimed: 1,
    });
  });
});
