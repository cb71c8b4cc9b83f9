import { RateLimitedError } from '../errors.js';

/** Calls allowed per key: on average per second, and at once. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

/** Keys that have not called for this long (and so are full again) are forgotten once there are many. */
const BUCKETS_KEPT_MAX = 10_000;

/**
 * Token buckets per key (a token's hash, a client address); a bucket idle long enough to be full
 * is forgotten. `what` names what is counted, for the refusal: `calls with this token`.
 */
export function rateLimiter(limit: RateLimit, what: string) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const bucketOf = (key: string) => {
    const now = Date.now();
    if (buckets.size > BUCKETS_KEPT_MAX) {
      for (const [k, b] of buckets) if (b.tokens + ((now - b.at) / 1000) * limit.perSecond >= limit.burst) buckets.delete(k);
    }
    const bucket = buckets.get(key) ?? { tokens: limit.burst, at: now };
    bucket.tokens = Math.min(limit.burst, bucket.tokens + ((now - bucket.at) / 1000) * limit.perSecond);
    bucket.at = now;
    buckets.set(key, bucket);
    return bucket;
  };
  return {
    /** Takes one call from `key`'s bucket, or throws RateLimitedError with when one will be there. */
    take(key: string): void {
      const bucket = bucketOf(key);
      if (bucket.tokens < 1) throw new RateLimitedError(((1 - bucket.tokens) / limit.perSecond) * 1000, what);
      bucket.tokens -= 1;
    },
    /** Gives one call back to `key`'s bucket: what it was taken for did not happen. */
    giveBack(key: string): void {
      const bucket = bucketOf(key);
      bucket.tokens = Math.min(limit.burst, bucket.tokens + 1);
    },
  };
}
