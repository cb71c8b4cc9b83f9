// Errors of the tool gateway, one class per condition the caller handles differently. A stale
// claim is the task store's StaleClaimError and a reused key with other parameters its
// ToolParamsMismatchError (both in src/errors.ts); these are the gateway's own.

/** Thrown when a call names a tool the worker has not configured; nothing was written or sent. */
export class UnknownToolError extends Error {
  override readonly name = 'UnknownToolError';
  constructor(readonly tool: string, readonly configured: readonly string[]) {
    super(`no tool '${tool}' is configured on this worker (configured: ${configured.length ? configured.join(', ') : 'none'})`);
  }
}

/**
 * Thrown when the tool answered that it did not act. `retryable`: it refused before acting (rate
 * limit, unreachable, or every send this call allowed was reported absent), so the same call may
 * be made again later; otherwise the refusal is final for this key.
 */
export class ToolCallFailedError extends Error {
  override readonly name = 'ToolCallFailedError';
  constructor(readonly key: string, readonly tool: string, readonly detail: string, readonly retryable: boolean) {
    super(`tool call ${key} (${tool}) failed${retryable ? ' (may be retried)' : ''}: ${detail}`);
  }
}

/**
 * Thrown when the call may or may not have taken effect and the tool could not say which (no
 * lookup, or lookup unavailable). The ledger row stays `unknown`; the next call with this key asks
 * again. Do not repeat the call under another step name: that could do it twice.
 */
export class ToolOutcomeUnknownError extends Error {
  override readonly name = 'ToolOutcomeUnknownError';
  constructor(readonly key: string, readonly tool: string, readonly detail: string) {
    super(`tool call ${key} (${tool}): outcome unknown, the tool could not say whether it took effect: ${detail}`);
  }
}
