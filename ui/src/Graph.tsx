// One graph: its DAG coloured by status, and every task in a table (filtered, searched, in pages).
import { useState } from 'preact/hooks';
import { TASK_STATUSES } from '../../src/tasks/states.js';
import { Action } from './Action.js';
import { api, temporalLink, type PageConfig } from './api.js';
import { ErrorBox, Pending, StatusBadge, Table, taskHref, Time } from './common.js';
import { Dag } from './Dag.js';
import { SAFETY_REREAD_MS, useData } from './data.js';
import { Progress } from './Graphs.js';
import { Proposals } from './Proposals.js';

const PAGE_ROWS = 200;

export function Graph({
  graphId,
  liveVersion,
  admin,
  config,
}: {
  graphId: string;
  liveVersion: number;
  admin: boolean;
  config: PageConfig;
}) {
  const graph = useData((signal) => api('graph.show', { graphId }, signal), graphId, liveVersion, SAFETY_REREAD_MS);
  const [status, setStatus] = useState('');
  const [search, setSearch] = useState('');
  const [rows, setRows] = useState(PAGE_ROWS);
  const pending = Pending({ title: `Graph ${graphId}`, data: graph, what: 'The graph could not be read' });
  if (pending) return pending;
  const g = graph.value!;
  const counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, g.tasks.filter((t) => t.status === s).length]));
  const shown = g.tasks.filter(
    (t) => (!status || t.status === status) && (!search || t.key.includes(search) || (t.owner ?? '').includes(search)),
  );
  const link = temporalLink(config, { query: g.workflowsQuery });
  return (
    <main>
      <h1>Graph {g.id}</h1>
      {graph.error ? <ErrorBox error={graph.error} what="The graph could not be read again" /> : null}
      <dl class="facts">
        <dt>progress</dt>
        <dd>
          <Progress counts={counts} total={g.tasks.length} />
        </dd>
        <dt>submitted</dt>
        <dd>
          by {g.submittedBy}, <Time at={g.submittedAt} />
        </dd>
        <dt>repository</dt>
        <dd>
          {g.repo ?? <span class="muted">none</span>} at <code>{g.base}</code>
        </dd>
        <dt>workflows</dt>
        <dd>
          {link ? (
            <a href={link} target="_blank" rel="noreferrer noopener">
              its tasks' workflows in Temporal
            </a>
          ) : (
            <code>{g.workflowsQuery}</code>
          )}
        </dd>
      </dl>
      {admin ? (
        <Action
          label="Cancel graph"
          explain={`Cancels every unfinished task of ${g.id}; their owners' later writes are refused and their runs stopped.`}
          perform={async (reason) => {
            const outcome = await api('graph.cancel', { graphId: g.id, reason });
            graph.reload();
            return `cancelled ${outcome.cancelled.length}, left ${outcome.left.length} finished`;
          }}
        />
      ) : null}
      <Proposals graphId={g.id} liveVersion={liveVersion} admin={admin} onDecided={graph.reload} />
      <Dag graphId={g.id} tasks={g.tasks} />
      <h2>Tasks</h2>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status{' '}
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">any</option>
            {TASK_STATUSES.map((s) => (
              <option value={s}>
                {s} ({counts[s]})
              </option>
            ))}
          </select>
        </label>
        <label>
          Search <input type="search" value={search} placeholder="task key or owner" onInput={(e) => setSearch(e.currentTarget.value)} />
        </label>
      </form>
      <Table label="Tasks">
        <thead>
          <tr>
            <th scope="col">task</th>
            <th scope="col">status</th>
            <th scope="col">owner</th>
            <th scope="col">claim version</th>
            <th scope="col">attempts</th>
            <th scope="col">depends on</th>
          </tr>
        </thead>
        <tbody>
          {shown.slice(0, rows).map((t) => (
            <tr key={t.id} data-task={t.key} data-status={t.status}>
              <td>
                <a href={taskHref(t.id)}>{t.key}</a>
                {t.description ? <div class="muted small">{t.description}</div> : null}
              </td>
              <td>
                <StatusBadge status={t.status} />
                {t.leaseExpired && t.status === 'running' ? (
                  <span class="badge warn" title="its lease has run out: the owner is silent">
                    silent
                  </span>
                ) : null}
              </td>
              <td>
                {t.owner ?? <span class="muted">—</span>}
                {t.pool ? <span class="muted small"> (pool {t.pool})</span> : null}
              </td>
              <td>{t.claimVersion}</td>
              <td>{t.attempts}</td>
              <td class="small">{t.dependsOn.join(', ') || <span class="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </Table>
      {shown.length > rows ? (
        <button type="button" onClick={() => setRows((r) => r + PAGE_ROWS)}>
          Show {Math.min(PAGE_ROWS, shown.length - rows)} more of {shown.length - rows}
        </button>
      ) : null}
    </main>
  );
}
