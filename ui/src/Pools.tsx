// Pools and tokens: who is taking work, what waits to be taken, and which tokens exist (never a secret).
import { api } from './api.js';
import { ago, ErrorBox, Section, Table, taskHref, Time } from './common.js';
import { SAFETY_REREAD_MS, useData } from './data.js';

export function Pools({ liveVersion }: { liveVersion: number }) {
  const pools = useData((signal) => api('pools.list', {}, signal), 'pools', liveVersion, SAFETY_REREAD_MS);
  return (
    <main>
      <h1>Pools</h1>
      {pools.error ? <ErrorBox error={pools.error} what="The pools could not be read" /> : null}
      {pools.value?.length === 0 ? <p class="muted">No task has been offered to a pool yet, and no pool is limited.</p> : null}
      {pools.value?.map((p) => (
        <Section title={`Pool ${p.pool}`} id={`pool-${p.pool}`}>
          <p>
            {p.maxRunning === null ? 'No limit' : `At most ${p.maxRunning} running at once`}: {p.waiting.length} waiting to be taken,{' '}
            {p.running.length} taken and running; taken in the last day by{' '}
            {p.takers.map((t) => `${t.agent} (${t.runs}, last ${ago(t.lastTakenAt)})`).join(', ') || 'nobody'}.
          </p>
          {p.running.length ? (
            <Table label={`Runs of pool ${p.pool}`}>
              <thead>
                <tr>
                  <th scope="col">task</th>
                  <th scope="col">agent</th>
                  <th scope="col">claim version</th>
                  <th scope="col">taken</th>
                  <th scope="col">last beat</th>
                  <th scope="col">submitted</th>
                </tr>
              </thead>
              <tbody>
                {p.running.map((r) => (
                  <tr>
                    <td>
                      <a href={taskHref(r.taskId)}>{r.taskId}</a>
                    </td>
                    <td>{r.agent}</td>
                    <td>{r.claimVersion}</td>
                    <td>
                      <Time at={r.takenAt} />
                    </td>
                    <td>{ago(r.beatAt)}</td>
                    <td>{r.submitted ? 'yes' : 'no'}</td>
                  </tr>
                ))}
              </tbody>
            </Table>
          ) : null}
          {p.waiting.length ? (
            <ul>
              {p.waiting.map((w) => (
                <li>
                  <a href={taskHref(w.taskId)}>{w.taskId}</a> offered by {w.offeredBy} {ago(w.offeredAt)}
                </li>
              ))}
            </ul>
          ) : null}
        </Section>
      ))}
    </main>
  );
}

export function Tokens({ liveVersion }: { liveVersion: number }) {
  const tokens = useData((signal) => api('tokens.list', {}, signal), 'tokens', liveVersion, SAFETY_REREAD_MS);
  return (
    <main>
      <h1>Tokens</h1>
      {tokens.error ? <ErrorBox error={tokens.error} what="The tokens could not be read" /> : null}
      {tokens.value ? (
        <>
          <p>
            {tokens.value.tokens.length} tokens made with <code>baton token create</code>; {tokens.value.liveRunTokens} run tokens of runs
            going on. Secrets are never stored, so never shown.
          </p>
          <Table label="Tokens">
            <thead>
              <tr>
                <th scope="col">id</th>
                <th scope="col">identity</th>
                <th scope="col">scopes</th>
                <th scope="col">state</th>
                <th scope="col">last used</th>
                <th scope="col">notes of</th>
                <th scope="col">pools</th>
                <th scope="col">created</th>
              </tr>
            </thead>
            <tbody>
              {tokens.value.tokens.map((k) => (
                <tr data-token={k.id}>
                  <td>
                    <code>{k.id}</code>
                  </td>
                  <td>{k.identity}</td>
                  <td>{k.scopes.join(', ')}</td>
                  <td>
                    {k.revokedAt ? (
                      <span class="badge status-failed">revoked by {k.revokedBy}</span>
                    ) : k.expiresAt && new Date(k.expiresAt) < new Date() ? (
                      <span class="badge status-cancelled">expired</span>
                    ) : (
                      <span>
                        active
                        {k.expiresAt ? (
                          <span class="muted">
                            , expires <Time at={k.expiresAt} />
                          </span>
                        ) : null}
                      </span>
                    )}
                  </td>
                  <td>{k.lastUsedAt ? ago(k.lastUsedAt) : 'never'}</td>
                  <td class="small">
                    {k.noteGrants
                      ? [...k.noteGrants.graphs.map((g) => `graph ${g}`), ...k.noteGrants.tasks.map((t) => `task ${t}`)].join(', ')
                      : 'every task'}
                  </td>
                  <td class="small">{k.pools ? k.pools.join(', ') : 'any'}</td>
                  <td>
                    <Time at={k.createdAt} /> by {k.createdBy}
                  </td>
                </tr>
              ))}
            </tbody>
          </Table>
        </>
      ) : null}
    </main>
  );
}
