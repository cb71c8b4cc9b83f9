// The Temporal options createBatonWorker sets, as the SDK resolves them: an option the SDK takes but
// ignores looks set in our code and is not. SDK 1.24 ignores maxConcurrentActivityTaskPolls (its
// poller behaviour defaults to 10 polls whatever it says), and each open poll of a frozen worker is
// handed a run's retry (docs/tasks.md, Recovery).
import { Worker } from '@temporalio/worker';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ACTIVITY_TASK_POLLS_DEFAULT, STICKY_QUEUE_TIMEOUT_MS_DEFAULT } from '../../src/worker.js';
import { useTaskStack } from '../helpers/taskStack.js';

const stack = useTaskStack();

afterEach(() => {
  vi.restoreAllMocks();
});

describe("baton's worker options", () => {
  it('keeps ACTIVITY_TASK_POLLS_DEFAULT activity polls open and its sticky queue timeout, as the SDK resolved them', async () => {
    const create = vi.spyOn(Worker, 'create');
    const worker = await stack.temporal.createWorker(stack.db.pool);
    await worker.runUntil(Promise.resolve());
    const created = (await create.mock.results[0]!.value) as Worker;
    expect(created.options.activityTaskPollerBehavior).toEqual({ type: 'simple-maximum', maximum: ACTIVITY_TASK_POLLS_DEFAULT });
    expect(created.options.stickyQueueScheduleToStartTimeoutMs).toBe(STICKY_QUEUE_TIMEOUT_MS_DEFAULT);
  });

  it('lets the caller choose the activity polls', async () => {
    const create = vi.spyOn(Worker, 'create');
    const worker = await stack.temporal.createWorker(stack.db.pool, {
      workerOptions: { activityTaskPollerBehavior: { type: 'simple-maximum', maximum: 5 } },
    });
    await worker.runUntil(Promise.resolve());
    const created = (await create.mock.results[0]!.value) as Worker;
    expect(created.options.activityTaskPollerBehavior).toEqual({ type: 'simple-maximum', maximum: 5 });
  });
});
