import type { Queryable } from '../../src/db/queryable.js';
import { eventRead } from '../../src/db/sql/reads.js';
import type { Fence } from '../../src/db/storeCall.js';
import { insertTask } from './tasks.js';

/** The owner of a fence goes silent and another owner claims the task anew. */
export { reclaim } from '../../src/testkit/claims.js';

/** A running task of its own graph, claimed by `owner`: the fence its tool calls carry. */
export async function runningTask(db: Queryable, owner = 'owner-a'): Promise<Fence> {
  const task = await insertTask(db, { status: 'running', owner });
  return { taskId: task.id, owner, claimVersion: task.claimVersion };
}

/** Kinds of the task's tool-call and refusal events, in order. */
export async function toolEventKinds(db: Queryable, taskId: string): Promise<string[]> {
  return (await eventRead(db, 'task', taskId)).map((e) => e.kind).filter((k) => k.startsWith('tool_call_') || k === 'stale_write_refused');
}
