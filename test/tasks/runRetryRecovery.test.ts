// A retry of the run recovers the claim an earlier attempt left. When that attempt died between its
// claim and its first heartbeat, Temporal holds no claim version for the retry, and the claim is
// recovered once its lease ran out on the database clock, never while it is live: a late attempt
// (handed to a frozen worker and run after it thawed) must not take a live owner's claim.
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { createTaskActivities } from '../../activities/tasks.js';
import { taskClaim } from '../../src/db/sql/claims.js';
import { eventRead, taskRead } from '../../src/db/sql/reads.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { insertTask } from '../helpers/tasks.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack();
const RUNNER_REACHED = 'the retry claimed the task and reached its runner';

/** The run's retry (attempt 2) on this worker, with no heartbeat details from the attempt before. */
function retryWithoutDetails(taskId: string) {
  const activities = createTaskActivities({
    db: stack.db.pool,
    identity: 'retrying-worker',
    runnerFor: () => {
      throw new Error(RUNNER_REACHED);
    },
    verifierFor: () => expect.unreachable('this test runs only'),
  });
  return new MockActivityEnvironment({ attempt: 2 })
    .run(activities.batonRunTask, { taskId, heartbeatTimeoutMs: 5_000, maxAttempts: 3 })
    .then(
      (view) => ({ view }),
      (error: unknown) => ({ error: error as Error }),
    );
}

describe("a retry of the run without the earlier attempt's claim version", () => {
  it('recovers a claim whose lease ran out, and claims the task again', async () => {
    const { id: taskId } = await insertTask(stack.db.pool);
    // The attempt that died: its claim's lease (1 ms) runs out at once.
    const dead = (await taskClaim(stack.db.pool, taskId, 'died-before-heartbeat', 1))!;
    await waitFor(
      'the lease to run out',
      async () => {
        if (!(await taskRead(stack.db.pool, taskId)).leaseExpired) throw new Error('lease live');
      },
      { timeoutMs: 10_000, intervalMs: 10 },
    );
    const outcome = await retryWithoutDetails(taskId);
    expect(outcome).toMatchObject({ error: { message: RUNNER_REACHED } });
    const task = await taskRead(stack.db.pool, taskId);
    expect(task).toMatchObject({ status: 'running', owner: 'retrying-worker', claimVersion: dead.claimVersion + 1 });
    const reclaimed = (await eventRead(stack.db.pool, 'task', taskId)).find((e) => e.kind === 'reclaimed_after_silence');
    expect(reclaimed).toMatchObject({ fence: dead.claimVersion, actor: 'retrying-worker' });
    expect(reclaimed?.reason).toMatch(
      /^lease expired on the database clock: no heartbeat for claim version \d+, which no earlier run attempt reported/,
    );
  });

  it('leaves a live claim alone: the retry finds nothing to claim', async () => {
    const live = await insertTask(stack.db.pool, { status: 'running', owner: 'live-owner' });
    expect(live.leaseExpired).toBe(false);
    const outcome = await retryWithoutDetails(live.id);
    expect(outcome).toEqual({ view: null });
    expect(await taskRead(stack.db.pool, live.id)).toMatchObject({
      status: 'running',
      owner: 'live-owner',
      claimVersion: live.claimVersion,
    });
    expect((await eventRead(stack.db.pool, 'task', live.id)).map((e) => e.kind)).not.toContain('reclaimed_after_silence');
  });
});
