-- Tasks, dependencies, verifications and notes (SPEC T1-T8). Every write goes through the
-- functions in src/db/functions (claims, owner_writes, verification, graphs); each appends its
-- event in the same transaction. The statuses and transitions below are data: a test compares
-- them with TASK_STATUSES and TASK_TRANSITIONS in src/tasks/states.ts, and a change to either is
-- a new migration.

CREATE TABLE baton.task_statuses (status text PRIMARY KEY);
INSERT INTO baton.task_statuses (status) VALUES ('blocked'), ('ready'), ('running'), ('submitted'), ('verifying'), ('verified'), ('rejected'), ('stale'), ('failed'), ('cancelled');

CREATE TABLE baton.task_transitions (
  from_status text NOT NULL REFERENCES baton.task_statuses,
  to_status text NOT NULL REFERENCES baton.task_statuses,
  PRIMARY KEY (from_status, to_status)
);
INSERT INTO baton.task_transitions (from_status, to_status) VALUES
  ('blocked', 'ready'),
  ('blocked', 'cancelled'),
  ('ready', 'running'),
  ('ready', 'blocked'),
  ('ready', 'cancelled'),
  ('ready', 'failed'),
  ('running', 'submitted'),
  ('running', 'ready'),
  ('running', 'blocked'),
  ('running', 'failed'),
  ('running', 'cancelled'),
  ('submitted', 'verifying'),
  ('submitted', 'cancelled'),
  ('verifying', 'verified'),
  ('verifying', 'rejected'),
  ('verifying', 'submitted'),
  ('rejected', 'ready'),
  ('rejected', 'failed'),
  ('verified', 'stale'),
  ('verified', 'ready'),
  ('stale', 'verifying'),
  ('stale', 'ready'),
  ('failed', 'ready');

CREATE TABLE baton.graphs (
  id text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  submitted_by text NOT NULL,
  submitted_at timestamptz NOT NULL DEFAULT now(),
  spec jsonb NOT NULL
);

CREATE TABLE baton.tasks (
  id text PRIMARY KEY,
  graph_id text NOT NULL REFERENCES baton.graphs,
  key text NOT NULL CHECK (key ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  spec jsonb NOT NULL,
  status text NOT NULL REFERENCES baton.task_statuses,
  -- The claim holder while running; afterwards, who produced the artifact.
  owner text,
  claim_version bigint NOT NULL DEFAULT 0 CHECK (claim_version >= 0),
  claimed_at timestamptz,
  heartbeat_at timestamptz,
  lease_expires_at timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  progress jsonb,
  artifact jsonb,
  verified_revision text,
  -- Who is verifying (or last verified) the artifact; never its owner.
  verifier text,
  -- Upstream key -> verified revision this task was released (or re-verified) against.
  upstream_revisions jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (graph_id, key),
  CHECK (status <> 'running' OR (owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
  CHECK (status NOT IN ('submitted', 'verifying', 'verified', 'rejected', 'stale') OR artifact IS NOT NULL)
);

CREATE INDEX tasks_ready_idx ON baton.tasks (graph_id, id) WHERE status = 'ready';

CREATE TABLE baton.task_dependencies (
  task_id text NOT NULL REFERENCES baton.tasks,
  depends_on text NOT NULL REFERENCES baton.tasks,
  PRIMARY KEY (task_id, depends_on),
  CHECK (task_id <> depends_on)
);

CREATE INDEX task_dependencies_upstream_idx ON baton.task_dependencies (depends_on);

CREATE TABLE baton.verifications (
  id bigserial PRIMARY KEY,
  task_id text NOT NULL REFERENCES baton.tasks,
  claim_version bigint NOT NULL,
  revision text NOT NULL,
  command text NOT NULL,
  exit_code integer NOT NULL,
  output_digest text NOT NULL,
  output_tail text NOT NULL DEFAULT '',
  verifier text NOT NULL,
  passed boolean NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);

-- Discussion. A note is never a record of ownership; notes tied to a claim are fenced.
CREATE TABLE baton.task_notes (
  id bigserial PRIMARY KEY,
  task_id text NOT NULL REFERENCES baton.tasks,
  author text NOT NULL,
  claim_version bigint,
  body text NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
  at timestamptz NOT NULL DEFAULT now()
);

-- What a claim returns: enough to start work, committed before any work starts (T3).
CREATE TYPE baton.claim AS (
  task_id text, graph_id text, key text, spec jsonb, claim_version bigint,
  lease_expires_at timestamptz, attempts integer, upstream_revisions jsonb
);

-- The answer to every fenced write: accepted, or refused with what the task looks like now.
CREATE TYPE baton.fenced_result AS (
  accepted boolean, status text, owner text, claim_version bigint, lease_expires_at timestamptz
);
