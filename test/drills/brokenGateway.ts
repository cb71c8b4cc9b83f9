// A deliberately broken tool gateway: reconciliation off. It keeps the ledger and the fence, but
// after an uncertain outcome (or on finding an earlier owner's call in flight) it assumes the call
// did not happen and sends it again without asking the tool. D5 must fail against it. It lives in
// the tests only; production code has no switch for it.
import { toolCallBegin, toolCallReconcile, toolCallRecord, toolCallSend } from '../../src/db/sql/toolCalls.js';
import type { GatewayFactory } from '../../src/drills/d5ToolReconciliation.js';
import { ToolCallFailedError } from '../../src/tools/errors.js';
import { paramsHash } from '../../src/tools/paramsHash.js';
import { safeExecute, toolCallKey } from '../../src/tools/toolGateway.js';
import { TOOL_CALL_DONE, type ToolCallResult } from '../../src/tools/types.js';

const MAX_SENDS = 3;

export const blindRetryGateway: GatewayFactory = (db, tools) => async (fence, call) => {
  const adapter = tools[call.tool]!;
  const key = toolCallKey(fence.taskId, call.step);
  let row = await toolCallBegin(db, fence, { step: call.step, tool: call.tool, paramsHash: paramsHash(call.params) });
  let sentNow = 0;
  for (;;) {
    if (TOOL_CALL_DONE.has(row.status)) {
      return {
        key,
        tool: call.tool,
        step: call.step,
        status: row.status,
        result: row.result,
        attempts: row.attempts,
        sentNow,
        reconciled: false,
      } as ToolCallResult;
    }
    if (row.status === 'failed' && !row.retryable) throw new ToolCallFailedError(key, call.tool, row.error ?? 'refused', false);
    if (row.status === 'sent' || row.status === 'unknown') {
      // The bug under test: "no answer, so it did not happen", recorded without asking the tool.
      row = await toolCallReconcile(db, fence, call.step, { finding: 'absent' });
      continue;
    }
    if (sentNow++ >= MAX_SENDS) throw new ToolCallFailedError(key, call.tool, 'gave up', true);
    await toolCallSend(db, fence, call.step);
    row = await toolCallRecord(db, fence, call.step, await safeExecute(adapter, key, call.params));
  }
};
