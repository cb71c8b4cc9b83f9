import { mapDatabaseErrors } from '../../errors.js';
import type { TaskStatus } from '../../tasks/states.js';
import type { Queryable } from '../queryable.js';

/**
 * Moves a task outside any owner's claim (retry after rejection, give up, re-run, cancel), through
 * the database's state machine; returns the status it left. The event kind names the decision.
 */
export function setTaskStatus(
  db: Queryable,
  change: { taskId: string; actor: string; to: TaskStatus; kind: string; reason: string },
): Promise<TaskStatus> {
  return mapDatabaseErrors(async () => {
    const { rows } = await db.query<{ previous: TaskStatus }>('SELECT baton.set_task_status($1, $2, $3, $4, $5) AS previous', [
      change.taskId,
      change.actor,
      change.to,
      change.kind,
      change.reason,
    ]);
    return rows[0]!.previous;
  });
}
