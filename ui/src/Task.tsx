// One task: what it is, what it produced and on what, how it was verified, what its agent last
// printed, every tool call it made, and who owned it when, and why that moved.
import { TERMINAL_STATUSES } from '../../src/tasks/states.js';
import { Action } from './Action.js';
import { api, temporalLink, type PageConfig } from './api.js';
import { ErrorBox, graphHref, Pending, Revision, Section, StatusBadge, Table, taskHref, Time } from './common.js';
import { useData } from './data.js';
import { Timeline } from './Timeline.js';

const HEARTBEAT_REFRESH_MS = 3_000;
const RERUNNABLE = new Set(['verified', 'stale', 'failed']);

export function Task({
  taskId,
  liveVersion,
  admin,
  approver,
  config,
}: {
  taskId: string;
  liveVersion: number;
  admin: boolean;
  approver: boolean;
  config: PageConfig;
}) {
  // Read every few seconds too: a run's heartbeats bring its agent's last lines without an event.
  const task = useData((signal) => api('task.show', { taskId }, signal), taskId, liveVersion, HEARTBEAT_REFRESH_MS);
  const pending = Pending({ title: `Task ${taskId}`, data: task, what: 'The task could not be read' });
  if (pending) return pending;
  const t = task.value!;
  const spec = t.spec as { run?: Record<string, string>; verify?: { command?: string; function?: string; protect?: string[] } };
  const progress = t.progress as { tail?: string[]; lastLine?: string; host?: string; pid?: number; lines?: number } | null;
  const artifact = t.artifact as { revision?: string; testCommand?: string; baseRevision?: string; baseCommit?: string } | null;
  const link = temporalLink(config, { workflowId: t.workflowId });
  return (
    <main>
      <p class="crumbs">
        <a href={graphHref(t.graphId)}>Graph {t.graphId}</a> /
      </p>
      <h1>
        Task {t.key} <StatusBadge status={t.status} />
      </h1>
      {task.error ? <ErrorBox error={task.error} what="The task could not be read again" /> : null}
      {t.description ? <p class="description">{t.description}</p> : null}
      <dl class="facts">
        <dt>owner</dt>
        <dd>
          {t.owner ?? <span class="muted">nobody</span>}
          {t.leaseExpired && t.status === 'running' ? <span class="badge warn">silent: its lease ran out</span> : null}
        </dd>
        <dt>claim version</dt>
        <dd>{t.claimVersion}</dd>
        <dt>attempts</dt>
        <dd>{t.attempts}</dd>
        <dt>claimed</dt>
        <dd>
          <Time at={t.claimedAt} />, lease until <Time at={t.leaseExpiresAt} />
        </dd>
        <dt>runs</dt>
        <dd>
          {spec.run
            ? Object.entries(spec.run).map(([k, v]) => (
                <span>
                  {k}: <code>{v}</code>{' '}
                </span>
              ))
            : '—'}
        </dd>
        <dt>verified by</dt>
        <dd>
          <code>{spec.verify?.command ?? spec.verify?.function ?? '—'}</code>
          {spec.verify?.protect?.length ? <span class="muted"> (protects {spec.verify.protect.join(', ')})</span> : null}
        </dd>
        <dt>workflow</dt>
        <dd>
          {link ? (
            <a href={link} target="_blank" rel="noreferrer noopener">
              {t.workflowId} in Temporal
            </a>
          ) : (
            <code>{t.workflowId}</code>
          )}
        </dd>
      </dl>
      {approver && t.status === 'awaiting_approval' ? (
        <p class="actions">
          {/* U11: a person decides; recorded as the task's verification under this token's identity. */}
          <Action
            label="Approve"
            explain={`Approves the artifact of ${t.key}, recorded as its verification under your identity; its dependents are released.`}
            perform={async (reason) => {
              const outcome = await api('task.approve', { taskId: t.id, reason });
              task.reload();
              return outcome.status;
            }}
          />
          <Action
            label="Reject"
            explain={`Rejects the artifact of ${t.key}; its agent reads your reason, and the graph's policy decides what follows.`}
            perform={async (reason) => {
              const outcome = await api('task.reject', { taskId: t.id, reason });
              task.reload();
              return outcome.status;
            }}
          />
        </p>
      ) : null}
      {admin ? (
        <p class="actions">
          {!TERMINAL_STATUSES.has(t.status) ? (
            <Action
              label="Cancel task"
              explain={`Cancels ${t.key}: its owner's later writes are refused and its run is stopped. Its dependents stay blocked.`}
              perform={async (reason) => {
                const outcome = await api('task.cancel', { taskId: t.id, reason });
                task.reload();
                return outcome.cancelled.length ? 'cancelled' : `left as ${outcome.left[0]?.status ?? 'it was'}`;
              }}
            />
          ) : null}
          {RERUNNABLE.has(t.status) ? (
            <Action
              label="Rerun task"
              explain={`Sends ${t.key} round again on its dependencies' current revisions; dependents verified on its old revision become stale.`}
              perform={async (reason) => {
                await api('task.rerun', { taskId: t.id, reason });
                task.reload();
                return 'sent round again';
              }}
            />
          ) : null}
        </p>
      ) : null}

      <Section title="Artifact" id="artifact">
        {artifact ? (
          <dl class="facts">
            <dt>revision</dt>
            <dd>
              <Revision rev={artifact.revision} />
            </dd>
            <dt>built on</dt>
            <dd>
              <Revision rev={artifact.baseRevision} /> (base <Revision rev={artifact.baseCommit} />)
            </dd>
            <dt>verified revision</dt>
            <dd>
              <Revision rev={t.verifiedRevision} />
            </dd>
          </dl>
        ) : (
          <p class="muted">Nothing submitted yet.</p>
        )}
      </Section>

      <Section title="Pinned upstream revisions" id="pins">
        {Object.keys(t.upstreamRevisions).length ? (
          <ul>
            {Object.entries(t.upstreamRevisions).map(([key, rev]) => (
              <li>
                <a href={taskHref(`${t.graphId}/${key}`)}>{key}</a> at <Revision rev={rev} />
              </li>
            ))}
          </ul>
        ) : (
          <p class="muted">None: it depends on nothing, or has not been released.</p>
        )}
      </Section>

      <Section title="Verifications" id="verifications">
        {t.verifications.length ? (
          t.verifications.map((v) => (
            <details class={v.passed ? 'verification passed' : 'verification failed'} open={!v.passed}>
              <summary>
                <StatusBadge status={v.passed ? 'passed' : 'failed'} /> claim v{v.claimVersion}, <Revision rev={v.revision} />,{' '}
                <code>{v.command}</code> exited {v.exitCode}, by {v.verifier}, <Time at={v.at} />
              </summary>
              <pre class="output">{v.outputTail || '(no output)'}</pre>
            </details>
          ))
        ) : (
          <p class="muted">Not verified yet.</p>
        )}
      </Section>

      <Section title="Agent log (last lines)" id="log">
        {progress?.tail?.length || progress?.lastLine ? (
          <>
            <p class="muted small">
              {progress.host ? `on ${progress.host}` : ''}
              {progress.pid ? `, pid ${progress.pid}` : ''}
              {progress.lines ? `, ${progress.lines} lines so far` : ''} — from the run's last heartbeat; the whole log is in the worker's
              work folder.
            </p>
            <pre class="output">{(progress.tail ?? [progress.lastLine]).join('\n')}</pre>
          </>
        ) : (
          <p class="muted">No output reported.</p>
        )}
      </Section>

      <Section title="Ownership timeline" id="timeline">
        <Timeline events={t.events} fenceLabel="claim version" label="Ownership timeline" />
      </Section>

      <Section title="Tool calls" id="tools">
        {t.toolCalls.length ? (
          <Table label="Tool calls">
            <thead>
              <tr>
                <th scope="col">step</th>
                <th scope="col">tool</th>
                <th scope="col">status</th>
                <th scope="col">owner</th>
                <th scope="col">claim version</th>
                <th scope="col">attempts</th>
                <th scope="col">updated</th>
              </tr>
            </thead>
            <tbody>
              {t.toolCalls.map((c) => (
                <tr data-step={c.step} class={c.reconciled ? 'reconciled' : undefined}>
                  <td>{c.step}</td>
                  <td>{c.tool}</td>
                  <td>
                    {c.status}
                    {c.reconciled ? (
                      <span class="badge reconciled" title="its outcome was looked up at the tool by the next owner">
                        reconciled
                      </span>
                    ) : null}
                    {c.error ? <div class="small muted">{c.error}</div> : null}
                  </td>
                  <td>{c.owner}</td>
                  <td>{c.claimVersion}</td>
                  <td>{c.attempts}</td>
                  <td>
                    <Time at={c.updatedAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </Table>
        ) : (
          <p class="muted">No tool calls.</p>
        )}
      </Section>

      <Section title="Notes" id="notes">
        {t.notes.length ? (
          <ul class="notes">
            {t.notes.map((n) => (
              <li>
                <strong>{n.author}</strong> {n.claimVersion !== null ? <span class="muted">(claim v{n.claimVersion})</span> : null}{' '}
                <Time at={n.at} />
                <p class="note">{n.body}</p>
              </li>
            ))}
          </ul>
        ) : (
          <p class="muted">No notes.</p>
        )}
      </Section>

      {t.poolRuns.length ? (
        <Section title="Pooled runs" id="pool-runs">
          <Table label="Pooled runs">
            <thead>
              <tr>
                <th scope="col">claim version</th>
                <th scope="col">pool</th>
                <th scope="col">offered</th>
                <th scope="col">taken by</th>
                <th scope="col">last beat</th>
                <th scope="col">submitted</th>
              </tr>
            </thead>
            <tbody>
              {t.poolRuns.map((r) => (
                <tr>
                  <td>{r.claimVersion}</td>
                  <td>{r.pool}</td>
                  <td>
                    <Time at={r.offeredAt} /> by {r.offeredBy}
                  </td>
                  <td>{r.agent ?? <span class="muted">waiting</span>}</td>
                  <td>
                    <Time at={r.beatAt} />
                  </td>
                  <td>
                    <Revision rev={r.revision} />
                  </td>
                </tr>
              ))}
            </tbody>
          </Table>
        </Section>
      ) : null}
    </main>
  );
}
