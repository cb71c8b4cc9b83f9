import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { RETRY_AT_ONCE_MS } from '../src/temporal/retryAtOnce.js';
import { BatonError } from '../src/errors.js';

/**
 * A BatonError as Temporal reports it: the failure's type is the error's class name, it is
 * non-retryable unless the error says a retry can help, and its details travel with it. Anything
 * else (a lost connection, a bug) is returned as it is, so Temporal retries it.
 */
export function toActivityFailure(error: unknown): unknown {
  if (!(error instanceof BatonError)) return error;
  return ApplicationFailure.create({
    message: error.message,
    type: error.name,
    nonRetryable: !error.retryable,
    details: error.details === undefined ? undefined : [error.details],
    cause: error,
  });
}

type ActivityFunctions = Record<string, (...args: any[]) => Promise<unknown>>;

/** The activities with every thrown error passed through `toActivityFailure`: the one boundary. */
export function withActivityFailures<T extends ActivityFunctions>(activities: T): T {
  const wrapped: ActivityFunctions = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } catch (error) {
        throw toActivityFailure(error);
      }
    };
  }
  return wrapped as T;
}

/**
 * Whether `signal` (an activity's cancellation signal) was aborted because this worker is shutting
 * down and its grace ran out, rather than because the workflow cancelled the activity or Temporal
 * timed it out.
 */
export function shuttingDown(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof CancelledFailure && signal.reason.message === 'WORKER_SHUTDOWN';
}

/**
 * What an activity cut off by its worker's shutdown throws once it has handed its work back:
 * retryable, and retried at once (not after the retry interval, nor a heartbeat timeout).
 */
export function handedBack(message: string): ApplicationFailure {
  return ApplicationFailure.create({ message, type: 'HandedBack', nextRetryDelay: RETRY_AT_ONCE_MS });
}
