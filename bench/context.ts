import type { Log } from '../src/log.js';
import type { Bundles } from './bundles.js';
import type { BenchStack } from './stack.js';

/** What every Temporal benchmark needs: the stack, the prebuilt bundles and a run-unique prefix. */
export interface BenchContext {
  stack: BenchStack;
  bundles: Bundles;
  /** Short and unique per run: task queues, graph ids and workflow ids start with it. */
  runId: string;
  log: Log;
}

/** Runs `fn(0..count-1)` with at most `concurrency` calls in flight; results in index order. */
export async function runConcurrent<T>(count: number, concurrency: number, fn: (index: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await fn(i);
      }
    }),
  );
  return results;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
