-- External side effects (SPEC X1, X2): a ledger of tool calls, one row per idempotency key.
-- The key is the task id and a step name the caller chooses, never the claim version, so it is
-- the same across retries, reclaims and re-runs. The row is written before the call goes out and
-- marked 'sent' (committed) before the gateway lets the request leave, so a row that is still
-- 'pending' was certainly never sent, and a row left 'sent' or 'unknown' must be reconciled (the
-- tool asked whether the keyed effect happened) before it may be sent again: the transition table
-- below enforces that whoever writes.

CREATE TABLE baton.tool_call_statuses (status text PRIMARY KEY);

INSERT INTO baton.tool_call_statuses (status) VALUES
  ('pending'), ('sent'), ('succeeded'), ('failed'), ('unknown'), ('reconciled_succeeded'), ('reconciled_absent');

CREATE TABLE baton.tool_call_transitions (
  from_status text NOT NULL REFERENCES baton.tool_call_statuses,
  to_status text NOT NULL REFERENCES baton.tool_call_statuses,
  PRIMARY KEY (from_status, to_status)
);

INSERT INTO baton.tool_call_transitions (from_status, to_status) VALUES
  ('pending', 'sent'),
  ('sent', 'succeeded'), ('sent', 'failed'), ('sent', 'unknown'),
  -- A new owner finds a previous owner's call still 'sent' and reconciles it directly.
  ('sent', 'reconciled_succeeded'), ('sent', 'reconciled_absent'),
  ('unknown', 'reconciled_succeeded'), ('unknown', 'reconciled_absent'),
  -- Sent again: after the tool said the effect did not happen, after a retryable refusal, or
  -- (unknown -> sent) as a replay to a tool that dedupes by key; the function checks which.
  ('reconciled_absent', 'sent'), ('failed', 'sent'), ('unknown', 'sent');

CREATE TABLE baton.tool_calls (
  task_id text NOT NULL REFERENCES baton.tasks,
  step text NOT NULL CHECK (step ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'),
  -- What the tool sees as the Idempotency-Key.
  idempotency_key text GENERATED ALWAYS AS (task_id || ':' || step) STORED UNIQUE,
  tool text NOT NULL CHECK (tool ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  params_hash text NOT NULL CHECK (params_hash ~ '^sha256:[0-9a-f]{64}$'),
  status text NOT NULL REFERENCES baton.tool_call_statuses,
  -- The claim that last acted on the row.
  owner text NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
  claim_version bigint NOT NULL CHECK (claim_version >= 1),
  -- How many times the request was sent.
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- What the tool answered (or what lookup found): a small reference such as an id or URL.
  result jsonb CHECK (octet_length(result::text) <= 16384),
  error text CHECK (length(error) <= 2000),
  -- For 'failed': the tool refused before acting (rate limit, connection refused); may be sent again.
  retryable boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, step)
);

-- What every tool call function returns: the ledger row after the call, or (accepted = false)
-- the task as it is now, for a refused stale owner.
CREATE TYPE baton.tool_call_outcome AS (
  accepted boolean,
  task_status text, task_owner text, task_claim_version bigint,
  idempotency_key text, tool text, params_hash text, status text, owner text, claim_version bigint,
  attempts integer, result jsonb, error text, retryable boolean,
  created_at timestamptz, sent_at timestamptz, updated_at timestamptz
);
