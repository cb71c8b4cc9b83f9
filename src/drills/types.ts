/** One drill's outcome: pass/fail plus the figures `baton drill` prints. */
export interface DrillResult {
  drill: 'D1' | 'D2' | 'D3' | 'D4' | 'D5';
  title: string;
  passed: boolean;
  figures: Record<string, number | string>;
  /** What went wrong, one line per violation (empty when passed). */
  violations: string[];
}

/** How many violations a result keeps verbatim; the figures still count all of them. */
export const MAX_VIOLATIONS_LISTED = 10;

export function drillResult(
  drill: DrillResult['drill'],
  title: string,
  figures: DrillResult['figures'],
  violations: string[],
): DrillResult {
  return { drill, title, passed: violations.length === 0, figures, violations: violations.slice(0, MAX_VIOLATIONS_LISTED) };
}
