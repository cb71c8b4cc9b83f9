// Errors a caller handles differently, one class each. Conditions raised inside SQL carry a
// custom SQLSTATE (BTnnn), mapped to these classes in `fromDatabaseError` and nowhere else.

/** SQLSTATEs raised by baton's SQL functions. */
export const SQLSTATE = {
  illegalTransition: 'BT001',
  notFound: 'BT002',
  invalidInput: 'BT003',
  appendOnly: 'BT004',
  objectExists: 'BT020',
  toolParamsMismatch: 'BT040',
} as const;

/** Thrown when a change would move a task or object through a transition the state machine forbids. */
export class IllegalTransitionError extends Error {
  override readonly name = 'IllegalTransitionError';
  constructor(readonly detail: string) {
    super(`illegal transition: ${detail}`);
  }
}

/** Thrown when the named task, graph or object does not exist. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** Thrown when input fails validation at the boundary; nothing was written. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  constructor(readonly detail: string) {
    super(`invalid input: ${detail}`);
  }
}

/** Thrown when something tries to change or delete a recorded event. */
export class AppendOnlyError extends Error {
  override readonly name = 'AppendOnlyError';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** Thrown when a shared object is created under a key that is already taken; nothing was written. */
export class ObjectExistsError extends Error {
  override readonly name = 'ObjectExistsError';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/**
 * Thrown when a tool call reuses an idempotency key (task + step) with another tool or other
 * parameters; nothing was written or sent. A different call needs its own step name (X1).
 */
export class ToolParamsMismatchError extends Error {
  override readonly name = 'ToolParamsMismatchError';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** Maps a `pg` error with one of baton's SQLSTATEs to its class; anything else is returned as is. */
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
    default:
      return error;
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
export class StaleClaimError extends Error {
  override readonly name = 'StaleClaimError';
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
