import { mapDatabaseErrors, StaleClaimError } from '../../errors.js';
import type { Json, ToolCallRow, ToolCallStatus } from '../../tools/types.js';
import type { Queryable } from '../queryable.js';
import type { Fence } from './fencedWrite.js';

/** Columns of `baton.tool_call_outcome`, the type every `baton.tool_call_*` function returns. */
interface ToolCallOutcomeRecord {
  accepted: boolean;
  task_status: string;
  task_owner: string | null;
  task_claim_version: number;
  idempotency_key: string;
  tool: string;
  params_hash: string;
  status: ToolCallStatus;
  owner: string;
  claim_version: number;
  attempts: number;
  result: Json | null;
  error: string | null;
  retryable: boolean;
  created_at: Date;
  sent_at: Date | null;
  updated_at: Date;
  [column: string]: unknown;
}

export function toToolCallRow(r: Record<string, any>): ToolCallRow {
  return {
    key: r.idempotency_key,
    tool: r.tool,
    paramsHash: r.params_hash,
    status: r.status,
    owner: r.owner,
    claimVersion: r.claim_version,
    attempts: r.attempts,
    result: r.result,
    error: r.error,
    retryable: r.retryable,
    createdAt: r.created_at.toISOString(),
    sentAt: r.sent_at?.toISOString() ?? null,
    updatedAt: r.updated_at.toISOString(),
  };
}

/**
 * Runs one fenced tool-call function (`SELECT * FROM baton.tool_call_<fn>(task, owner, claim
 * version, ...)`) and returns the ledger row; throws StaleClaimError when the claim is stale (the
 * function has already recorded the refusal as an event).
 */
export function toolCallWrite(db: Queryable, fence: Fence, action: string, fn: string, args: readonly unknown[]): Promise<ToolCallRow> {
  return mapDatabaseErrors(async () => {
    const values = [fence.taskId, fence.owner, fence.claimVersion, ...args];
    const text = `SELECT * FROM baton.${fn}(${values.map((_, i) => `$${i + 1}`).join(', ')})`;
    const { rows } = await db.query<ToolCallOutcomeRecord>(text, values);
    const row = rows[0]!;
    if (!row.accepted) {
      throw new StaleClaimError(fence.taskId, fence.owner, fence.claimVersion, action, {
        status: row.task_status,
        owner: row.task_owner,
        claimVersion: row.task_claim_version,
      });
    }
    return toToolCallRow(row);
  });
}
