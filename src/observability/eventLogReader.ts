// Reads the event log from where it left off, every event exactly once, though transactions commit
// out of id order: an event numbered below one already read may still be coming. Each read notes
// the highest id it saw and the transactions not yet begun at its snapshot (the snapshot's xmax);
// once a later snapshot shows every one of those over (its xmin has passed that xmax), nothing at
// or below that id can still appear (event_append takes its transaction id before the event takes
// its number), and reads start above it. Until then, ids above the settled mark are read again and
// those already seen are skipped.
import type { Queryable } from '../db/queryable.js';

/** One event as the metrics read it (baton.metrics_events). */
export interface MetricsEvent {
  id: number;
  subject_kind: string;
  kind: string;
  labels: Record<string, string>;
  amount: number;
  seconds: number | null;
}

/** How many events one statement reads; a read continues page by page up to its budget. */
const PAGE_SIZE = 5_000;

interface Snapshot {
  xmin: bigint;
  xmax: bigint;
}

/** `xmin:xmax:xip,...`, as pg_current_snapshot() prints it. */
function parseSnapshot(text: string): Snapshot {
  const [xmin, xmax] = text.split(':');
  return { xmin: BigInt(xmin!), xmax: BigInt(xmax!) };
}

interface EventLogReader {
  /**
   * Hands each event not handed before to `onEvent`, oldest first, at most `budget` of them (the
   * rest come with the next read). Returns how many it handed over.
   */
  read(onEvent: (event: MetricsEvent) => void, budget?: number): Promise<number>;
}

export function createEventLogReader(db: Queryable): EventLogReader {
  /** Every event at or below it has been handed over. */
  let settled = 0;
  /** Ids above `settled` handed over already. */
  const seen = new Set<number>();
  /** Reads whose highest id settles once a snapshot's xmin reaches their xmax. */
  let pending: { upTo: number; xmax: bigint }[] = [];

  async function page(after: number, limit: number) {
    const { rows } = await db.query<{ snapshot: string; events: MetricsEvent[] }>(
      // One statement, one snapshot: the events and the snapshot they were read in.
      `SELECT pg_current_snapshot()::text AS snapshot,
              coalesce((SELECT json_agg(m ORDER BY m.id) FROM baton.metrics_events($1, $2) m), '[]'::json) AS events`,
      [after, limit],
    );
    const { snapshot, events } = rows[0]!;
    return { snapshot: parseSnapshot(snapshot), events };
  }

  return {
    async read(onEvent, budget = 200_000) {
      let handed = 0;
      let after = settled;
      let first: { snapshot: Snapshot; coveredTo: number } | undefined;
      let last: Snapshot | undefined;
      let highest = settled;
      for (;;) {
        const { snapshot, events } = await page(after, PAGE_SIZE);
        const full = events.length === PAGE_SIZE;
        last = snapshot;
        // The first page's snapshot saw everything from `settled` up to where it stopped.
        first ??= { snapshot, coveredTo: full ? events.at(-1)!.id : Number.MAX_SAFE_INTEGER };
        for (const event of events) {
          if (seen.has(event.id)) continue;
          seen.add(event.id);
          onEvent(event);
          handed += 1;
        }
        if (events.length) highest = Math.max(highest, events.at(-1)!.id);
        if (!full || handed >= budget) break;
        after = events.at(-1)!.id;
      }
      // The last page's snapshot is the latest: its xmax bounds the transactions of every id read.
      pending.push({ upTo: highest, xmax: last!.xmax });
      // Earlier reads every transaction of which had ended before this read's first snapshot.
      const done = pending.filter((p) => p.xmax <= first.snapshot.xmin && p.upTo <= first.coveredTo);
      pending = pending.filter((p) => !done.includes(p));
      const mark = Math.max(settled, ...done.map((p) => p.upTo));
      if (mark > settled) {
        settled = mark;
        for (const id of seen) if (id <= settled) seen.delete(id);
      }
      return handed;
    },
  };
}
