import type { Queryable } from '../queryable.js';
import type { Fence } from '../storeCall.js';
import { toolCallWrite, type ExecuteOutcome, type ToolCallRow } from './toolCallRow.js';

/** X1: records what the tool answered to this claim's own send: succeeded, failed or unknown (uncertain). */
export function recordToolOutcome(db: Queryable, fence: Fence, step: string, outcome: ExecuteOutcome): Promise<ToolCallRow> {
  const args =
    outcome.outcome === 'succeeded'
      ? ['succeeded', JSON.stringify(outcome.result), null, false]
      : outcome.outcome === 'failed'
        ? ['failed', null, outcome.error, outcome.retryable]
        : ['unknown', null, outcome.reason, false];
  return toolCallWrite(db, fence, 'tool_call_record', 'tool_call_record', [step, ...args]);
}
