// The agent API's default limits, apart from the server, so that `baton serve --help` can state
// them without loading it.
import type { RateLimit } from './rateLimiter.js';

/** Calls per second one token may make on average, and in a burst. */
export const RATE_LIMIT_DEFAULT: RateLimit = { perSecond: 50, burst: 200 };

/** Largest request body read: a shared object's largest content, JSON-escaped, with room to spare. */
export const MAX_BODY_BYTES_DEFAULT = 4 * 1024 * 1024;
