// A frozen worker (SIGSTOP: alive, not answering) keeps the activity polls it opened, and Temporal
// hands them the run's retries, each then waiting out a whole heartbeat timeout. The watch
// (src/temporal/silentAttempts.ts) fails such an attempt as soon as it sees it, so the next one can
// go to a worker that answers. Here the frozen owner is the only worker, so its open polls are
// certain to be handed the first retry; what tells the watch's work from Temporal's own timeout is
// the failure the next attempt records, a state, not a time.
import { NativeConnection } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { msToTs, tsToMs } from '@temporalio/common/lib/time.js';
import { createBatonClient } from '../../src/client.js';
import type { Queryable } from '../../src/db/queryable.js';
import { claimsSilent, taskClaim } from '../../src/db/sql/claims.js';
import { eventRead, taskRead } from '../../src/db/sql/reads.js';
import { waitFor } from '../../src/dev/waitFor.js';
import { taskIdOf, taskWorkflowId } from '../../src/tasks/taskId.js';
import { RETRY_AT_ONCE_MS } from '../../src/temporal/retryAtOnce.js';
import { SILENT_ATTEMPT_FAILURE, watchSilentAttempts } from '../../src/temporal/silentAttempts.js';
import { startWorkerFleet, type WorkerFleet } from '../../src/testkit/workerFleet.js';
import { createScriptedRepo, steppingAgent } from '../../src/testkit/scriptedRepo.js';
import { insertTask, storeClaims } from '../helpers/tasks.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack();
/** Long beside the watch's quarter-second rounds, so Temporal's own timeout cannot come first on a busy machine. */
const HEARTBEAT_TIMEOUT_MS = 10_000;

type PendingActivity = temporal.api.workflow.v1.IPendingActivityInfo;

let fleet: WorkerFleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
});

