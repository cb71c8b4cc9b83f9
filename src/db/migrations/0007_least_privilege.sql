-- Least-privilege roles (SPEC S1): components read through functions, never tables, so the rows
-- they read have types of their own. The roles, the schema's owner and the grants are set up by
-- the migrator (src/db/roles.ts) and next to each function (src/db/functions).

-- A task as baton's code sees it: its columns, whether its lease ran out (database clock) and the
-- keys it depends on.
CREATE TYPE baton.task_view AS (
  id text, graph_id text, key text, spec jsonb, status text, owner text, claim_version bigint,
  claimed_at timestamptz, lease_expires_at timestamptz, attempts integer, progress jsonb, artifact jsonb,
  verified_revision text, upstream_revisions jsonb, lease_expired boolean, depends_on text[]
);

-- One event as the record shows it.
CREATE TYPE baton.event_view AS (
  id bigint, subject_kind text, subject_id text, subject_seq integer, kind text, actor text, at timestamptz,
  fence bigint, version bigint, reason text, details jsonb
);
