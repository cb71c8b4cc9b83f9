/** Thrown when a readiness check did not pass within its deadline. */
export class NotReadyError extends Error {
  override readonly name = 'NotReadyError';
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly lastError: unknown,
  ) {
    super(`${what} was not ready after ${timeoutMs} ms: ${lastError instanceof Error ? lastError.message : String(lastError)}`);
  }
}

/**
 * Polls `check` until it resolves, with a short back-off, or fails with the last error seen.
 * `abort` lets the caller stop early, e.g. when the server process has already exited.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T>,
  options: { timeoutMs: number; intervalMs?: number; abort?: () => Error | undefined },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown = new Error('never checked');
  for (;;) {
    const aborted = options.abort?.();
    if (aborted) throw aborted;
    try {
      return await check();
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) throw new NotReadyError(what, options.timeoutMs, lastError);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 250));
  }
}
