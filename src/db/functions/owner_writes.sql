-- Owner writes (SPEC T4): every write by a task's owner (heartbeat, submit, failure report,
-- fenced note) must match task id + owner + claim version + status running. A refused write is not
-- an exception: it is recorded as a 'stale_write_refused' event and answered with a row saying
-- accepted = false and what the task looks like now, because raising would roll the event back.

-- T4: the fence, defined once: the caller holds this claim of the task.
CREATE FUNCTION baton.claim_holds(t baton.tasks, p_owner text, p_claim_version bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT t.owner = p_owner AND t.claim_version = p_claim_version AND t.status = 'running'
$$;

-- Locks the task if, and only if, the caller still holds this claim.
CREATE FUNCTION baton.claim_fence(p_task_id text, p_owner text, p_claim_version bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM baton.tasks t WHERE t.id = p_task_id AND baton.claim_holds(t, p_owner, p_claim_version) FOR UPDATE OF t;
  RETURN FOUND;
END $$;

-- T4: records a refused owner write as an event and describes the task as it is now.
CREATE FUNCTION baton.claim_refuse_stale_write(p_task_id text, p_owner text, p_claim_version bigint, p_action text)
RETURNS baton.fenced_result LANGUAGE plpgsql AS $$
DECLARE
  t baton.tasks;
BEGIN
  t := baton.task_lock(p_task_id);
  -- The event's fence is the stale claim version the write carried; the current one is in the reason.
  PERFORM baton.event_append('task', p_task_id, 'stale_write_refused', p_owner, p_claim_version, NULL,
    format('%s by %s at claim version %s refused: task is %s, owner %s, claim version %s',
           p_action, p_owner, p_claim_version, t.status, coalesce(t.owner, 'none'), t.claim_version),
    jsonb_build_object('action', p_action, 'current_claim_version', t.claim_version));
  RETURN ROW(false, t.status, t.owner, t.claim_version, t.lease_expires_at)::baton.fenced_result;
END $$;

-- An accepted owner write: the task as it is now.
CREATE FUNCTION baton.claim_accept_write(p_task_id text) RETURNS baton.fenced_result LANGUAGE sql AS $$
  SELECT true, status, owner, claim_version, lease_expires_at FROM baton.tasks WHERE id = p_task_id
$$;

-- T4: the owner's heartbeat extends its lease (database clock) and stores progress.
CREATE FUNCTION baton.task_heartbeat(p_task_id text, p_owner text, p_claim_version bigint, p_lease_ms integer, p_progress jsonb)
RETURNS baton.fenced_result LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  r baton.fenced_result;
BEGIN
  UPDATE baton.tasks t
     SET heartbeat_at = now(), lease_expires_at = now() + p_lease_ms * interval '1 millisecond',
         progress = coalesce(p_progress, t.progress)
   WHERE t.id = p_task_id AND baton.claim_holds(t, p_owner, p_claim_version)
  RETURNING true, t.status, t.owner, t.claim_version, t.lease_expires_at INTO r;
  IF NOT FOUND THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'heartbeat');
  END IF;
  RETURN r;
END $$;
GRANT EXECUTE ON FUNCTION baton.task_heartbeat TO baton_worker;

-- T4, T7: the owner submits its artifact (revision, test command, its own result).
CREATE FUNCTION baton.task_submit(p_task_id text, p_owner text, p_claim_version bigint, p_artifact jsonb)
RETURNS baton.fenced_result LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  r baton.fenced_result;
BEGIN
  IF p_artifact IS NULL OR coalesce(p_artifact->>'revision', '') = '' THEN
    RAISE EXCEPTION 'task %: an artifact must name its revision', p_task_id USING ERRCODE = 'BT003';
  END IF;
  UPDATE baton.tasks t SET status = 'submitted', artifact = p_artifact, lease_expires_at = NULL
   WHERE t.id = p_task_id AND baton.claim_holds(t, p_owner, p_claim_version)
  RETURNING true, t.status, t.owner, t.claim_version, t.lease_expires_at INTO r;
  IF NOT FOUND THEN
    -- The same submit again (its first answer was lost): accepted, and nothing changes.
    IF EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id AND owner = p_owner AND claim_version = p_claim_version
                AND artifact->>'revision' = p_artifact->>'revision' AND status <> 'running') THEN
      RETURN baton.claim_accept_write(p_task_id);
    END IF;
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'submit');
  END IF;
  PERFORM baton.event_append('task', p_task_id, 'submitted', p_owner, p_claim_version, NULL, NULL,
    jsonb_build_object('revision', p_artifact->>'revision'));
  RETURN r;
END $$;
GRANT EXECUTE ON FUNCTION baton.task_submit TO baton_worker;

-- T4: the owner gives the task back after its agent failed; retry makes it ready, else failed.
CREATE FUNCTION baton.task_fail_attempt(p_task_id text, p_owner text, p_claim_version bigint, p_reason text, p_retry boolean)
RETURNS baton.fenced_result LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF NOT baton.claim_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'fail');
  END IF;
  UPDATE baton.tasks
     SET status = CASE WHEN p_retry THEN baton.task_ready_or_blocked(p_task_id) ELSE 'failed' END,
         owner = CASE WHEN p_retry THEN NULL ELSE owner END, lease_expires_at = NULL
   WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, CASE WHEN p_retry THEN 'attempt_failed' ELSE 'failed' END,
    p_owner, p_claim_version, NULL, p_reason);
  RETURN baton.claim_accept_write(p_task_id);
END $$;
GRANT EXECUTE ON FUNCTION baton.task_fail_attempt TO baton_worker;

-- T4: a note; one tied to a claim (p_claim_version not null) is fenced like any owner write.
CREATE FUNCTION baton.task_note_add(p_task_id text, p_author text, p_claim_version bigint, p_body text)
RETURNS baton.fenced_result LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id) THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  IF p_claim_version IS NOT NULL AND NOT baton.claim_fence(p_task_id, p_author, p_claim_version) THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_author, p_claim_version, 'note');
  END IF;
  INSERT INTO baton.task_notes (task_id, author, claim_version, body) VALUES (p_task_id, p_author, p_claim_version, p_body);
  RETURN baton.claim_accept_write(p_task_id);
END $$;
GRANT EXECUTE ON FUNCTION baton.task_note_add TO baton_worker, baton_client;
