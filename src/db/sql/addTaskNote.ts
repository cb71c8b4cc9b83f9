import type { Queryable } from '../queryable.js';
import { fencedWrite } from './fencedWrite.js';

/**
 * Appends a note to a task's discussion. With a claim version the note is tied to the claim and
 * fenced like any owner write; without one it is free discussion and never a record of ownership.
 */
export function addTaskNote(db: Queryable, taskId: string, author: string, body: string, claimVersion?: number) {
  return fencedWrite(
    db,
    { taskId, owner: author, claimVersion: claimVersion ?? 0 },
    'note',
    'task_note_add',
    [taskId, author, claimVersion ?? null, body],
  );
}
