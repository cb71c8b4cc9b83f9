import type { TaskStatus } from '../../tasks/states.js';
import type { Queryable } from '../queryable.js';
import { callStoreValue } from '../storeCall.js';

/**
 * T8: applies the graph's `onUpstreamChange` policy to a stale task: with `rerun`, it is made ready
 * on its upstream tasks' current verified revisions once they are all verified; otherwise (or
 * until then) it stays stale. Returns its status afterwards; a task that is not stale is left alone.
 */
export function rerunStaleTask(db: Queryable, change: { taskId: string; actor: string; reason: string }): Promise<TaskStatus> {
  return callStoreValue<TaskStatus>(db, 'task_rerun_stale', [change.taskId, change.actor, change.reason]);
}
