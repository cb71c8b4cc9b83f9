import type { Queryable } from '../queryable.js';
import { toToolCallRow, type ToolCallRow } from './toolCallRow.js';

/** The ledger rows of one task, or of every task of a graph when `id` has no `/`, oldest first. */
export async function selectToolCalls(db: Queryable, id: string): Promise<Array<ToolCallRow & { taskId: string; step: string }>> {
  const { rows } = await db.query(
    `SELECT * FROM baton.tool_calls
      WHERE task_id = $1 OR ($1 NOT LIKE '%/%' AND task_id LIKE replace(replace($1, '%', '\\%'), '_', '\\_') || '/%')
      ORDER BY created_at, task_id, step`,
    [id],
  );
  return rows.map((r) => ({ ...toToolCallRow(r), taskId: r.task_id, step: r.step }));
}
