-- U11 (issue 26): subtasks an agent proposes for its own task's graph (task.propose, a run token's
-- call, fenced on its claim). The graph's policy.subtasks decides: added at once (accepted by the
-- policy), kept here for an operator to accept or decline (review), or refused (nothing kept).
-- `tasks` holds each subtask as it will be added ({key, spec, dependsOn}): its spec is its
-- proposer's, with the agent's description and payload only. Functions:
-- src/db/functions/graphs.sql (task_propose, proposal_*), agent_door.sql, agent_views.sql.
CREATE TABLE baton.proposals (
  id bigserial PRIMARY KEY,
  graph_id text NOT NULL REFERENCES baton.graphs,
  task_id text NOT NULL REFERENCES baton.tasks,
  claim_version bigint NOT NULL,
  proposed_by text NOT NULL,
  proposed_at timestamptz NOT NULL DEFAULT now(),
  tasks jsonb NOT NULL CHECK (jsonb_typeof(tasks) = 'array' AND jsonb_array_length(tasks) > 0),
  status text NOT NULL CHECK (status IN ('pending', 'accepted', 'declined')),
  decided_by text,
  decided_at timestamptz,
  reason text CHECK (length(reason) <= 2000),
  CHECK ((status = 'pending') = (decided_at IS NULL) AND (decided_at IS NULL) = (decided_by IS NULL))
);
-- What `baton proposals` lists: those waiting, oldest first.
CREATE INDEX proposals_pending_idx ON baton.proposals (proposed_at) WHERE status = 'pending';
CREATE INDEX proposals_task_idx ON baton.proposals (task_id);
