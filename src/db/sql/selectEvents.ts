import type { TaskEvent } from '../../tasks/types.js';
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

export type SubjectKind = 'task' | 'object' | 'graph';

/**
 * The event log of one subject in order, or of every task of a graph when `subjectId` names a
 * graph and `includeGraphTasks` is set.
 */
export async function selectEvents(
  db: Queryable,
  subjectKind: SubjectKind,
  subjectId: string,
  options: { includeGraphTasks?: boolean; afterId?: number } = {},
): Promise<TaskEvent[]> {
  const rows = await callStore(db, 'event_read', [subjectKind, subjectId, options.afterId ?? 0, options.includeGraphTasks ?? false]);
  return rows.map((r) => ({
    id: r.id,
    subjectId: r.subject_id,
    seq: r.subject_seq,
    kind: r.kind,
    actor: r.actor,
    at: r.at.toISOString(),
    fence: r.fence,
    reason: r.reason,
    details: r.details,
  }));
}
