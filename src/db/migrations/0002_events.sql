-- The record (SPEC E1): one append-only event per change of ownership or state, written by the
-- store function that makes the change, in the same transaction, with database time.
CREATE TABLE baton.events (
  id bigserial PRIMARY KEY,
  -- What the event is about: a task, a shared object or a graph, and its id or key.
  subject_kind text NOT NULL CHECK (subject_kind IN ('task', 'object', 'graph')),
  subject_id text NOT NULL,
  -- 1, 2, 3, ... per subject with no gaps; the writer holds the subject's row lock.
  subject_seq integer NOT NULL,
  kind text NOT NULL CHECK (kind ~ '^[a-z_]+$'),
  actor text NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
  at timestamptz NOT NULL DEFAULT now(),
  -- The claim version (tasks) or fencing token (objects) in force after the change, if any.
  fence bigint,
  -- The content version (objects) or revision-like version the change concerns, if any.
  version bigint,
  reason text,
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  UNIQUE (subject_kind, subject_id, subject_seq)
);
