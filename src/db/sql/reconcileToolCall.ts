import type { Queryable } from '../queryable.js';
import type { Fence } from '../storeCall.js';
import { toolCallWrite, type LookupFinding, type ToolCallRow } from './toolCallRow.js';

/**
 * X2: records what the tool's lookup found about a call left `sent` or `unknown`, by this claim or
 * an earlier owner's: found (reconciled_succeeded), absent (reconciled_absent) or unknown.
 */
export function reconcileToolCall(db: Queryable, fence: Fence, step: string, finding: LookupFinding): Promise<ToolCallRow> {
  const args =
    finding.finding === 'found'
      ? ['found', JSON.stringify(finding.result), null]
      : finding.finding === 'absent'
        ? ['absent', null, null]
        : ['unknown', null, finding.reason];
  return toolCallWrite(db, fence, 'tool_call_reconcile', 'tool_call_reconcile', [step, ...args]);
}
