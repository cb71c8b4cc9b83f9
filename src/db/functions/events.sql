-- The record (SPEC E1): events are appended by the store function that makes a change, in its
-- transaction; the record's tables refuse UPDATE, DELETE and TRUNCATE whoever asks, but for the
-- DELETE of baton.retention_apply (retention.sql), which moves a finished graph's record to the
-- archive in the same transaction (U11).

-- Whether this transaction is baton.retention_apply moving a record to the archive.
CREATE FUNCTION baton.retention_moving() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT coalesce(current_setting('baton.retention_moving', true), '') = 'on'
$$;

CREATE FUNCTION baton.event_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND baton.retention_moving() THEN RETURN NULL; END IF;
  RAISE EXCEPTION 'baton.events is append-only: % refused', TG_OP USING ERRCODE = 'BT004';
END $$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON baton.events
  FOR EACH STATEMENT EXECUTE FUNCTION baton.event_refuse_change();

-- Appends one event; callers hold the subject's row lock, which keeps subject_seq gapless.
CREATE FUNCTION baton.event_append(
  p_subject_kind text, p_subject_id text, p_kind text, p_actor text,
  p_fence bigint DEFAULT NULL, p_version bigint DEFAULT NULL,
  p_reason text DEFAULT NULL, p_details jsonb DEFAULT '{}'::jsonb
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_seq integer;
  v_id bigint;
BEGIN
  -- The transaction takes its id before the event takes its number, so a reader of the log that
  -- sees a snapshot without this transaction knows its events are yet to come (src/observability/eventLogReader.ts).
  PERFORM pg_current_xact_id();
  SELECT coalesce(max(subject_seq), 0) + 1 INTO v_seq
    FROM baton.events WHERE subject_kind = p_subject_kind AND subject_id = p_subject_id;
  INSERT INTO baton.events (subject_kind, subject_id, subject_seq, kind, actor, fence, version, reason, details)
    VALUES (p_subject_kind, p_subject_id, v_seq, p_kind, p_actor, p_fence, p_version, p_reason, coalesce(p_details, '{}'::jsonb))
    RETURNING id INTO v_id;
  RETURN v_id;
END $$;

CREATE FUNCTION baton.record_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND baton.retention_moving() THEN RETURN NULL; END IF;
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'BT004';
END $$;

CREATE TRIGGER verifications_append_only BEFORE UPDATE OR DELETE ON baton.verifications
  FOR EACH STATEMENT EXECUTE FUNCTION baton.record_refuse_change();

CREATE TRIGGER task_notes_append_only BEFORE UPDATE OR DELETE ON baton.task_notes
  FOR EACH STATEMENT EXECUTE FUNCTION baton.record_refuse_change();

-- The ledger is the memory of what was done to the world: rows are never deleted.
CREATE TRIGGER tool_calls_keep_rows BEFORE DELETE OR TRUNCATE ON baton.tool_calls
  FOR EACH STATEMENT EXECUTE FUNCTION baton.record_refuse_change();
