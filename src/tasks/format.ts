import type { GraphSummary, TaskEvent, TaskRow } from './types.js';
import { TASK_STATUSES } from './states.js';
import { keyOf } from './taskId.js';

const short = (revision: string | null | undefined) => (revision ? revision.slice(0, 10) : '');

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** One line per task: status, owner, claim version, attempts, revision, dependencies. */
export function formatTasks(tasks: TaskRow[]): string {
  return table([
    ['TASK', 'STATUS', 'OWNER', 'CLAIM', 'ATTEMPTS', 'REVISION', 'DEPENDS ON', 'PROGRESS'],
    ...tasks.map((t) => [
      t.key,
      t.status,
      t.owner ?? '-',
      `v${t.claimVersion}`,
      String(t.attempts),
      short(t.verifiedRevision ?? t.artifact?.revision) || '-',
      t.dependsOn.join(',') || '-',
      t.status === 'running' && t.progress?.lastLine ? String(t.progress.lastLine).slice(0, 40) : '',
    ]),
  ]);
}

/** A one-line summary: how many tasks are in each status. */
export function summarise(tasks: TaskRow[]): string {
  const counts = new Map<string, number>();
  for (const t of tasks) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
}

/** One line per graph: state, task count, when and by whom it was submitted (UTC), and its tasks' statuses. */
export function formatGraphs(graphs: GraphSummary[]): string {
  return table([
    ['GRAPH', 'STATE', 'TASKS', 'SUBMITTED', 'BY', 'STATUSES'],
    ...graphs.map((g) => [
      g.id,
      g.state,
      String(g.tasks),
      g.submittedAt.replace(/\.\d+Z$/, 'Z'),
      g.submittedBy,
      TASK_STATUSES.filter((s) => g.counts[s] > 0)
        .map((s) => `${g.counts[s]} ${s}`)
        .join(', '),
    ]),
  ]);
}

/** The ownership timeline, one event per line, readable without knowing the schema. */
export function formatEvents(events: TaskEvent[], options: { showSubject: boolean }): string {
  if (events.length === 0) return '(no events)';
  return table([
    ['TIME (UTC)', ...(options.showSubject ? ['TASK'] : []), 'EVENT', 'ACTOR', 'CLAIM', 'DETAILS'],
    ...events.map((e) => [
      e.at.replace('T', ' ').replace('Z', ''),
      ...(options.showSubject ? [keyOf(e.subjectId) || e.subjectId] : []),
      e.kind,
      e.actor,
      e.fence === null ? '' : `v${e.fence}`,
      [e.reason, describeDetails(e.details)].filter(Boolean).join(' | '),
    ]),
  ]);
}

function describeDetails(details: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(details)) {
    if (value === null || value === undefined) continue;
    if (key === 'revision' || key === 'old_revision' || key === 'new_revision') parts.push(`${key}=${short(String(value))}`);
    else if (key === 'upstream_revisions' && typeof value === 'object') {
      parts.push(
        `pinned ${Object.entries(value)
          .map(([k, v]) => `${k}@${short(String(v))}`)
          .join(', ')}`,
      );
    } else if (key === 'lease_expires_at' || key === 'output_digest') continue;
    else parts.push(`${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  }
  return parts.join(' ');
}
