// Errors a caller handles differently, one class each, on one base: `BatonError` carries a stable
// `code` and whether a retry can help. What reacts to an error derives it from those two: the
// activity failure (activities/failures.ts: type = class name, non-retryable unless `retryable`),
// the HTTP status and the exit code of a failed `baton` command (ERROR_RESPONSES below, one row per code).
// Conditions raised inside SQL carry a custom SQLSTATE (BTnnn), mapped to these classes in
// `fromDatabaseError` and nowhere else.

/** How an error is answered outside the process: over HTTP, and by the exit code of the `baton` command it ended. */
export interface ErrorResponse {
  httpStatus: number;
  /**
   * 1 a fault of baton or its deployment; 2 the call is wrong; 3 the claim or role moved, stop;
   * 4 the tool refused; 5 outcome unknown.
   */
  exitCode: number;
}

/** Every code a BatonError may carry, with its response; a new error class adds its row here. */
export const ERROR_RESPONSES = {
  invalid_input: { httpStatus: 400, exitCode: 2 },
  not_found: { httpStatus: 404, exitCode: 2 },
  unknown_tool: { httpStatus: 404, exitCode: 2 },
  illegal_transition: { httpStatus: 409, exitCode: 2 },
  append_only: { httpStatus: 409, exitCode: 2 },
  object_exists: { httpStatus: 409, exitCode: 2 },
  tool_params_mismatch: { httpStatus: 409, exitCode: 2 },
  tool_not_allowed: { httpStatus: 403, exitCode: 2 },
  permission_denied: { httpStatus: 403, exitCode: 2 },
  unauthenticated: { httpStatus: 401, exitCode: 2 },
  forbidden: { httpStatus: 403, exitCode: 2 },
  request_too_large: { httpStatus: 413, exitCode: 2 },
  method_not_allowed: { httpStatus: 405, exitCode: 2 },
  rate_limited: { httpStatus: 429, exitCode: 2 },
  insufficient_privilege: { httpStatus: 403, exitCode: 2 },
  no_open_offer: { httpStatus: 409, exitCode: 2 },
  stale_claim: { httpStatus: 410, exitCode: 3 },
  stale_write: { httpStatus: 409, exitCode: 3 },
  stale_view: { httpStatus: 409, exitCode: 3 },
  handoff_pending: { httpStatus: 409, exitCode: 3 },
  tool_call_failed: { httpStatus: 502, exitCode: 4 },
  tool_outcome_unknown: { httpStatus: 504, exitCode: 5 },
  store_unavailable: { httpStatus: 503, exitCode: 1 },
  temporal_unavailable: { httpStatus: 503, exitCode: 1 },
  api_unreachable: { httpStatus: 503, exitCode: 1 },
  agent_failed: { httpStatus: 500, exitCode: 1 },
  agent_isolation_unavailable: { httpStatus: 503, exitCode: 1 },
  migration_changed: { httpStatus: 500, exitCode: 1 },
  database_not_migrated: { httpStatus: 503, exitCode: 1 },
  roles_missing: { httpStatus: 503, exitCode: 1 },
  dependency_missing: { httpStatus: 503, exitCode: 1 },
  port_taken: { httpStatus: 503, exitCode: 1 },
  dev_stack_running: { httpStatus: 503, exitCode: 1 },
  dev_stack_not_found: { httpStatus: 503, exitCode: 1 },
  temporal_not_named: { httpStatus: 503, exitCode: 1 },
} as const satisfies Record<string, ErrorResponse>;

export type ErrorCode = keyof typeof ERROR_RESPONSES;

/** Response to anything that is not a BatonError: a fault, not the caller's doing. */
const UNEXPECTED: ErrorResponse = { httpStatus: 500, exitCode: 1 };

/** Base of every error baton reports on purpose. */
export abstract class BatonError extends Error {
  abstract override readonly name: string;
  /** Stable identifier of the condition; scripts and API clients match on it. */
  abstract readonly code: ErrorCode;
  /** Whether the same call may succeed when made again later. (Default: false) */
  readonly retryable: boolean = false;
  /** What a remote caller needs to act on the error (an activity failure's details). (Default: none) */
  get details(): Record<string, unknown> | undefined {
    return undefined;
  }
}

/** The HTTP status and exit code that report `error`. */
export function errorResponse(error: unknown): ErrorResponse {
  return error instanceof BatonError ? ERROR_RESPONSES[error.code] : UNEXPECTED;
}

