import type { Queryable } from '../queryable.js';
import type { Fence } from '../storeCall.js';
import { toolCallWrite, type ToolCallRow } from './toolCallRow.js';

/**
 * X1: writes the ledger row of (task, step) as `pending` before anything is sent, or returns the
 * existing row. ToolParamsMismatchError when the key was used with another tool or parameters.
 */
export function beginToolCall(db: Queryable, fence: Fence, call: { step: string; tool: string; paramsHash: string }): Promise<ToolCallRow> {
  return toolCallWrite(db, fence, 'tool_call', 'tool_call_begin', [call.step, call.tool, call.paramsHash]);
}
