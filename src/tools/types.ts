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

/** A JSON value, as parameters and results travel. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every status of a ledger row. Postgres holds the same list and the allowed transitions (0005). */
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

/** Statuses in which the effect is known to have happened; the recorded result is the answer. */
export const TOOL_CALL_DONE: ReadonlySet<ToolCallStatus> = new Set(['succeeded', 'reconciled_succeeded']);

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
}

/** One gateway call, as an agent or a runner asks for it; the claim is bound by baton. */
export interface ToolCallInput {
  /** Name of a tool configured on the worker. */
  tool: string;
  /** This call's step name within the task: with the task id, the idempotency key. */
  step: string;
  params: Json;
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
