// A promise raced against a deadline on the clock, for harnesses that must give up rather than hang.
/** Settles as `promise` does, or with `undefined` once the clock passes `deadline` (ms since the epoch), whichever is first. */
export async function withDeadline<T>(promise: Promise<T>, deadline: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()))));
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