/** The response for an error code received from elsewhere (an HTTP body); unknown codes are faults. */
export function errorResponseOf(code: string | undefined): ErrorResponse {
  return code !== undefined && Object.hasOwn(ERROR_RESPONSES, code) ? ERROR_RESPONSES[code as ErrorCode] : UNEXPECTED;
}

/** SQLSTATEs raised by baton's SQL functions. */
export const SQLSTATE = {
  illegalTransition: 'BT001',
  notFound: 'BT002',
  invalidInput: 'BT003',
  appendOnly: 'BT004',
  objectExists: 'BT020',
  toolParamsMismatch: 'BT040',
  toolPreconditionFailed: 'BT041',
  toolNotAllowed: 'BT042',
  toolRateLimited: 'BT043',
  /** Postgres's own: the login's roles may not do this (SPEC S1). */
  insufficientPrivilege: '42501',
  /** Postgres's own: a database is in use by other sessions (CREATE DATABASE ... TEMPLATE). */
  objectInUse: '55006',
} as const;

/** Thrown when a change would move a task or object through a transition the state machine forbids. */
export class IllegalTransitionError extends BatonError {
  override readonly name = 'IllegalTransitionError';
  readonly code = 'illegal_transition';
  constructor(readonly detail: string) {
    super(`illegal transition: ${detail}`);
  }
}

