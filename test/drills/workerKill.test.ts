import { describe, expect, it } from 'vitest';
import { runWorkerKillDrill } from '../../src/drills/d2WorkerKill.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack();

describe('D2: SIGKILL a real worker process after it claims', () => {
  // Recovery is deterministic once Temporal reports the silence; what varies is when the kill
  // lands. Eight trials alternate two kill points, four each, on separate graphs and processes:
  // as soon as the claim is visible in Postgres (usually before the agent has printed anything)
  // and mid-run (after the agent's third line). Eight recoveries in a row with none lost, with
  // both kill points covered, is what the drill can show; the timing paths themselves are
  // Temporal's and are exercised on every trial.
  it('recovers and completes every task, with the claim version bumped and the reason recorded', async () => {
    const result = await runWorkerKillDrill({ pool: stack.db.pool, temporal: stack.temporal.client, workerEnv: stack.workerEnv, trials: 8, heartbeatTimeoutMs: 2_000 });
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ trials: 8, recovered: 8, lost: 0, orphanAgents: 0 });
    // Each kill is answered by Temporal's timeout or, when the claim's own answer was lost with the
    // worker, by the lease running out on the database clock; either way the reason is recorded.
    const { rows } = await stack.db.pool.query(
      `SELECT count(DISTINCT subject_id)::int AS n FROM baton.events WHERE kind = 'reclaimed_after_silence'
          AND (reason LIKE 'owner silent: Temporal % timeout%' OR reason LIKE 'lease expired on the database clock%')`,
    );
    expect(rows[0].n).toBe(8);
  });

  it('fails when silence is not detected (no heartbeat timeout within the deadline)', async () => {
    const result = await runWorkerKillDrill({
      pool: stack.db.pool,
      temporal: stack.temporal.client,
      workerEnv: stack.workerEnv,
      trials: 1,
      heartbeatTimeoutMs: 3_600_000,
      trialDeadlineMs: 15_000,
    });
    expect(result.passed).toBe(false);
    expect(result.figures).toMatchObject({ lost: 1 });
  });
});
