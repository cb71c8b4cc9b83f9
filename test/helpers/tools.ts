import type { Queryable } from '../../src/db/queryable.js';
import { claimTask } from '../../src/db/sql/claimTask.js';
import type { Fence } from '../../src/db/sql/fencedWrite.js';
import { releaseClaim } from '../../src/db/sql/releaseClaim.js';
import { selectEvents } from '../../src/db/sql/selectEvents.js';
import { insertTask, LEASE_MS } from './tasks.js';

/** A running task of its own graph, claimed by `owner`: the fence its tool calls carry. */
export async function runningTask(db: Queryable, owner = 'owner-a'): Promise<Fence> {
  const task = await insertTask(db, { status: 'running', owner });
  return { taskId: task.id, owner, claimVersion: task.claimVersion };
}

/** The owner of `fence` goes silent: its claim is released and `owner` claims the task anew. */
export async function reclaim(db: Queryable, fence: Fence, owner: string): Promise<Fence> {
  await releaseClaim(db, { taskId: fence.taskId, claimVersion: fence.claimVersion, actor: 'test', kind: 'reclaimed_after_silence', reason: 'test: owner silent' });
  const claim = await claimTask(db, fence.taskId, owner, LEASE_MS);
  if (!claim) throw new Error(`could not reclaim ${fence.taskId}`);
  return { taskId: fence.taskId, owner, claimVersion: claim.claimVersion };
}

/** Kinds of the task's tool-call and refusal events, in order. */
export async function toolEventKinds(db: Queryable, taskId: string): Promise<string[]> {
  return (await selectEvents(db, 'task', taskId)).map((e) => e.kind).filter((k) => k.startsWith('tool_call_') || k === 'stale_write_refused');
}