/** Thrown when the named task, graph or object does not exist. */
export class NotFoundError extends BatonError {
  override readonly name = 'NotFoundError';
  readonly code = 'not_found';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** Thrown when input fails validation at the boundary; nothing was written. */
export class InvalidInputError extends BatonError {
  // Widened to string so a more specific kind of invalid input (InvalidGraphError) can name itself.
  override readonly name: string = 'InvalidInputError';
  readonly code = 'invalid_input';
  constructor(readonly detail: string) {
    super(`invalid input: ${detail}`);
  }
}

/**
 * One problem of a task graph: its message, and the path of the value it concerns
 * (`['tasks', 2, 'verify']`; empty for the graph as a whole), so a file's reader can show its line.
 */
export interface GraphProblem {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/**
 * Thrown when a task graph fails validation; `problems` names every problem found, each with where
 * it is (unknown keys, wrong types, unknown dependencies, a cycle ...). Nothing was written.
 */
export class InvalidGraphError extends InvalidInputError {
  override readonly name = 'InvalidGraphError';
  /** The messages of `graphProblems`, in the same order. */
  readonly problems: readonly string[];
  constructor(readonly graphProblems: readonly GraphProblem[]) {
    const problems = graphProblems.map((p) => p.message);
    super(
      problems.length === 1 ? problems[0]! : `the graph has ${problems.length} problems:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.problems = problems;
  }

  override get details(): Record<string, unknown> {
    return { problems: this.problems };
  }
}

/** Thrown when something tries to change or delete a recorded event. */
export class AppendOnlyError extends BatonError {
  override readonly name = 'AppendOnlyError';
  readonly code = 'append_only';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** Thrown when a shared object is created under a key that is already taken; nothing was written. */
export class ObjectExistsError extends BatonError {
  override readonly name = 'ObjectExistsError';
  readonly code = 'object_exists';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/**
 * Thrown when a tool call reuses an idempotency key (task + step) with another tool or other
 * parameters; nothing was written or sent. A different call needs its own step name (X1).
 */
export class ToolParamsMismatchError extends BatonError {
  override readonly name = 'ToolParamsMismatchError';
  readonly code = 'tool_params_mismatch';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/**
 * Thrown when a tool call's precondition does not hold as it is about to be sent: an object it
 * names moved from the version the call expected, or is not one the caller may view (U11). Nothing
 * was sent and nothing changed. Re-read, decide again, and call with the versions now read (the
 * same step: its key and parameters are unchanged).
 */
export class ToolPreconditionFailedError extends BatonError {
  override readonly name = 'ToolPreconditionFailedError';
  readonly code = 'stale_view';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/**
 * Thrown when a task's spec does not allow a new tool call (U11): a tool its `tools.allow` does not
 * name, or a call past its `tools.maxCalls`. Nothing was written or sent; asking again will not help.
 */
export class ToolNotAllowedError extends BatonError {
  override readonly name = 'ToolNotAllowedError';
  readonly code = 'tool_not_allowed';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** Thrown when a token or a client address makes calls faster than the server allows; try again after `retryAfterMs`. */
export class RateLimitedError extends BatonError {
  // Widened to string so a more specific limit (ToolRateLimitedError) can name itself.
  override readonly name: string = 'RateLimitedError';
  readonly code = 'rate_limited';
  override readonly retryable = true;
  /** `what` is what came too fast: `calls with this token`, `refused tokens from this address` ... */
  constructor(
    readonly retryAfterMs: number,
    what = 'calls with this token',
  ) {
    super(`too many ${what}: try again in ${Math.ceil(retryAfterMs / 1000)} s`);
  }

  override get details(): Record<string, unknown> {
    // Whole milliseconds, as the published Problem schema says (a bucket refills in fractions).
    return { retryAfterMs: Math.ceil(this.retryAfterMs) };
  }
}

/**
 * Thrown when a tool's rate limit (U11: `ratePerMinute` in the worker's tool configuration) has
 * been reached over every task: nothing was sent. The gateway waits and sends again for a while;
 * past that, the caller may call again after `retryAfterMs` (the same step).
 */
export class ToolRateLimitedError extends RateLimitedError {
  override readonly name = 'ToolRateLimitedError';
  constructor(detail: string, retryAfterMs: number) {
    super(retryAfterMs);
    this.message = detail;
  }
}

/**
 * Thrown when the database login's roles do not allow the call: a worker submitting a graph, a
 * reader writing, anyone but the owner touching a table (SPEC S1). Nothing was written.
 */
export class InsufficientPrivilegeError extends BatonError {
  override readonly name = 'InsufficientPrivilegeError';
  readonly code = 'insufficient_privilege';
  constructor(readonly detail: string) {
    super(`not allowed for this database login: ${detail}`);
  }
}

/** How long a caller is asked to wait (Retry-After) before calling again when the store cannot be reached. */
const STORE_RETRY_AFTER_MS = 5_000;

/**
 * Thrown when Temporal does not answer an operator's cancel or rerun (the agent API's task.cancel,
 * graph.cancel, task.rerun): before the store recorded anything, or after, when calling again
 * completes it (each changes nothing already done). The cause, with the address tried, is for the log.
 */
export class TemporalUnavailableError extends BatonError {
  override readonly name = 'TemporalUnavailableError';
  readonly code = 'temporal_unavailable';
  override readonly retryable = true;
  constructor(operation: string, recorded: boolean, cause: unknown) {
    super(
      recorded
        ? `${operation} was recorded, but Temporal did not answer when told to carry it out: call it again to finish (it changes nothing already done)`
        : `${operation}: Temporal does not answer, so nothing was recorded; try again`,
      { cause },
    );
  }
}

/**
 * Thrown when PostgreSQL, baton's store, cannot be reached or stopped answering: the connection was
 * refused or timed out, was cut, or the server is shutting down. A retry can help. `reason` names
 * the failure in words, never a host, a login or a password: callers of the agent API read it.
 * `mayHaveActed` when the call was cut off after it was sent (it may have been performed).
 */
export class StoreUnavailableError extends BatonError {
  override readonly name = 'StoreUnavailableError';
  readonly code = 'store_unavailable';
  override readonly retryable = true;
  /** `cause`: the error pg reported, with the host it tried (for the log, never for a caller). */
  constructor(
    readonly reason: string,
    readonly mayHaveActed: boolean,
    cause?: unknown,
  ) {
    super(
      `PostgreSQL, baton's store, cannot be reached: ${reason}; ${mayHaveActed ? 'the call may or may not have been performed' : 'nothing was done'}; try again in ${STORE_RETRY_AFTER_MS / 1000} s`,
      { cause },
    );
  }

