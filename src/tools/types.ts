/**
 * Terminology
 * - tool: anything outside baton a task acts on (sends an email, opens a PR, creates a resource).
 * - adapter: baton's handle on one tool: `execute(key, params)` and, where the tool can, `lookup(key)`.
 * - step: a name the caller gives one external call of a task; a different call needs a new step.
 * - idempotency key: `<task id>:<step>`; the same across retries, reclaims and re-runs (never
 *   the claim version), and sent to the tool with the call.
 * - ledger: `baton.tool_calls`, one row per key, written before the call goes out.
 * - uncertain: the call may or may not have taken effect (timeout, connection reset, 5xx, a
 *   worker lost between send and record).
 * - reconciliation: asking the tool through `lookup` whether the keyed effect happened, and
 *   recording the answer, before anything is sent again.
 */

// The ledger's row and what it records belong to the store (src/db/sql/toolCalls.ts); the
// gateway and its adapters use them from here.
export type { Json } from '../json.js';
export { TOOL_CALL_STATUSES } from '../db/sql/toolCalls.js';
export type { ExecuteOutcome, LookupFinding, ToolCallRow, ToolCallStatus } from '../db/sql/toolCalls.js';
import type { Json } from '../json.js';
import type { ExecuteOutcome, LookupFinding, ToolCallPrecondition, ToolCallStatus } from '../db/sql/toolCalls.js';

/** Statuses in which the effect is known to have happened; the recorded result is the answer. */
export const TOOL_CALL_DONE: ReadonlySet<ToolCallStatus> = new Set(['succeeded', 'reconciled_succeeded']);

/**
 * baton's handle on one external tool. Write one for any tool; `createHttpTool` is built in.
 * What baton can promise depends on what the tool offers (docs/tools.md):
 * - `lookup` that is authoritative: an uncertain call is repeated only when the tool says it did not happen.
 * - `idempotent`: repeating a call with the same key never makes a second effect.
 * - neither: an uncertain call is never repeated (at-most-once); it stays `unknown` for a person.
 */
export interface ToolAdapter {
  /** Performs the call, passing `key` to the tool so it can recognise a repeat. */
  execute(key: string, params: Json): Promise<ExecuteOutcome>;
  /** Asks the tool whether the effect keyed `key` happened. Omit when the tool cannot say. */
  lookup?(key: string): Promise<LookupFinding>;
  /** The tool itself dedupes by key: a repeated execute returns the first effect. (Default: false) */
  idempotent?: boolean;
  /** U11: at most this many calls sent in any minute, over every task and worker, enforced by the ledger. (Default: no limit) */
  ratePerMinute?: number;
}

/** One gateway call, as an agent or a runner asks for it; the claim is bound by baton. */
export interface ToolCallInput {
  /** Name of a tool configured on the worker. */
  tool: string;
  /** This call's step name within the task: with the task id, the idempotency key. */
  step: string;
  params: Json;
  /**
   * U11: shared objects the call depends on, at the versions the caller read. Checked in the
   * transaction that marks the call sent (before every send): if one moved, nothing is sent and the
   * call fails with ToolPreconditionFailedError. Not part of the key: call the same step again with
   * the versions read now. (Default: none)
   */
  preconditions?: ToolCallPrecondition[];
}

/** What a gateway call returns once the effect is known to have happened. */
export interface ToolCallResult {
  key: string;
  tool: string;
  step: string;
  status: 'succeeded' | 'reconciled_succeeded';
  result: Json;
  /** How many times the request was sent, over every owner. */
  attempts: number;
  /** Sends made by this call (0 when the recorded or reconciled result was enough). */
  sentNow: number;
  /** This call asked the tool's lookup about an earlier, uncertain send. */
  reconciled: boolean;
}
