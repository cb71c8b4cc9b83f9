// Errors of the tool gateway, one class per condition the caller handles differently. A stale
// claim is the task store's StaleClaimError and a reused key with other parameters its
// ToolParamsMismatchError (both in src/errors.ts); these are the gateway's own.
import { BatonError } from '../errors.js';

/** Thrown when a call names a tool the worker has not configured; nothing was written or sent. */
export class UnknownToolError extends BatonError {
  override readonly name = 'UnknownToolError';
  readonly code = 'unknown_tool';
  constructor(
    readonly tool: string,
    readonly configured: readonly string[],
  ) {
    super(`no tool '${tool}' is configured on this worker (configured: ${configured.length ? configured.join(', ') : 'none'})`);
  }
}

/**
 * Thrown when the tool answered that it did not act. `retryable`: it refused before acting (rate
 * limit, unreachable, or every send this call allowed was reported absent), so the same call may
 * be made again later; otherwise the refusal is final for this key.
 */
export class ToolCallFailedError extends BatonError {
  override readonly name = 'ToolCallFailedError';
  readonly code = 'tool_call_failed';
  constructor(
    readonly key: string,
    readonly tool: string,
    readonly detail: string,
    override readonly retryable: boolean,
  ) {
    super(`tool call ${key} (${tool}) failed${retryable ? ' (may be retried)' : ''}: ${detail}`);
  }
}

/**
 * Thrown when the call may or may not have taken effect and the tool could not say which (no
 * lookup, or lookup unavailable). The ledger row stays `unknown`; the next call with this key asks
 * again. Do not repeat the call under another step name: that could do it twice.
 */
export class ToolOutcomeUnknownError extends BatonError {
  override readonly name = 'ToolOutcomeUnknownError';
  readonly code = 'tool_outcome_unknown';
  // Asking again with the same key reconciles; it never sends blindly.
  override readonly retryable = true;
  constructor(
    readonly key: string,
    readonly tool: string,
    readonly detail: string,
  ) {
    super(`tool call ${key} (${tool}): outcome unknown, the tool could not say whether it took effect: ${detail}`);
  }
}