  override get details(): Record<string, unknown> {
    return { retryAfterMs: STORE_RETRY_AFTER_MS };
  }
}

/**
 * Node's codes of a connection that failed, with what they mean and whether a call may have been
 * sent on it: for the store (StoreUnavailableError) and the agent API's client (api_unreachable).
 */
export const NODE_CONNECTION_ERRORS: Record<string, [reason: string, mayHaveActed: boolean]> = {
  ECONNREFUSED: ['nothing is listening there (connection refused)', false],
  ENOENT: ['there is no socket at its path', false],
  ENOTFOUND: ['its host name does not resolve', false],
  EAI_AGAIN: ['its host name does not resolve (for now)', false],
  EHOSTUNREACH: ['no route to its host', false],
  ENETUNREACH: ['no route to its host', false],
  ETIMEDOUT: ['the connection timed out', true],
  ECONNRESET: ['the connection was reset', true],
  EPIPE: ['the connection was closed', true],
};

/** Postgres's SQLSTATEs of a server that cannot serve the connection (classes 08 and 57P, and 53300). */
const UNREACHABLE_SQLSTATES: Record<string, [reason: string, mayHaveActed: boolean]> = {
  '08000': ['connection exception', true],
  '08001': ['the server refused to establish the connection', false],
  '08003': ['the connection does not exist', true],
  '08004': ['the server rejected the connection', false],
  '08006': ['the connection failed', true],
  '57P01': ['the server is shutting down', true],
  '57P02': ['the server restarts after a crash', true],
  '57P03': ['the server is not accepting connections yet', false],
  '53300': ['the server has no free connection', false],
};

/**
 * pg's own messages of a lost or timed-out connection, which carry no code (so only these are read
 * as text): a connection cut, one that took too long to open, a pool that found none in time, a query
 * not answered within its timeout.
 */
const UNREACHABLE_MESSAGES: [RegExp, reason: string, mayHaveActed: boolean][] = [
  [/^Connection terminated due to connection timeout/, 'the connection timed out', false],
  [/^Connection terminated/, 'the connection was terminated', true],
  [/^timeout exceeded when trying to connect/, 'no connection within the timeout', false],
  [/^Query read timeout/, 'no answer within the query timeout', true],
  [/^Client has encountered a connection error and is not queryable/, 'the connection failed', false],
];

/** StoreUnavailableError when `error` says the store cannot be reached; else undefined. */
function storeUnavailable(error: unknown): StoreUnavailableError | undefined {
  const e = error as { code?: unknown; message?: unknown; errors?: unknown } | null;
  if (typeof e !== 'object' || e === null) return undefined;
  const code = typeof e.code === 'string' ? e.code : undefined;
  // Node tries each address of a host name and reports every failure together (AggregateError).
  const codes = [code, ...(Array.isArray(e.errors) ? e.errors.map((x) => (x as { code?: unknown } | null)?.code) : [])];
  const known = codes
    .map((c) => (typeof c === 'string' ? (NODE_CONNECTION_ERRORS[c] ?? UNREACHABLE_SQLSTATES[c]) : undefined))
    .find(Boolean);
  if (known) return new StoreUnavailableError(...known, error);
  const message = typeof e.message === 'string' ? e.message : '';
  const matched = code === undefined ? UNREACHABLE_MESSAGES.find(([pattern]) => pattern.test(message)) : undefined;
  return matched ? new StoreUnavailableError(matched[1], matched[2], error) : undefined;
}

/**
 * Maps a `pg` error with one of baton's SQLSTATEs to its class, and a store that cannot be reached
 * to StoreUnavailableError; anything else is returned as is.
 */
export function fromDatabaseError(error: unknown): unknown {
  const code = (error as { code?: string } | null)?.code;
  const message = (error as Error | null)?.message ?? String(error);
  switch (code) {
    case SQLSTATE.illegalTransition:
      return new IllegalTransitionError(message);
    case SQLSTATE.notFound:
      return new NotFoundError(message);
    case SQLSTATE.invalidInput:
      return new InvalidInputError(message);
    case SQLSTATE.appendOnly:
      return new AppendOnlyError(message);
    case SQLSTATE.objectExists:
      return new ObjectExistsError(message);
    case SQLSTATE.toolParamsMismatch:
      return new ToolParamsMismatchError(message);
    case SQLSTATE.toolPreconditionFailed:
      return new ToolPreconditionFailedError(message);
    case SQLSTATE.toolNotAllowed:
      return new ToolNotAllowedError(message);
    case SQLSTATE.toolRateLimited:
      return new ToolRateLimitedError(message, Number((error as { detail?: string }).detail) || 1_000);
    case SQLSTATE.insufficientPrivilege:
      return new InsufficientPrivilegeError(message);
    default:
      return storeUnavailable(error) ?? error;
  }
}

/** Runs `fn`, rethrowing database errors as baton's error classes. */
export async function mapDatabaseErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw fromDatabaseError(error);
  }
}

/**
 * Thrown when an owner's write (heartbeat, progress, note, submit) no longer matches its claim:
 * the task was reclaimed, finished or cancelled. The caller must stop; the refusal is already
 * recorded as a `stale_write_refused` event.
 */
export class StaleClaimError extends BatonError {
  override readonly name = 'StaleClaimError';
  readonly code = 'stale_claim';
  constructor(
    readonly taskId: string,
    readonly owner: string,
    readonly claimVersion: number,
    readonly action: string,
    readonly current: { status: string; owner: string | null; claimVersion: number },
  ) {
    super(
      `${action} refused for task ${taskId}: ${owner} holds claim version ${claimVersion}, but the task is ` +
        `${current.status} with owner ${current.owner ?? 'none'} at claim version ${current.claimVersion}`,
    );
  }
}
