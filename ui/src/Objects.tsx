// Shared objects: who holds each (and its fencing token), its version, an open offer, whether its
// holder has gone silent, open suggestions; one object's log shows a handoff step by step.
import { api } from './api.js';
import { ago, ErrorBox, objectHref, Pending, Section, Table, Time } from './common.js';
import { SAFETY_REREAD_MS, useData } from './data.js';
import { Timeline } from './Timeline.js';

type ObjectView = Awaited<ReturnType<typeof api<'objects.list'>>>['objects'][number];

export function Objects({ objectKey, liveVersion }: { objectKey?: string; liveVersion: number }) {
  const data = useData(
    (signal) => api('objects.list', objectKey ? { key: objectKey } : {}, signal),
    objectKey ?? '',
    liveVersion,
    SAFETY_REREAD_MS,
  );
  const title = objectKey ? `Object ${objectKey}` : 'Shared objects';
  const pending = Pending({ title, data, what: 'The objects could not be read' });
  if (pending) return pending;
  const { objects, log } = data.value!;
  return (
    <main>
      {objectKey ? (
        <p class="crumbs">
          <a href="#/objects">Shared objects</a> /
        </p>
      ) : null}
      <h1>{title}</h1>
      {data.error ? <ErrorBox error={data.error} what="The objects could not be read again" /> : null}
      {objects.length === 0 ? <p class="muted">No object you may view.</p> : <ObjectTable objects={objects} />}
      {log ? (
        <Section title="Log" id="object-log">
          <Timeline events={log} fenceLabel="token" label="Object log" />
        </Section>
      ) : null}
    </main>
  );
}

function ObjectTable({ objects }: { objects: ObjectView[] }) {
  return (
    <Table label="Shared objects">
      <thead>
        <tr>
          <th scope="col">object</th>
          <th scope="col">holder</th>
          <th scope="col">token</th>
          <th scope="col">version</th>
          <th scope="col">open offer</th>
          <th scope="col">holder last heard</th>
          <th scope="col">open suggestions</th>
        </tr>
      </thead>
      <tbody>
        {objects.map((o) => (
          <tr key={o.key} data-object={o.key}>
            <td>
              <a href={objectHref(o.key)}>{o.key}</a>
            </td>
            <td data-field="holder">
              {o.holder ?? <span class="muted">nobody</span>}
              {o.silent ? (
                <span class="badge warn" title={`silent for more than ${o.silenceTimeoutMs / 1000} s`}>
                  silent
                </span>
              ) : null}
            </td>
            <td data-field="token">{o.token}</td>
            <td data-field="version">{o.version}</td>
            <td data-field="offer">
              {o.offer ? (
                <span>
                  {o.offer.giver} → {o.offer.successor} at version {o.offer.version} (<Time at={o.offer.offeredAt} />)
                </span>
              ) : (
                <span class="muted">none</span>
              )}
            </td>
            <td>{o.heartbeatAt ? ago(o.heartbeatAt) : <span class="muted">—</span>}</td>
            <td>
              {o.suggestions.length ? (
                o.suggestions.map((s) => (
                  <div class="small">
                    #{s.id} by {s.suggestedBy} on version {s.baseVersion}
                    {s.note ? `: ${s.note}` : ''}
                  </div>
                ))
              ) : (
                <span class="muted">none</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </Table>
  );
}
