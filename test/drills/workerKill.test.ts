import { describe, expect, it } from 'vitest';
import { runWorkerKillDrill } from '../../src/drills/d2WorkerKill.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack();

describe('D2: SIGKILL or SIGSTOP a real worker process after it claims', () => {
  // Recovery is deterministic once Temporal reports the silence; what varies is when and how the
  // owner falls silent. Three trials in three lanes (each with two worker processes of its own)
  // take the three silences, one each, at once: SIGKILL as soon as the claim is visible in
  // Postgres (usually before the agent has printed anything), SIGKILL mid-run (after the agent's
  // third line), and SIGSTOP mid-run, the frozen owner resumed after its task was recovered and
  // verified. Larger counts run from `baton drill --kill-trials N` (docs/reliability.md).
  it('recovers and completes every task, with the claim version bumped and the reason recorded; a resumed frozen owner writes nothing', async () => {
    const result = await runWorkerKillDrill({
      pool: stack.db.pool,
      temporal: stack.temporal.client,
      workerEnv: stack.workerEnv,
      trials: 3,
      lanes: 3,
      heartbeatTimeoutMs: 2_000,
    });
    expect(result.violations).toEqual([]);
    expect(result.figures).toMatchObject({ trials: 3, lanes: 3, recovered: 3, lost: 0, orphanAgents: 0, lateWritesLanded: 0 });
    // D3 as `baton drill` counts it: the frozen owner, resumed, made a late write that was refused and logged.
    expect(result.figures).toMatchObject({ frozenTrials: 1, frozenTrialsRefused: 1 });
    expect(result.figures.recoveryP99Ms).toEqual(expect.any(Number));
    // The resumed frozen owners did try to go on (heartbeats, a release), and were refused.
    expect(result.figures.lateWritesRefused).toBeGreaterThan(0);
    // Each kill is answered by Temporal's timeout or, when the claim's own answer was lost with the
    // worker, by the lease running out on the database clock; either way the reason is recorded.
    const { rows } = await stack.db.pool.query(
      `SELECT count(DISTINCT subject_id)::int AS n FROM baton.events WHERE kind = 'reclaimed_after_silence'
          AND (reason LIKE 'owner silent: Temporal % timeout%' OR reason LIKE 'lease expired on the database clock%')`,
    );
    expect(rows[0].n).toBe(3);
  }, 900_000);

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
