// The page's live feed: the event log followed with `events.list` long polls, so whatever a view
// shows is read again when something it may show has changed. Nothing is lost while the connection
// is down: the next poll asks for everything after the last event seen.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import type { LogEvent } from '../../src/api/operationResults.js';

/** How long one poll waits on the server for the first new event. */
const POLL_WAIT_SECONDS = 20;
/** Wait after a failed poll, growing to the last. */
const RETRY_MS = [500, 1_000, 2_000, 5_000];

export type LiveState = { kind: 'connecting' } | { kind: 'live' } | { kind: 'lost'; reason: string; attempt: number };

export interface Live {
  /** Moves on every batch of new events: views read their data again when it does. */
  version: number;
  /** The newest events seen (at most 200), newest last. */
  recent: LogEvent[];
  state: LiveState;
}

/** Follows the log while `enabled`; `onTokenRefused` when the token stops working (expired, revoked). */
export function useLive(enabled: boolean, onTokenRefused: (error: ApiError) => void): Live {
  const [live, setLive] = useState<Live>({ version: 0, recent: [], state: { kind: 'connecting' } });
  useEffect(() => {
    if (!enabled) return;
    const stop = new AbortController();
    void (async () => {
      let afterId: number | undefined;
      let failures = 0;
      while (!stop.signal.aborted) {
        try {
          const page = await api('events.list', afterId === undefined ? {} : { afterId, waitSeconds: POLL_WAIT_SECONDS }, stop.signal);
          const fresh = afterId !== undefined && page.events.length > 0;
          afterId = page.lastId;
          failures = 0;
          setLive((l) => ({
            version: fresh ? l.version + 1 : l.version,
            recent: fresh ? [...l.recent, ...page.events].slice(-200) : l.recent,
            state: { kind: 'live' },
          }));
        } catch (error) {
          if (stop.signal.aborted) return;
          // A token refused (expired, revoked) or not allowed to follow the log: asking again will not help.
          if (error instanceof ApiError && (error.tokenRefused || error.status === 403)) return onTokenRefused(error);
          const reason = error instanceof Error ? error.message : String(error);
          setLive((l) => ({ ...l, state: { kind: 'lost', reason, attempt: failures + 1 } }));
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]));
          failures += 1;
        }
      }
    })();
    return () => stop.abort();
  }, [enabled]);
  return live;
}
