import type { Log } from '../src/log.js';

export interface Pair<R> {
  candidate: R;
  baseline: R;
  /** Which side ran first in this pair. */
  first: 'candidate' | 'baseline';
}

/**
 * Runs candidate and baseline interleaved: one discarded warm-up pair, then `pairs` pairs. The
 * order inside a pair alternates (A B, B A, A B, ...) so neither side always runs on a cache or
 * a WAL segment the other just warmed; what drifts over the run hits both sides alike.
 */
export async function interleave<R>(
  what: string,
  pairs: number,
  run: { candidate: (index: number) => Promise<R>; baseline: (index: number) => Promise<R> },
  log: Log,
  describe: (pair: Pair<R>) => string = () => '',
): Promise<Pair<R>[]> {
  const results: Pair<R>[] = [];
  for (let i = -1; i < pairs; i++) {
    const first = i % 2 === 0 ? 'baseline' : 'candidate';
    let candidate: R;
    let baseline: R;
    if (first === 'candidate') {
      candidate = await run.candidate(i);
      baseline = await run.baseline(i);
    } else {
      baseline = await run.baseline(i);
      candidate = await run.candidate(i);
    }
    const pair = { candidate, baseline, first } as Pair<R>;
    log(`  ${what} ${i < 0 ? 'warm-up' : `pair ${i + 1}/${pairs}`}${i < 0 ? ' (discarded)' : ''} ${describe(pair)}`);
    if (i >= 0) results.push(pair);
  }
  return results;
}
