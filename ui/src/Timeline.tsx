// An ownership timeline: every event with its database time, actor, claim version (or object
// token) and reason. Moves of ownership that were forced stand out: a reclaim after silence, a late
// write refused, a rejection, a cancellation.
import type { LogEvent } from '../../src/api/operationResults.js';
import { Table, Time } from './common.js';

/** Kinds an on-call operator must not miss, and how each is marked. */
const MARKED: Record<string, string> = {
  reclaimed_after_silence: 'reclaim',
  taken_over: 'reclaim',
  stale_write_refused: 'refused',
  api_refused: 'refused',
  refused: 'refused',
  rejected: 'rejected',
  approval_refused: 'rejected',
  approval_timed_out: 'rejected',
  failed: 'rejected',
  attempt_failed: 'rejected',
  marked_stale: 'rejected',
  cancelled: 'cancelled',
};

export function Timeline({ events, fenceLabel, label }: { events: LogEvent[]; fenceLabel: string; label: string }) {
  if (events.length === 0) return <p class="muted">Nothing recorded yet.</p>;
  return (
    <Table label={label}>
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">at (database)</th>
          <th scope="col">event</th>
          <th scope="col">actor</th>
          <th scope="col">{fenceLabel}</th>
          <th scope="col">reason</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.id} class={MARKED[e.kind] ? `event-${MARKED[e.kind]}` : undefined} data-kind={e.kind}>
            <td>{e.seq}</td>
            <td>
              <Time at={e.at} />
            </td>
            <td>
              <span class="event-kind">{e.kind}</span>
              {MARKED[e.kind] ? <span class="event-flag">{MARKED[e.kind]}</span> : null}
            </td>
            <td>{e.actor}</td>
            <td>{e.fence ?? '—'}</td>
            <td class="reason">{e.reason ?? describeDetails(e.details)}</td>
          </tr>
        ))}
      </tbody>
    </Table>
  );
}

/** What an event without a reason says in its details, briefly. */
function describeDetails(details: Record<string, unknown>): string {
  const parts = Object.entries(details)
    .filter(([, v]) => v !== null && typeof v !== 'object')
    .slice(0, 4)
    .map(([k, v]) => `${k} ${String(v)}`);
  return parts.join(', ');
}
