// Errors a caller handles differently, one class each. Conditions raised inside SQL carry a
// custom SQLSTATE (BTnnn), mapped to these classes in `fromDatabaseError` and nowhere else.

/** SQLSTATEs raised by baton's SQL functions. */
export const SQLSTATE = {
  illegalTransition: 'BT001',
  notFound: 'BT002',
  invalidInput: 'BT003',
  appendOnly: 'BT004',
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
