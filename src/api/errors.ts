import { BatonError } from '../errors.js';

/** A call refused before anything was done; `refusal` names why in a word, as its event records it. */
abstract class RefusedCallError extends BatonError {
  constructor(
    readonly refusal: string,
    readonly detail: string,
  ) {
    super(detail);
  }

  override get details(): Record<string, unknown> {
    return { refusal: this.refusal };
  }
}

/** Thrown when a call's token is missing, unknown, revoked or expired; the refusal is recorded. */
export class UnauthenticatedError extends RefusedCallError {
  override readonly name = 'UnauthenticatedError';
  readonly code = 'unauthenticated';
}

/**
 * Thrown when a valid token may not make the call: it lacks the scope, or the operation needs a
 * run token. The refusal is recorded against the token's identity.
 */
export class ForbiddenError extends RefusedCallError {
  override readonly name = 'ForbiddenError';
  readonly code = 'forbidden';
}

/** Thrown for a route of the API that exists, but not with the request's method. */
export class MethodNotAllowedError extends BatonError {
  override readonly name = 'MethodNotAllowedError';
  readonly code = 'method_not_allowed';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** Thrown when a request body is larger than the server reads; nothing was done. */
export class RequestTooLargeError extends BatonError {
  override readonly name = 'RequestTooLargeError';
  readonly code = 'request_too_large';
  constructor(readonly limitBytes: number) {
    super(`the request body is larger than ${limitBytes} bytes`);
  }
}

/**
 * Thrown by the agent API's client (`baton api`, `baton mcp` ...) when nothing answers where the
 * API should be: the connection was refused, there is no socket, the host name does not resolve.
 * The call never arrived, so it was not performed.
 */
export class AgentApiUnreachableError extends BatonError {
  override readonly name = 'AgentApiUnreachableError';
  readonly code = 'api_unreachable';
  override readonly retryable = true;
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach the baton agent API at ${url}: ${reason}; nothing was done (is \`baton serve\`, or the run, still there?)`);
  }
}
