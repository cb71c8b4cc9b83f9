import type { Queryable } from '../queryable.js';
import type { Fence } from '../storeCall.js';
import { toolCallWrite, type ToolCallRow } from './toolCallRow.js';

/**
 * X1, X2: marks the call `sent` (committed before the request leaves) and counts the attempt.
 * IllegalTransitionError when its outcome is uncertain and it was not reconciled first;
 * `replay` allows re-sending an `unknown` call to a tool that dedupes by key.
 */
export function sendToolCall(db: Queryable, fence: Fence, step: string, options: { replay?: boolean } = {}): Promise<ToolCallRow> {
  return toolCallWrite(db, fence, 'tool_call_send', 'tool_call_send', [step, options.replay ?? false]);
}
