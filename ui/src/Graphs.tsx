// The graphs: newest first, with progress, filtered by state and age, searched by id and submitter.
import { useEffect, useState } from 'preact/hooks';
import { GRAPH_STATES } from '../../src/tasks/states.js';
import { api } from './api.js';
import { ago, ErrorBox, graphHref, StatusBadge, Table, Time } from './common.js';
import { SAFETY_REREAD_MS, useData } from './data.js';

/** How long typing must pause before the search is asked. */
const SEARCH_PAUSE_MS = 300;

const AGES: [string, number | undefined][] = [
  ['any age', undefined],
  ['last hour', 3_600],
  ['last day', 86_400],
  ['last week', 7 * 86_400],
];

export function Graphs({ liveVersion }: { liveVersion: number }) {
  const [state, setState] = useState('');
  const [age, setAge] = useState(0);
  const [typed, setTyped] = useState('');
  const [search, setSearch] = useState('');
  // Asked once typing pauses, not at every key.
  useEffect(() => {
    const timer = setTimeout(() => setSearch(typed), SEARCH_PAUSE_MS);
    return () => clearTimeout(timer);
  }, [typed]);
  const input = {
    ...(state ? { state } : {}),
    ...(AGES[age]![1] ? { submittedWithinSeconds: AGES[age]![1] } : {}),
    ...(search ? { search } : {}),
  };
  const graphs = useData((signal) => api('graphs.list', input, signal), JSON.stringify(input), liveVersion, SAFETY_REREAD_MS);
  return (
    <main>
      <h1>Graphs</h1>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          State{' '}
          <select value={state} onChange={(e) => setState(e.currentTarget.value)}>
            <option value="">any</option>
            {GRAPH_STATES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Submitted{' '}
          <select value={age} onChange={(e) => setAge(Number(e.currentTarget.value))}>
            {AGES.map(([label], i) => (
              <option value={i}>{label}</option>
            ))}
          </select>
        </label>
        <label>
          Search <input type="search" value={typed} placeholder="graph id or submitter" onInput={(e) => setTyped(e.currentTarget.value)} />
        </label>
      </form>
      {graphs.error ? <ErrorBox error={graphs.error} what="The graphs could not be read" /> : null}
      {graphs.value?.length === 0 ? <p class="muted">No graph matches.</p> : null}
      {graphs.value?.length ? (
        <Table label="Graphs">
          <thead>
            <tr>
              <th scope="col">graph</th>
              <th scope="col">state</th>
              <th scope="col">progress</th>
              <th scope="col">submitted by</th>
              <th scope="col">submitted</th>
            </tr>
          </thead>
          <tbody>
            {graphs.value.map((g) => (
              <tr key={g.id} data-graph={g.id}>
                <td>
                  <a href={graphHref(g.id)}>{g.id}</a>
                </td>
                <td>
                  <StatusBadge status={g.state} />
                </td>
                <td>
                  <Progress counts={g.counts} total={g.tasks} />
                </td>
                <td>{g.submittedBy}</td>
                <td>
                  <Time at={g.submittedAt} /> <span class="muted">({ago(g.submittedAt)})</span>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      ) : null}
    </main>
  );
}

/** Verified of all, as a bar, with the statuses that need a look counted beside it. */
export function Progress({ counts, total }: { counts: Record<string, number>; total: number }) {
  const verified = counts.verified ?? 0;
  const others = Object.entries(counts).filter(([s, n]) => n > 0 && s !== 'verified');
  return (
    <span class="progress">
      <meter min={0} max={Math.max(total, 1)} value={verified} aria-label={`${verified} of ${total} verified`} />
      <span>
        {verified}/{total} verified
        {others.map(([s, n]) => (
          <span class={`count status-${s}`}>
            {' '}
            · {n} {s}
          </span>
        ))}
      </span>
    </span>
  );
}
