// Reading a view's data: again whenever the live feed moves (at most once a second, keeping what
// is shown until the new answer comes), and again when what the view shows changes.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

/** Least time between two reads of one view while events keep coming. */
const REFRESH_MS = 1_000;

export interface Data<T> {
  value?: T;
  error?: ApiError | Error;
  loading: boolean;
  /** Read again now (after an action). */
  reload(): void;
}

/**
 * Reads with `read` now, when `key` changes, when `liveVersion` moves, and with `everyMs` every so
 * often as well (for what changes without an event: a run's heartbeats and their log lines).
 */
export function useData<T>(read: (signal: AbortSignal) => Promise<T>, key: string, liveVersion: number, everyMs?: number): Data<T> {
  const [state, setState] = useState<{ value?: T; error?: Error; loading: boolean; key: string }>({ loading: true, key });
  const [nonce, setNonce] = useState(0);
  const lastRead = useRef(0);
  const keyChanged = state.key !== key;
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!everyMs) return;
    const timer = setInterval(() => setTick((t) => t + 1), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  useEffect(() => {
    const stop = new AbortController();
    const wait = keyChanged || nonce ? 0 : Math.max(0, lastRead.current + REFRESH_MS - Date.now());
    const timer = setTimeout(() => {
      lastRead.current = Date.now();
      read(stop.signal).then(
        (value) => !stop.signal.aborted && setState({ value, loading: false, key }),
        (error: Error) => !stop.signal.aborted && setState((s) => ({ ...(s.key === key ? s : {}), error, loading: false, key })),
      );
    }, wait);
    return () => {
      clearTimeout(timer);
      stop.abort();
    };
  }, [key, liveVersion, nonce, tick]);
  const current: { value?: T; error?: Error; loading: boolean } = keyChanged ? { loading: true } : state;
  return {
    value: current.value,
    error: current.error,
    loading: current.loading,
    reload: () => setNonce((n) => n + 1),
  };
}
