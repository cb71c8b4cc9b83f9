import type { TaskStatus } from '../../tasks/states.js';
import type { Queryable } from '../queryable.js';
import { callStoreValue } from '../storeCall.js';

/**
 * Moves a task outside any owner's claim (retry after rejection, give up, re-run, cancel), through
 * the database's state machine; returns the status it left. The event kind names the decision.
 */
export function setTaskStatus(
  db: Queryable,
  change: { taskId: string; actor: string; to: TaskStatus; kind: string; reason: string },
): Promise<TaskStatus> {
  return callStoreValue<TaskStatus>(db, 'task_set_status', [change.taskId, change.actor, change.to, change.kind, change.reason]);
}
