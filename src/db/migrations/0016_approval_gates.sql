-- U11 (issue 26): approval gates. A task whose `verify` names an approval waits, once its check has
-- passed, in `awaiting_approval` until a person with the `approve` scope decides; the decision is
-- recorded as the task's verification, by the approver (never its agent: T7). One row per request:
-- when the wait runs out (due_at, on the database clock) and what that decides. Functions:
-- src/db/functions/verification.sql (approval_*), agent_door.sql, agent_views.sql.
INSERT INTO baton.task_statuses (status) VALUES ('awaiting_approval');
INSERT INTO baton.task_transitions (from_status, to_status) VALUES
  ('verifying', 'awaiting_approval'), -- the check passed: a person decides
  ('awaiting_approval', 'verifying'), -- a person decided (or the wait ran out): recorded as the verification
  ('awaiting_approval', 'cancelled');
ALTER TABLE baton.tasks
  DROP CONSTRAINT tasks_check1,
  ADD CONSTRAINT tasks_check1
    CHECK (status NOT IN ('submitted', 'verifying', 'awaiting_approval', 'verified', 'rejected', 'stale') OR artifact IS NOT NULL);
ALTER TABLE baton.agent_tokens
  DROP CONSTRAINT agent_tokens_scopes_check,
  ADD CONSTRAINT agent_tokens_scopes_check CHECK (scopes <@ ARRAY['read', 'notes', 'objects', 'submit', 'view', 'approve', 'admin']);

CREATE TABLE baton.approvals (
  id bigserial PRIMARY KEY,
  task_id text NOT NULL REFERENCES baton.tasks,
  claim_version bigint NOT NULL,
  revision text NOT NULL,
  -- The verifier that passed the artifact to a person.
  requested_by text NOT NULL,
  requested_at timestamptz NOT NULL DEFAULT now(),
  due_at timestamptz,
  on_timeout text NOT NULL CHECK (on_timeout IN ('reject', 'fail')),
  -- cancelled: the task was cancelled while it waited.
  decision text CHECK (decision IN ('approved', 'rejected', 'timed_out', 'cancelled')),
  decided_by text,
  decided_at timestamptz,
  reason text CHECK (length(reason) <= 2000),
  CHECK ((decision IS NULL) = (decided_at IS NULL) AND (decision IS NULL) = (decided_by IS NULL))
);
-- At most one open request per task: what `baton approve` decides.
CREATE UNIQUE INDEX approvals_open_idx ON baton.approvals (task_id) WHERE decision IS NULL;
