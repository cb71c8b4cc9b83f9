// Bindings of src/db/functions/tool_calls.sql: the tool-call ledger (SPEC X1, X2) as the store
// returns it, and the one way its fenced functions (`baton.tool_call_*`) are called.
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

/** U11: a call depends on `object` being at `version` when it is sent. */
export interface ToolCallPrecondition {
  object: string;
  version: number;
}

/** What `lookup` found about a key. An adapter that throws is treated as `unknown`. */
export type LookupFinding = { finding: 'found'; result: Json } | { finding: 'absent' } | { finding: 'unknown'; reason: string };

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
async function toolCallWrite(db: Queryable, fence: Fence, action: string, fn: string, args: readonly unknown[]): Promise<ToolCallRow> {
  const row = await callFenced<ToolCallOutcomeRecord>(
    db,
    fence,
    action,
    fn,
    [fence.taskId, fence.owner, fence.claimVersion, ...args],
    (r) => ({
      status: r.task_status,
      owner: r.task_owner,
      claimVersion: r.task_claim_version,
    }),
  );
  return toToolCallRow(row);
}

/**
 * X1: writes the ledger row of (task, step) as `pending` before anything is sent, or returns the
 * existing row. ToolParamsMismatchError when the key was used with another tool or parameters;
 * ToolPreconditionFailedError (nothing written) when a precondition does not hold (see toolCallSend).
 */
export function toolCallBegin(
  db: Queryable,
  fence: Fence,
  call: { step: string; tool: string; paramsHash: string; preconditions?: readonly ToolCallPrecondition[]; actor?: string },
): Promise<ToolCallRow> {
  return toolCallWrite(db, fence, 'tool_call', 'tool_call_begin', [call.step, call.tool, call.paramsHash, ...preconditionArgs(call)]);
}

/**
 * The preconditions and who they are checked for, as the ledger functions take them; none at all
 * for a call without (unless `always`, for a parameter after them), so it also runs on definitions
 * from before preconditions (an upgrade's fixtures).
 */
function preconditionArgs(
  options: { preconditions?: readonly ToolCallPrecondition[]; actor?: string },
  always = false,
): Array<string | null> {
  if (!options.preconditions?.length) return always ? [null, null] : [];
  return [JSON.stringify(options.preconditions), options.actor ?? null];
}

/**
 * X1, X2: marks the call `sent` (committed before the request leaves) and counts the attempt.
 * IllegalTransitionError when its outcome is uncertain and it was not reconciled first;
 * `replay` allows re-sending an `unknown` call to a tool that dedupes by key. U11: with
 * `preconditions`, ToolPreconditionFailedError (nothing changed) when an object named moved from its
 * version or is not one `actor` (default: the owner) may view.
 */
export function toolCallSend(
  db: Queryable,
  fence: Fence,
  step: string,
  options: { replay?: boolean; preconditions?: readonly ToolCallPrecondition[]; actor?: string; ratePerMinute?: number } = {},
): Promise<ToolCallRow> {
  // A rate limit comes after the preconditions' places, filled or not; without one, the old arity.
  const limited = options.ratePerMinute === undefined ? [] : [...preconditionArgs(options, true), options.ratePerMinute];
  const args = limited.length ? limited : preconditionArgs(options);
  return toolCallWrite(db, fence, 'tool_call_send', 'tool_call_send', [step, options.replay ?? false, ...args]);
}

/** X1: records what the tool answered to this claim's own send: succeeded, failed or unknown (uncertain). */
export function toolCallRecord(db: Queryable, fence: Fence, step: string, outcome: ExecuteOutcome): Promise<ToolCallRow> {
  const args =
    outcome.outcome === 'succeeded'
      ? ['succeeded', JSON.stringify(outcome.result), null, false]
      : outcome.outcome === 'failed'
        ? ['failed', null, outcome.error, outcome.retryable]
        : ['unknown', null, outcome.reason, false];
  return toolCallWrite(db, fence, 'tool_call_record', 'tool_call_record', [step, ...args]);
}

/**
 * X2: records what the tool's lookup found about a call left `sent` or `unknown`, by this claim or
 * an earlier owner's: found (reconciled_succeeded), absent (reconciled_absent) or unknown.
 */
export function toolCallReconcile(db: Queryable, fence: Fence, step: string, finding: LookupFinding): Promise<ToolCallRow> {
  const args =
    finding.finding === 'found'
      ? ['found', JSON.stringify(finding.result), null]
      : finding.finding === 'absent'
        ? ['absent', null, null]
        : ['unknown', null, finding.reason];
  return toolCallWrite(db, fence, 'tool_call_reconcile', 'tool_call_reconcile', [step, ...args]);
}
