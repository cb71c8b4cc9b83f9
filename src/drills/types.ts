import type { Log } from '../log.js';

/**
 * Where a drill reports as it runs: `log` for lines that stay, `progress` for its trial count,
 * which `baton drill` redraws in place on a terminal. (Default: both silent; progress: `log`)
 */
export interface DrillOutput {
  log?: Log;
  progress?: Log;
}

/** One drill's outcome: pass/fail plus the figures `baton drill` prints. */
export interface DrillResult {
  /** D1-D5 (SPEC), R1 and R2 (restarts of Postgres and of the Temporal server, SPEC T11). */
  drill: 'D1' | 'D2' | 'D3' | 'D4' | 'D5' | 'R1' | 'R2';
  title: string;
  passed: boolean;
  figures: Record<string, number | string>;
  /** What went wrong, one line per violation (empty when passed). */
  violations: string[];
}

/**
 * How long a trial waits for its set-up (a claim, a run mid-way, a call at the tool) before it
 * silences or restarts anything. Only a stuck set-up takes this long; it is not the fault under
 * test, so the trial's own deadline starts at the fault, and a busy machine cannot fail a drill here.
 */
export const DRILL_SETUP_DEADLINE_MS = 600_000;

// Defaults of `baton drill`'s options, here with the drills' shared types so its `--help` loads no drill.
/** Heartbeat timeout the drill runs with unless told otherwise. */
export const DRILL_HEARTBEAT_TIMEOUT_MS_DEFAULT = 2_000;
/** Ambiguous calls D5 makes unless told otherwise. */
export const D5_AMBIGUOUS_CALLS_DEFAULT = 500;
/** Worker processes `baton drill` kills in D5 unless told otherwise. */
export const D5_KILL_TRIALS_DEFAULT = 2;
/** Restarts per row (R1, R2) unless told otherwise. */
export const RESTART_TRIALS_DEFAULT = 2;

/** How many violations a result keeps verbatim; the figures still count all of them. */
const MAX_VIOLATIONS_LISTED = 10;

export function drillResult(
  drill: DrillResult['drill'],
  title: string,
  figures: DrillResult['figures'],
  violations: string[],
): DrillResult {
  return { drill, title, passed: violations.length === 0, figures, violations: violations.slice(0, MAX_VIOLATIONS_LISTED) };
}

/** The `p`th percentile (nearest rank) of `values`, or `n/a` when there are none. */
export function percentile(values: readonly number[], p: number): number | 'n/a' {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 'n/a';
}
