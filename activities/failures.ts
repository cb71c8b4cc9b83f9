import { ApplicationFailure } from '@temporalio/common';
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
