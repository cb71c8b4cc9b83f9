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

CREATE FUNCTION baton.refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'baton.events is append-only: % refused', TG_OP USING ERRCODE = 'BT004';
END $$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON baton.events
  FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_event_change();

-- Appends one event; callers hold the subject's row lock, which keeps subject_seq gapless.
CREATE FUNCTION baton.append_event(
  p_subject_kind text, p_subject_id text, p_kind text, p_actor text,
  p_fence bigint DEFAULT NULL, p_version bigint DEFAULT NULL,
  p_reason text DEFAULT NULL, p_details jsonb DEFAULT '{}'::jsonb
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_seq integer;
  v_id bigint;
BEGIN
  SELECT coalesce(max(subject_seq), 0) + 1 INTO v_seq
    FROM baton.events WHERE subject_kind = p_subject_kind AND subject_id = p_subject_id;
  INSERT INTO baton.events (subject_kind, subject_id, subject_seq, kind, actor, fence, version, reason, details)
    VALUES (p_subject_kind, p_subject_id, v_seq, p_kind, p_actor, p_fence, p_version, p_reason, coalesce(p_details, '{}'::jsonb))
    RETURNING id INTO v_id;
  RETURN v_id;
END $$;
