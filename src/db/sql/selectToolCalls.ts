import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';
import { toToolCallRow, type ToolCallRow } from './toolCallRow.js';

/** The ledger rows of one task, or of every task of a graph when `id` has no `/`, oldest first. */
export async function selectToolCalls(db: Queryable, id: string): Promise<Array<ToolCallRow & { taskId: string; step: string }>> {
  const rows = await callStore(db, 'tool_call_read', [id]);
  return rows.map((r) => ({ ...toToolCallRow(r), taskId: r.task_id, step: r.step }));
}
