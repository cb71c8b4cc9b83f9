// A round of work repeated beside a worker until it stops: the watch on run attempts handed to
// frozen workers (src/temporal/silentAttempts.ts) and the sweep of silent object holders
// (src/objects/holderSweep.ts).
import type { Log } from './log.js';

export interface Repeating {
  /** Ends the loop after the round in flight. */
  stop(): Promise<void>;
}

/**
 * Runs `round` now and then every `intervalMs` after each round ends, until stopped. A round that
 * throws is logged as `<name>: <message>`, once while the same problem lasts (a database or server
 * that stays away fails every round alike), and the next round runs as usual.
 */
export function everyInterval(name: string, intervalMs: number, round: () => Promise<void>, log: Log): Repeating {
  let stopped = false;
  let wake: (() => void) | undefined;
  let lastProblem: string | undefined;
  const loop = (async () => {
    while (!stopped) {
      try {
        await round();
        lastProblem = undefined;
      } catch (error) {
        const problem = `${name}: ${error instanceof Error ? error.message : String(error)}`;
        if (problem !== lastProblem) log(problem);
        lastProblem = problem;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, intervalMs).unref();
      });
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}

/** Runs `running` with each of `loops` started beside it, and stops them all when it ends. */
export async function withRepeating<T>(loops: Array<() => Repeating>, running: () => Promise<T>): Promise<T> {
  const started = loops.map((start) => start());
  try {
    return await running();
  } finally {
    await Promise.all(started.map((loop) => loop.stop()));
  }
}
