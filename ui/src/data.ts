// Reading a view's data: when what the view shows changes (its key), and again whenever the live
// feed moves, at most once a second, and (with `everyMs`) every so often. A read in flight is never
// cut short by a newer reason to read: one more read follows it instead, so a busy deployment's
// stream of events cannot keep a view from ever being answered. What is shown stays until the new
// answer comes.
import { useEffect, useRef, useState } from 'preact/hooks';

/** Least time between two reads of one view while events keep coming. */
const REFRESH_MS = 1_000;

/**
 * How often a view reads again without an event: an event committed after a later one (event ids
 * come from a sequence, and a long transaction commits late) can be passed by the live feed's
 * cursor, and a view must not wait for the next event to show it.
 */
export const SAFETY_REREAD_MS = 15_000;

export interface Data<T> {
  value?: T;
  error?: Error;
  loading: boolean;
  /** Read again now (after an action). */
  reload(): void;
}

export function useData<T>(read: (signal: AbortSignal) => Promise<T>, key: string, liveVersion: number, everyMs?: number): Data<T> {
  const [state, setState] = useState<{ value?: T; error?: Error; loading: boolean; key: string }>({ loading: true, key });
  const readNow = useRef(read);
  readNow.current = read;
  /** Asks for a read (at once with `now`, else within the throttle); set by the effect of the current key. */
  const request = useRef<(now: boolean) => void>(() => {});

  useEffect(() => {
    // Everything of one key: cut short only when the key changes or the view goes.
    const stop = new AbortController();
    let inFlight = false;
    let again = false;
    let lastRead = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const go = (now: boolean) => {
      if (stop.signal.aborted) return;
      if (inFlight) {
        again = true;
        return;
      }
      const wait = now ? 0 : lastRead + REFRESH_MS - Date.now();
      if (wait > 0) {
        clearTimeout(timer);
        timer = setTimeout(() => go(true), wait);
        return;
      }
      inFlight = true;
      lastRead = Date.now();
      readNow
        .current(stop.signal)
        .then(
          (value) => !stop.signal.aborted && setState({ value, loading: false, key }),
          (error: Error) => !stop.signal.aborted && setState((s) => ({ ...(s.key === key ? s : {}), error, loading: false, key })),
        )
        .finally(() => {
          inFlight = false;
          if (again) {
            again = false;
            go(false);
          }
        });
    };
    request.current = go;
    go(true);
    return () => {
      stop.abort();
      clearTimeout(timer);
    };
  }, [key]);

  // The live feed moved: read again (not on the first render, which the key's effect reads for).
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else request.current(false);
  }, [liveVersion]);

  useEffect(() => {
    if (!everyMs) return;
    const timer = setInterval(() => request.current(false), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);

  const current: { value?: T; error?: Error; loading: boolean } = state.key === key ? state : { loading: true };
  return { value: current.value, error: current.error, loading: current.loading, reload: () => request.current(true) };
}
