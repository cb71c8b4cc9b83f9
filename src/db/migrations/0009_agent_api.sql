-- The agents' door (SPEC U3, U7, T5; issue 12). An agent reaches baton with a bearer token; the
-- token's identity is the actor of every call made with it, and nothing in a request can change
-- that. Only the token's SHA-256 is stored. A run token is bound to one claim of one task and is
-- worthless once that claim moves. A pooled run is a claimed task a worker offers to remote agents
-- of a pool; the agent that takes it works through the API and the worker relays its heartbeats
-- to Temporal. Functions: src/db/functions/tokens.sql.

ALTER TABLE baton.events DROP CONSTRAINT events_subject_kind_check;
ALTER TABLE baton.events ADD CONSTRAINT events_subject_kind_check CHECK (subject_kind IN ('task', 'object', 'graph', 'agent'));

CREATE TABLE baton.agent_tokens (
  id text PRIMARY KEY CHECK (id ~ '^tok_[0-9a-f]{16}$'),
  identity text NOT NULL CHECK (length(identity) BETWEEN 1 AND 200),
  scopes text[] NOT NULL CHECK (scopes <@ ARRAY['read', 'notes', 'objects', 'submit', 'admin']),
  secret_sha256 bytea NOT NULL UNIQUE CHECK (length(secret_sha256) = 32),
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  revoked_by text,
  revoke_reason text,
  last_used_at timestamptz,
  -- A run token: good only while this claim of this task holds (and, for a pooled run, while the
  -- token that took it is good).
  parent_token_id text REFERENCES baton.agent_tokens,
  task_id text REFERENCES baton.tasks,
  claim_version bigint,
  CHECK ((task_id IS NULL) = (claim_version IS NULL))
);

CREATE INDEX agent_tokens_claim_idx ON baton.agent_tokens (task_id, claim_version) WHERE task_id IS NOT NULL;

CREATE TABLE baton.pool_runs (
  task_id text NOT NULL REFERENCES baton.tasks,
  claim_version bigint NOT NULL,
  pool text NOT NULL CHECK (pool ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  -- The worker that holds the claim and relays the agent's heartbeats.
  offered_by text NOT NULL,
  offered_at timestamptz NOT NULL DEFAULT now(),
  -- The remote agent that took it (a token identity), and its run token.
  agent text,
  taken_at timestamptz,
  token_id text REFERENCES baton.agent_tokens,
  beat_at timestamptz,
  progress jsonb,
  revision text,
  submitted_at timestamptz,
  PRIMARY KEY (task_id, claim_version),
  CHECK ((agent IS NULL) = (taken_at IS NULL)),
  CHECK (revision IS NULL OR agent IS NOT NULL)
);

CREATE INDEX pool_runs_open_idx ON baton.pool_runs (pool, offered_at) WHERE agent IS NULL;
