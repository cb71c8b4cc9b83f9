// U11: the subtasks agents of a graph proposed that wait for an operator (the graph's
// policy.subtasks: review), each with who proposed it from which task; an admin token accepts or
// declines them here, recorded under its identity (never the proposer's).
import { Action } from './Action.js';
import { api } from './api.js';
import { ErrorBox, Section, Table, taskHref, Time } from './common.js';
import { SAFETY_REREAD_MS, useData } from './data.js';

export function Proposals({
  graphId,
  liveVersion,
  admin,
  onDecided,
}: {
  graphId: string;
  liveVersion: number;
  admin: boolean;
  onDecided: () => void;
}) {
  const proposals = useData((signal) => api('proposals.list', { graphId }, signal), graphId, liveVersion, SAFETY_REREAD_MS);
  if (proposals.error) return <ErrorBox error={proposals.error} what="The proposed subtasks could not be read" />;
  if (!proposals.value?.length) return null;
  const decided = () => {
    proposals.reload();
    onDecided();
  };
  return (
    <Section title="Proposed subtasks" id="proposals">
      {proposals.value.map((p) => (
        <div class="proposal" data-proposal={p.id}>
          <p>
            Proposal {p.id} by {p.proposedBy} from <a href={taskHref(p.taskId)}>{p.taskId}</a>, <Time at={p.proposedAt} />. Each runs and is
            verified as its proposer is.
          </p>
          <Table label={`Subtasks of proposal ${p.id}`}>
            <thead>
              <tr>
                <th scope="col">key</th>
                <th scope="col">description</th>
                <th scope="col">depends on</th>
              </tr>
            </thead>
            <tbody>
              {p.tasks.map((t) => (
                <tr key={t.key}>
                  <td>{t.key}</td>
                  <td>{t.description}</td>
                  <td>{t.dependsOn.join(', ') || <span class="muted">none</span>}</td>
                </tr>
              ))}
            </tbody>
          </Table>
          {admin ? (
            <p class="actions">
              <Action
                label={`Accept proposal ${p.id}`}
                explain={`Adds these ${p.tasks.length} subtask(s) to ${graphId} under your identity and starts them.`}
                perform={async (reason) => {
                  const outcome = await api('proposal.accept', { proposalId: p.id, reason });
                  decided();
                  return `added ${outcome.added.length}`;
                }}
              />
              <Action
                label={`Decline proposal ${p.id}`}
                explain="Adds nothing; the proposing agent reads your reason in its inbox."
                perform={async (reason) => {
                  await api('proposal.decline', { proposalId: p.id, reason });
                  decided();
                  return 'declined';
                }}
              />
            </p>
          ) : null}
        </div>
      ))}
    </Section>
  );
}
