// Small pieces every view uses: statuses, times, revisions, errors, links.
import type { ComponentChildren } from 'preact';
import { ApiError } from './api.js';

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status}`}>{status}</span>;
}

/** A database time, shown in the browser's zone with seconds, and in UTC on hover. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  const date = new Date(at);
  return (
    <time dateTime={at} title={at}>
      {date.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' })}
    </time>
  );
}

/** How long ago, in words a person scans quickly. */
export function ago(at: string | null | undefined): string {
  if (!at) return '—';
  const seconds = Math.round((Date.now() - new Date(at).getTime()) / 1000);
  if (seconds < 60) return `${Math.max(0, seconds)} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}

export function Revision({ rev }: { rev: string | null | undefined }) {
  if (!rev) return <span class="muted">—</span>;
  return (
    <code class="rev" title={rev}>
      {rev.slice(0, 10)}
    </code>
  );
}

export function ErrorBox({ error, what }: { error: Error; what: string }) {
  const code = error instanceof ApiError ? error.code : undefined;
  return (
    <div class="error" role="alert">
      <strong>{what}:</strong> {error.message}
      {code && code !== 'error' ? <span class="muted"> ({code})</span> : null}
    </div>
  );
}

/**
 * What a view shows until its data comes, or when it cannot be read at all: its title, and the
 * error or "Loading…"; undefined once there is data (an error after that is shown by the view above it).
 */
export function Pending({ title, data, what }: { title: string; data: { value?: unknown; error?: Error }; what: string }) {
  if (data.value !== undefined) return undefined;
  return (
    <main aria-busy={data.error ? undefined : 'true'}>
      <h1>{title}</h1>
      {data.error ? <ErrorBox error={data.error} what={what} /> : <p class="muted">Loading…</p>}
    </main>
  );
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** A table that scrolls sideways on a narrow window instead of squeezing its columns. */
export function Table({ children, label }: { children: ComponentChildren; label: string }) {
  return (
    <div class="table-wrap" role="region" aria-label={label} tabIndex={0}>
      <table>{children}</table>
    </div>
  );
}

export const taskHref = (taskId: string) => `#/task/${encodeURIComponent(taskId)}`;
export const graphHref = (graphId: string) => `#/graph/${encodeURIComponent(graphId)}`;
export const objectHref = (key: string) => `#/objects/${encodeURIComponent(key)}`;