/** A task mid-run on the fleet's only worker, which is then frozen; resolves once Temporal handed the run's retry to it. */
async function frozenOwnerHoldingARetry() {
  const repo = await createScriptedRepo();
  fleet = await startWorkerFleet({ name: 'silent-attempts', env: stack.workerEnv, size: 1 });
  const [owner] = fleet.workers;
  const client = createBatonClient({ db: stack.db.pool, temporal: stack.temporal.client, taskQueue: fleet.taskQueue });
  const graph = await client.submitGraph(
    {
      id: `silent-${Math.random().toString(36).slice(2, 8)}`,
      repo,
      policy: { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, maxAttempts: 3 },
      tasks: [{ key: 'work', run: { command: steppingAgent(200, 'done.txt') }, verify: { command: 'test -f done.txt' } }],
    },
    'test',
  );
  const taskId = taskIdOf(graph.id, 'work');
  const claimed = await waitFor(
    'the owner to be mid-run',
    async () => {
      const task = await taskRead(stack.db.pool, taskId);
      if (task.status !== 'running' || Number(task.progress?.lines ?? 0) < 3) throw new Error(`task is ${task.status}`);
      return task;
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
  expect(claimed.owner).toBe(owner!.identity);
  owner!.child.kill('SIGSTOP');
  const held = await waitFor(
    'the frozen owner to be handed the run retry',
    async () => {
      const run = await pendingRun(taskId);
      if (!run || (run.attempt ?? 0) < 2 || run.state !== 2) throw new Error(`attempt ${run?.attempt} in state ${run?.state}`);
      return run;
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
  expect(held.lastWorkerIdentity).toBe(owner!.identity);
  return { taskId, claimed, attempt: held.attempt! };
}

async function pendingRun(taskId: string): Promise<PendingActivity | undefined> {
  const { raw } = await stack.temporal.client.workflow.getHandle(taskWorkflowId(taskId)).describe();
  return raw.pendingActivities?.find((a) => a.activityType?.name === 'batonRunTask');
}

/**
 * The watch as the worker `identity` runs it, on its own connection and login (seen through `wrap`
 * when given); `lines` is what it logged.
 */
async function startWatch(
  identity: string,
  { wrap = (db) => db, noWorkflowRecheckMs }: { wrap?: (db: Queryable) => Queryable; noWorkflowRecheckMs?: number } = {},
) {
  const connection = await NativeConnection.connect({ address: stack.temporal.address });
  const login = await stack.db.login('baton_worker');
  const lines: string[] = [];
  const watch = watchSilentAttempts({
    db: wrap(login.pool),
    connection,
    namespace: stack.temporal.namespace,
    identity,
    log: (line) => lines.push(line),
    noWorkflowRecheckMs,
  });
  return {
    lines,
    async stop() {
      await watch.stop();
      await connection.close();
    },
  };
}

/** The run's next attempt after `attempt`, with the failure that ended the one before. */
async function nextAttempt(taskId: string, attempt: number): Promise<PendingActivity> {
  return waitFor(
    `run attempt ${attempt + 1}`,
    async () => {
      const run = await pendingRun(taskId);
      if (!run || (run.attempt ?? 0) <= attempt) throw new Error(`attempt ${run?.attempt}`);
      return run;
    },
    { timeoutMs: 120_000, intervalMs: 50 },
  );
}

describe('the watch on attempts handed to a silent worker', () => {
  // Claims left long ago (a queue no worker serves any more) must not crowd a fresh silence out of
  // the watch's rounds: the bench's frozen row once waited out every timeout behind 50 of them.
  it('sees the latest silences first, and none older than its window', async () => {
    const stale = await Promise.all(
      Array.from({ length: 3 }, () => insertTask(stack.db.pool, { status: 'running', owner: 'gone-long-ago' })),
    );
    await stack.db.pool.query(
      "UPDATE baton.tasks SET heartbeat_at = now() - interval '1 hour', lease_expires_at = now() - interval '59 minutes' WHERE id = ANY($1)",
      [stale.map((t) => t.id)],
    );
    const fresh = await insertTask(stack.db.pool);
    await taskClaim(stack.db.pool, fresh.id, 'frozen-just-now', 1);
    const seen = await waitFor(
      'the fresh claim to be past its lease',
      async () => {
        const claims = await claimsSilent(stack.db.pool, 2, 60_000);
        if (!claims.some((c) => c.taskId === fresh.id)) throw new Error('not yet');
        return claims;
      },
      { timeoutMs: 10_000, intervalMs: 10 },
    );
    expect(seen[0]).toMatchObject({ taskId: fresh.id, owner: 'frozen-just-now', leaseMs: 1 });
    expect(seen.map((c) => c.taskId)).not.toEqual(expect.arrayContaining([stale[0]!.id]));
    const wider = await claimsSilent(stack.db.pool, 10, 7_200_000);
    expect(wider.map((c) => c.taskId)).toEqual(expect.arrayContaining(stale.map((t) => t.id)));
    expect(wider[0]!.taskId).toBe(fresh.id);
  });

  // A store-path claim (task_claim_next) has no run attempt in Temporal to look at. In a full bench
  // run the claim benchmark's thousands of claims ran out ten minutes on, one after another, each
  // newer than a frozen worker's silence: they filled every round, and the retry the frozen owner
  // was handed waited out its whole heartbeat timeout.
  it('passes over store-path claims: a stream of them running out cannot hide a fresh silence', async () => {
    const run = await insertTask(stack.db.pool);
    await taskClaim(stack.db.pool, run.id, 'frozen-just-now', 1);
    const stored = await storeClaims(stack.db.pool, 25, 'store-claimer-gone', 1);
    await waitFor(
      "the store claims to be past their leases, each after the run's",
      async () => {
        const { rows } = await stack.db.pool.query<{ left: number }>(
          "SELECT count(*)::int AS left FROM baton.tasks WHERE id = ANY($1) AND status = 'running' AND lease_expires_at >= now()",
          [stored],
        );
        if (rows[0]!.left > 0) throw new Error(`${rows[0]!.left} not yet`);
      },
      { timeoutMs: 10_000, intervalMs: 10 },
    );
    const seen = (await claimsSilent(stack.db.pool, 20, 60_000)).map((c) => c.taskId);
    expect(seen).toContain(run.id);
    expect(seen.filter((id) => stored.includes(id))).toEqual([]);
  });

  it('fails the retry a frozen owner was handed, so the next goes to a worker that answers, which recovers the task', async () => {
    const { taskId, claimed, attempt } = await frozenOwnerHoldingARetry();
    const { lines, stop } = await startWatch('test-watch');
    try {
      const next = await nextAttempt(taskId, attempt);
      expect(next.lastFailure?.applicationFailureInfo?.type).toBe(SILENT_ATTEMPT_FAILURE);
      expect(next.lastFailure?.message).toMatch(
        `run attempt ${attempt} went to ${claimed.owner}, which has not heartbeated since it started`,
      );
      // The claim version the next attempt must recover came through the failure.
      expect(next.heartbeatDetails?.payloads?.length).toBe(1);
      // Retried at once, not after the run's retry interval: Temporal schedules the next attempt
      // the failure's delay after it recorded the failure.
      expect(tsToMs(next.scheduledTime) - tsToMs(next.lastAttemptCompleteTime)).toBe(RETRY_AT_ONCE_MS);
      // The watch says so once Temporal's answer to its call reaches it, which on a busy machine can be after the next attempt is seen.
      await waitFor(
        "the watch's line",
        async () => {
          if (!lines.some((line) => line.includes(`task ${taskId}: run attempt ${attempt} went to ${claimed.owner}`)))
            throw new Error(`lines so far: ${JSON.stringify(lines)}`);
        },
        { timeoutMs: 30_000, intervalMs: 50 },
      );

      // A worker that answers takes the run over: it recovers the frozen claim and finishes the task.
      fleet!.spawn();
      const task = await waitFor(
        'the task to be verified',
        async () => {
          const current = await taskRead(stack.db.pool, taskId);
          if (current.status !== 'verified') throw new Error(`task is ${current.status}`);
          return current;
        },
        { timeoutMs: 180_000, intervalMs: 200 },
      );
      expect(task.claimVersion).toBeGreaterThan(claimed.claimVersion);
      expect(task.owner).not.toBe(claimed.owner);
      const events = await eventRead(stack.db.pool, 'task', taskId);
      const reclaimed = events.find((e) => e.kind === 'reclaimed_after_silence' && e.fence === claimed.claimVersion);
      expect(reclaimed?.reason).toMatch(/^owner silent: .* left claim version \d+ held; run attempt \d+ takes over/);
    } finally {
      await stop();
    }
  }, 600_000);

  // A claim whose workflow Temporal does not know (an operator terminated it; here, taken outside any
  // workflow) gives the watch nothing to fail. A stream of them running out after a frozen owner's
  // silence filled every round for the watch's whole window, as the store-path claims above did.
  // Looked at again at once here (a recheck of 0 ms), they still must not crowd out the fresh silence.
  it('looks past claims whose workflow Temporal does not know: a stream of them cannot hide a frozen owner', async () => {
    const orphans = await Promise.all(Array.from({ length: 25 }, () => insertTask(stack.db.pool)));
    const { taskId, attempt } = await frozenOwnerHoldingARetry();
    await waitFor(
      "the frozen owner's claim to be past its lease",
      async () => {
        if (!(await claimsSilent(stack.db.pool, 100, 60_000)).some((c) => c.taskId === taskId)) throw new Error('not yet');
      },
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    for (const orphan of orphans) await taskClaim(stack.db.pool, orphan.id, 'workflow-terminated', 1);
    const orphanIds = orphans.map((t) => t.id);
    const latest = await waitFor(
      "the orphans' claims to be past their leases, each after the frozen owner's",
      async () => {
        const claims = await claimsSilent(stack.db.pool, 20, 60_000);
        if (!claims.every((c) => orphanIds.includes(c.taskId))) throw new Error('not yet');
        return claims;
      },
      { timeoutMs: 10_000, intervalMs: 10 },
    );
    expect(latest.map((c) => c.taskId)).not.toContain(taskId);
    const { stop } = await startWatch('test-watch', { noWorkflowRecheckMs: 0 });
    try {
      const next = await nextAttempt(taskId, attempt);
      expect(next.lastFailure?.applicationFailureInfo?.type).toBe(SILENT_ATTEMPT_FAILURE);
    } finally {
      await stop();
    }
  }, 600_000);

  // A claim left silent by its agent (a pooled agent gone quiet) is retried on the same worker,
  // which answers: the watch of that worker, running, is proof of it, and must not fail the retry
  // before it heartbeats (CI saw it do so, and the retry's work was thrown away).
  it('never fails an attempt that went to the worker watching: it answers', async () => {
    const { taskId, claimed, attempt } = await frozenOwnerHoldingARetry();
    const { lines, stop } = await startWatch(claimed.owner!);
    try {
      const next = await nextAttempt(taskId, attempt);
      expect(next.lastFailure?.applicationFailureInfo?.type).not.toBe(SILENT_ATTEMPT_FAILURE);
      expect(next.lastFailure?.timeoutFailureInfo).toBeTruthy();
      expect(lines.filter((line) => line.includes(' went to '))).toEqual([]);
    } finally {
      await stop();
    }
  }, 600_000);

  // Temporal fails whichever attempt is current when the watch's call lands, not the one it
  // described. CI saw a retry that started on a worker that answers, after the watch had read the
  // claim and before its call, failed in its place (and its fresh claim given up).
  it('never fails an attempt it did not describe: one that started after it looked is looked at anew', async () => {
    const { taskId, attempt } = await frozenOwnerHoldingARetry();
    // Set once the next attempt has started between the watch's read and its call: the race this is about.
    let raced = false;
    let racing = false;
    const { lines, stop } = await startWatch('test-watch', {
      wrap: (db) => ({
        async query<R extends Record<string, unknown>>(text: string, values?: readonly unknown[]) {
          const result = await db.query<R>(text, values);
          if (racing || !text.includes('baton.task_read(')) return result;
          racing = true;
          // Between the watch's read of the claim (still silent) and its call: the attempt it described
          // ends, as by Temporal's own timeout, and the next one starts (on whichever worker polls first).
          const held = (await pendingRun(taskId))!;
          await stack.temporal.client.workflowService.respondActivityTaskFailedById({
            namespace: stack.temporal.namespace,
            workflowId: taskWorkflowId(taskId),
            activityId: held.activityId,
            identity: 'test',
            failure: {
              message: 'ended by the test',
              applicationFailureInfo: { type: 'EndedByTest', nextRetryDelay: msToTs(RETRY_AT_ONCE_MS) },
            },
            lastHeartbeatDetails: held.heartbeatDetails,
          });
          fleet!.spawn();
          await waitFor(
            `run attempt ${attempt + 1} to start`,
            async () => {
              const run = await pendingRun(taskId);
              if (!run || (run.attempt ?? 0) <= attempt || run.state !== 2)
                throw new Error(`attempt ${run?.attempt} in state ${run?.state}`);
            },
            { timeoutMs: 120_000, intervalMs: 50 },
          );
          raced = true;
          return result;
        },
      }),
    });
    try {
      await waitFor(
        'the task to be verified',
        async () => {
          const current = await taskRead(stack.db.pool, taskId);
          if (current.status !== 'verified') throw new Error(`task is ${current.status}`);
        },
        { timeoutMs: 180_000, intervalMs: 200 },
      );
      expect(raced).toBe(true);
      // Attempt `attempt` was over before the watch acted: a watch that says it failed it failed another.
      expect(lines.filter((line) => line.includes(`run attempt ${attempt} went to`))).toEqual([]);
      // And it says it left that attempt alone.
      expect(lines.some((line) => line.includes(`run attempt ${attempt} left alone`))).toBe(true);
    } finally {
      await stop();
    }
  }, 600_000);

  it('is what made the difference: without it the retry waits out the heartbeat timeout on the frozen owner', async () => {
    const { taskId, attempt } = await frozenOwnerHoldingARetry();
    const next = await nextAttempt(taskId, attempt);
    expect(next.lastFailure?.applicationFailureInfo?.type).not.toBe(SILENT_ATTEMPT_FAILURE);
    expect(next.lastFailure?.timeoutFailureInfo).toBeTruthy();
  }, 600_000);
});
