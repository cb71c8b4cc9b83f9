/** A figure over the measured pairs: its median and the range it spanned. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** Interquartile range (25th to 75th percentile). */
  p25: number;
  p75: number;
  n: number;
}

/** The q-quantile (0..1) of `values` by linear interpolation; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

export function spread(values: readonly number[]): Spread {
  const finite = values.filter(Number.isFinite);
  return {
    median: quantile(finite, 0.5),
    min: finite.length ? Math.min(...finite) : NaN,
    max: finite.length ? Math.max(...finite) : NaN,
    p25: quantile(finite, 0.25),
    p75: quantile(finite, 0.75),
    n: finite.length,
  };
}

/** Latency figures of one round, in milliseconds. */
export interface Latencies {
  p50: number;
  p99: number;
  max: number;
  n: number;
}

export function latencies(samplesMs: readonly number[]): Latencies {
  return { p50: quantile(samplesMs, 0.5), p99: quantile(samplesMs, 0.99), max: Math.max(...samplesMs), n: samplesMs.length };
}

/** Milliseconds since an arbitrary origin, with sub-millisecond resolution. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export const round = (value: number, digits = 3): number => (Number.isFinite(value) ? Number(value.toFixed(digits)) : value);
