// Bindings of src/db/functions/retention.sql (U11): moving finished graphs' records to the archive,
// and reading an archived graph's notes and tool-call ledger.
import type { Queryable } from '../queryable.js';
import { callStore } from '../storeCall.js';

/** What retention moved (or, on a dry run, would move) of one graph. */
export interface ArchivedGraph {
  graphId: string;
  /** Its last event before the move. */
  finishedAt: string;
  events: number;
  notes: number;
  toolCalls: number;
}

/**
 * Moves the record (events, notes, tool-call ledger) of every graph whose tasks are all finished
 * and whose last event is more than `olderThanMs` old to the archive, at most `limit` graphs, as
 * `actor`; with `dryRun`, moves nothing and says what it would move.
 */
export async function retentionApply(
  db: Queryable,
  policy: { olderThanMs: number; actor: string; dryRun: boolean; limit: number },
): Promise<ArchivedGraph[]> {
  const rows = await callStore<{ graph_id: string; finished_at: Date; events: number; notes: number; tool_calls: number }>(
    db,
    'retention_apply',
    [`${policy.olderThanMs} milliseconds`, policy.actor, policy.dryRun, policy.limit],
  );
  return rows.map((r) => ({
    graphId: r.graph_id,
    finishedAt: r.finished_at.toISOString(),
    events: r.events,
    notes: r.notes,
    toolCalls: r.tool_calls,
  }));
}

/** An archived graph's row: who archived it and when, its notes and tool-call ledger; undefined for a live graph. */
export async function archiveRead(db: Queryable, graphId: string) {
  const [row] = await callStore<{
    graph_id: string;
    archived_at: Date;
    archived_by: string;
    finished_at: Date;
    events: number;
    notes: unknown[];
    tool_calls: unknown[];
  }>(db, 'archive_read', [graphId]);
  return (
    row && {
      graphId: row.graph_id,
      archivedAt: row.archived_at.toISOString(),
      archivedBy: row.archived_by,
      finishedAt: row.finished_at.toISOString(),
      events: row.events,
      notes: row.notes,
      toolCalls: row.tool_calls,
    }
  );
}
