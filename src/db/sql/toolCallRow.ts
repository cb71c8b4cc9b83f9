// The tool-call ledger (SPEC X1, X2) as the store returns it, and the one way its fenced
// functions (`baton.tool_call_*`) are called.
import type { Json } from '../../json.js';
import type { Queryable } from '../queryable.js';
import { callFenced, type Fence } from '../storeCall.js';

/** Every status of a ledger row. Postgres holds the same list and the allowed transitions (migration 0005). */
export const TOOL_CALL_STATUSES = [
  'pending',
  'sent',
  'succeeded',
  'failed',
  'unknown',
  'reconciled_succeeded',
  'reconciled_absent',
] as const;

export type ToolCallStatus = (typeof TOOL_CALL_STATUSES)[number];

/** What one `execute` came to. An adapter that throws is treated as `uncertain`. */
export type ExecuteOutcome =
  | { outcome: 'succeeded'; result: Json }
  /** The tool answered that it did not act. `retryable`: it refused before acting (rate limit, not reachable). */
  | { outcome: 'failed'; error: string; retryable: boolean }
  /** It may or may not have acted: timeout, connection reset, 5xx. */
  | { outcome: 'uncertain'; reason: string };

/** What `lookup` found about a key. An adapter that throws is treated as `unknown`. */
export type LookupFinding =
  | { finding: 'found'; result: Json }
  | { finding: 'absent' }
  | { finding: 'unknown'; reason: string };

/** A ledger row as baton's code sees it. */
export interface ToolCallRow {
  key: string;
  tool: string;
  paramsHash: string;
  status: ToolCallStatus;
  owner: string;
  claimVersion: number;
  attempts: number;
  result: Json | null;
  error: string | null;
  retryable: boolean;
  createdAt: string;
  sentAt: string | null;
  updatedAt: string;
}

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
 * Runs one fenced tool-call function (`baton.<fn>(task, owner, claim version, ...args)`) and
 * returns the ledger row; StaleClaimError when the claim is stale (already recorded as an event).
 */
export async function toolCallWrite(db: Queryable, fence: Fence, action: string, fn: string, args: readonly unknown[]): Promise<ToolCallRow> {
  const row = await callFenced<ToolCallOutcomeRecord>(db, fence, action, fn, [fence.taskId, fence.owner, fence.claimVersion, ...args], (r) => ({
    status: r.task_status,
    owner: r.task_owner,
    claimVersion: r.task_claim_version,
  }));
  return toToolCallRow(row);
}
