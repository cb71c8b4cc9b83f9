// The first check of a bearer token, before its body is read and before any input is refused
// (issue 19). A token this process has seen accepted passes at once; any other is asked of the
// store, within a budget per client address of tokens refused. Made-up tokens thus reach the
// database at a bounded rate, however slowly it answers, and their refusals are recorded as one
// summary event per address and period instead of one event each.
import type { Log } from '../log.js';
import { ForbiddenError, UnauthenticatedError } from './errors.js';
import { rateLimiter, type RateLimit } from './rateLimiter.js';

/**
 * Refused tokens (made up, revoked, expired, a command run's outside its run) one client address
 * may present, on average and at once; past that, its calls with tokens not known here are
 * refused (429) before the store.
 */
const REFUSED_TOKEN_LIMIT_DEFAULT: RateLimit = { perSecond: 1, burst: 30 };
/** Refused tokens all client addresses together may present: an attacker with many addresses is bounded too. */
const REFUSED_TOKEN_LIMIT_ALL_DEFAULT: RateLimit = { perSecond: 10, burst: 300 };
/** Addresses whose refusals are counted apart between two summaries; the rest share one summary. */
const COUNTED_ADDRESSES_MAX = 1_000;
/** The summary that counts the refusals of addresses past COUNTED_ADDRESSES_MAX. */
const OTHER_ADDRESSES = 'other addresses';
/** How long refusals of made-up tokens are counted before one event per address records them. */
const REFUSAL_SUMMARY_MS_DEFAULT = 60_000;
/** Tokens remembered as accepted, per process; past that the longest unused is asked about again. */
const KNOWN_TOKENS_MAX = 10_000;

interface TokenGateOptions {
  /** Per client address (an IPv6 address by its /64). (Default: 1 per second, bursts of 30) */
  refusedTokenLimit?: RateLimit;
  /** For all addresses together. (Default: 10 per second, bursts of 300) */
  refusedTokenLimitAll?: RateLimit;
  /** (Default: 60 s) */
  summaryMs?: number;
  /** Records one summary: `count` calls from `address` refused, `throttled` of them before the store. */
  summarise(address: string, count: number, throttled: number, windowMs: number): Promise<void>;
  /** Where a summary that could not be recorded is reported. */
  log: Log;
}

interface TokenGate {
  /**
   * Lets the token through if it is known here (unless `recheck`), else asks the store with `ask`,
   * which throws UnauthenticatedError for a refused token (ForbiddenError for one refused here,
   * such as a command run's token outside its run). Throws RateLimitedError when `address`
   * has presented too many refused tokens.
   */
  check(address: string, secretSha256: string, ask: () => Promise<void>, recheck?: boolean): Promise<void>;
  /** Forgets that the token was accepted (the store refused it since): it is checked again first. */
  forget(secretSha256: string): void;
  /** Records the summaries counted so far. */
  flush(): Promise<void>;
}

export function createTokenGate(options: TokenGateOptions): TokenGate {
  const budget = rateLimiter(options.refusedTokenLimit ?? REFUSED_TOKEN_LIMIT_DEFAULT, 'refused tokens from this address');
  const budgetAll = rateLimiter(options.refusedTokenLimitAll ?? REFUSED_TOKEN_LIMIT_ALL_DEFAULT, 'refused tokens from all addresses');
  const summaryMs = options.summaryMs ?? REFUSAL_SUMMARY_MS_DEFAULT;
  // A Set keeps insertion order: re-adding on use makes the first the longest unused.
  const known = new Set<string>();
  const counted = new Map<string, { count: number; throttled: number; since: number }>();
  let timer: NodeJS.Timeout | undefined;

  const remember = (hash: string) => {
    known.delete(hash);
    known.add(hash);
    if (known.size > KNOWN_TOKENS_MAX) known.delete(known.values().next().value!);
  };

  const count = (address: string, throttled: boolean) => {
    // However many addresses a flood comes from, what is kept between two summaries is bounded.
    const key = counted.has(address) || counted.size < COUNTED_ADDRESSES_MAX ? address : OTHER_ADDRESSES;
    const summary = counted.get(key) ?? { count: 0, throttled: 0, since: Date.now() };
    summary.count += 1;
    if (throttled) summary.throttled += 1;
    counted.set(key, summary);
    // Runs only while something is counted, and never keeps the process alive.
    timer ??= setTimeout(() => void flush(), summaryMs).unref();
  };

  async function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    const batch = [...counted];
    counted.clear();
    await Promise.all(
      batch.map(([address, s]) =>
        options.summarise(address, s.count, s.throttled, Date.now() - s.since).catch((error: unknown) => {
          options.log(
            `baton agent API: ${s.count} refused calls from ${address} could not be recorded: ${error instanceof Error ? error.message : String(error)}`,
          );
        }),
      ),
    );
  }

  async function check(address: string, hash: string, ask: () => Promise<void>, recheck = false): Promise<void> {
    const isKnown = known.has(hash);
    if (isKnown && !recheck) {
      remember(hash);
      return;
    }
    const key = refusalBudgetKey(address);
    if (!isKnown) {
      try {
        budget.take(key);
        try {
          budgetAll.take('all');
        } catch (error) {
          budget.giveBack(key);
          throw error;
        }
      } catch (error) {
        count(key, true);
        throw error;
      }
    }
    try {
      await ask();
    } catch (error) {
      // A refused token keeps the budget it took (a command run's token outside its run too: each
      // such refusal is recorded); a failure to ask is nobody's refusal.
      if (error instanceof UnauthenticatedError || error instanceof ForbiddenError) {
        known.delete(hash);
        if (error.refusal === 'unauthenticated') count(key, false);
      } else if (!isKnown) {
        budget.giveBack(key);
        budgetAll.giveBack('all');
      }
      throw error;
    }
    remember(hash);
    if (!isKnown) {
      budget.giveBack(key);
      budgetAll.giveBack('all');
    }
  }

  return { check, forget: (hash) => void known.delete(hash), flush };
}

/**
 * The budget a client address draws refused tokens from: an IPv4 address itself (also written as
 * IPv6, `::ffff:a.b.c.d`), an IPv6 address by its /64, the block one host is usually given.
 */
export function refusalBudgetKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.split('%')[0]!.toLowerCase().split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = Array.from({ length: Math.max(0, 8 - headGroups.length - tailGroups.length) }, () => '0');
  const groups = tail === undefined ? headGroups : [...headGroups, ...zeros, ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
