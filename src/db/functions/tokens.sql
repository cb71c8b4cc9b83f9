-- The agents' tokens (SPEC U3, U7, T5, S6): API tokens people make (with note grants or without),
-- run tokens, and the check every call of the agent API starts with (agent_authenticate, and
-- agent_call in tokens_agent_call.sql). A token is found by the SHA-256 of its secret; a revoked or
-- expired token is refused, and so is a command run's token outside its run. Refusals of tokens baton
-- issued are events of subject 'agent' (the token's identity). A token baton did not issue is
-- refused without an event each: the API throttles those per client address and records them as
-- summaries (agent_refusals_summarise; src/api/tokenGate.ts). Refusals are returned, never raised,
-- so their events commit; bad input raises BT003.
-- (Named to load after objects_rules.sql, whose helpers its SQL functions use.)

CREATE FUNCTION baton.agent_invalid(p_message text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'BT003';
END $$;

-- Records a refused call against the token's identity (or 'anonymous') and describes the refusal;
-- `p_details` adds to the event's details (what the call asked for).
CREATE FUNCTION baton.agent_refuse(p_token baton.agent_tokens, p_operation text, p_refusal text, p_reason text, p_details jsonb DEFAULT '{}'::jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_subject text := coalesce(p_token.identity, 'anonymous');
BEGIN
  -- Agent subjects have no row to lock; this keeps their event numbers gapless under concurrency.
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(v_subject));
  PERFORM baton.event_append('agent', v_subject, 'api_refused', v_subject, p_token.claim_version, NULL, p_reason,
    jsonb_build_object('operation', p_operation, 'refusal', p_refusal, 'token_id', p_token.id, 'task_id', p_token.task_id) || p_details);
  RETURN jsonb_build_object('ok', false, 'refusal', p_refusal, 'reason', p_reason);
END $$;

-- The token whose secret this is; a row of NULLs when baton issued none.
CREATE FUNCTION baton.agent_token_by_secret(p_secret text) RETURNS baton.agent_tokens LANGUAGE sql STABLE AS $$
  SELECT * FROM baton.agent_tokens WHERE secret_sha256 = sha256(convert_to(coalesce(p_secret, ''), 'UTF8'))
$$;

-- Whether this session serves runs: its login is a worker's (a member of baton_worker, as a
-- worker's per-run endpoint is: activities/tasks.ts) or an administrator's (baton_owner, or a
-- superuser), never `baton serve`'s (baton_agent). A command run's token is good only in such a
-- session (issue 19): a leaked one does nothing on `baton serve`. It is asked of session_user, the
-- login the connection authenticated as, because nothing a caller sends can change it: inside these
-- SECURITY DEFINER functions current_user is the owner; SET ROLE changes current_user, never
-- session_user; SET SESSION AUTHORIZATION is a superuser's. No argument says where a call comes from.
-- A login that passes may issue run tokens itself (run_token_issue), so it gains nothing from one.
CREATE FUNCTION baton.agent_session_serves_runs() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT pg_has_role(session_user, 'baton_worker', 'MEMBER') OR pg_has_role(session_user, 'baton_owner', 'MEMBER')
$$;

-- NULL when k may be used: baton issued it, it is neither revoked nor expired, neither is the token
-- that took its run, and a command run's token is used inside its run. Else the refusal, recorded
-- unless baton never issued the token.
CREATE FUNCTION baton.agent_token_refusal(k baton.agent_tokens, p_operation text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  parent baton.agent_tokens;
BEGIN
  IF k.id IS NULL THEN
    RETURN jsonb_build_object('ok', false, 'refusal', 'unauthenticated', 'reason', 'the token is not one baton issued');
  END IF;
  IF k.revoked_at IS NOT NULL THEN
    RETURN baton.agent_refuse(k, p_operation, 'revoked', format('token %s of %s was revoked at %s by %s%s',
      k.id, k.identity, baton.object_ts(k.revoked_at), k.revoked_by, coalesce(': ' || k.revoke_reason, '')));
  END IF;
  IF k.expires_at IS NOT NULL AND k.expires_at <= now() THEN
    RETURN baton.agent_refuse(k, p_operation, 'expired', format('token %s of %s expired at %s', k.id, k.identity, baton.object_ts(k.expires_at)));
  END IF;
  -- A pooled run's token is good only while the token that took the run is.
  SELECT * INTO parent FROM baton.agent_tokens WHERE id = k.parent_token_id;
  IF FOUND AND parent.revoked_at IS NOT NULL THEN
    RETURN baton.agent_refuse(k, p_operation, 'revoked', format('run token %s was taken with token %s of %s, revoked at %s by %s%s',
      k.id, parent.id, parent.identity, baton.object_ts(parent.revoked_at), parent.revoked_by, coalesce(': ' || parent.revoke_reason, '')));
  END IF;
  IF FOUND AND parent.expires_at IS NOT NULL AND parent.expires_at <= now() THEN
    RETURN baton.agent_refuse(k, p_operation, 'expired', format('run token %s was taken with token %s of %s, expired at %s',
      k.id, parent.id, parent.identity, baton.object_ts(parent.expires_at)));
  END IF;
  -- A command run's token (a run token no pool.claim made, so without a parent) is its worker's to
  -- serve; a pooled run's is meant for `baton serve` and is good there.
  IF k.task_id IS NOT NULL AND k.parent_token_id IS NULL AND NOT baton.agent_session_serves_runs() THEN
    RETURN baton.agent_refuse(k, p_operation, 'outside_run', format(
      'token %s is the run token of claim version %s of task %s: it works only on its run''s own endpoint ($BATON_URL inside the run), not on this server',
      k.id, k.claim_version, k.task_id));
  END IF;
  RETURN NULL;
END $$;

-- The token check of agent_call alone, acting on nothing: the API asks it before it reads the body
-- of a token it has not seen answer, and before it refuses any input, so a bad token is refused
-- first and a made-up one never hears more than 401 (issue 19).
CREATE FUNCTION baton.agent_authenticate(p_secret text, p_operation text) RETURNS jsonb LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  k baton.agent_tokens := baton.agent_token_by_secret(p_secret);
BEGIN
  RETURN coalesce(baton.agent_token_refusal(k, p_operation), jsonb_build_object('ok', true, 'identity', k.identity));
END $$;
GRANT EXECUTE ON FUNCTION baton.agent_authenticate TO baton_agent, baton_worker;

-- One event for many calls from one client address that were refused for a token baton did not
-- issue (`p_count - p_throttled`) or throttled before the database because that address had
-- presented too many refused tokens (`p_throttled`), counted by the API over `p_window_ms`.
CREATE FUNCTION baton.agent_refusals_summarise(p_address text, p_count integer, p_throttled integer, p_window_ms integer) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF length(coalesce(p_address, '')) NOT BETWEEN 1 AND 100 THEN PERFORM baton.agent_invalid('the address is 1 to 100 characters'); END IF;
  IF coalesce(p_count, 0) < 1 OR p_throttled IS NULL OR p_throttled NOT BETWEEN 0 AND p_count OR coalesce(p_window_ms, -1) < 0 THEN
    PERFORM baton.agent_invalid(format('a summary counts 1 or more calls, 0 to all of them throttled, over 0 ms or more (not %s, %s, %s)', p_count, p_throttled, p_window_ms));
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext('anonymous'));
  PERFORM baton.event_append('agent', 'anonymous', 'api_refused', 'anonymous', NULL, NULL,
    format('%s calls from %s refused within %s ms: %s with a token baton did not issue, %s throttled before the database',
      p_count, p_address, p_window_ms, p_count - p_throttled, p_throttled),
    jsonb_build_object('refusal', 'unauthenticated', 'address', p_address, 'count', p_count, 'throttled', p_throttled, 'windowMs', p_window_ms));
END $$;
GRANT EXECUTE ON FUNCTION baton.agent_refusals_summarise TO baton_agent, baton_worker;

CREATE FUNCTION baton.agent_token_view(k baton.agent_tokens) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('id', k.id, 'identity', k.identity, 'scopes', to_jsonb(k.scopes), 'createdBy', k.created_by,
    'createdAt', baton.object_ts(k.created_at), 'expiresAt', baton.object_ts(k.expires_at),
    'revokedAt', baton.object_ts(k.revoked_at), 'revokedBy', k.revoked_by, 'lastUsedAt', baton.object_ts(k.last_used_at),
    'taskId', k.task_id, 'claimVersion', k.claim_version)
    -- A run token's notes are its run's (agent_notes_refusal); only tokens people made have grants.
    || CASE WHEN k.task_id IS NULL THEN jsonb_build_object('noteGrants', CASE WHEN k.note_graphs IS NOT NULL
         THEN jsonb_build_object('graphs', to_jsonb(k.note_graphs), 'tasks', to_jsonb(k.note_tasks)) END) ELSE '{}'::jsonb END
$$;

CREATE FUNCTION baton.agent_token_insert(
  p_identity text, p_scopes text[], p_expires_at timestamptz, p_secret_sha256 bytea, p_created_by text,
  p_task_id text DEFAULT NULL, p_claim_version bigint DEFAULT NULL, p_parent_token_id text DEFAULT NULL,
  p_note_graphs text[] DEFAULT NULL, p_note_tasks text[] DEFAULT NULL
) RETURNS baton.agent_tokens LANGUAGE plpgsql AS $$
DECLARE
  k baton.agent_tokens;
BEGIN
  PERFORM baton.object_check_actor(p_identity, 'identity');
  IF p_scopes IS NULL OR cardinality(p_scopes) = 0 OR NOT p_scopes <@ ARRAY['read', 'notes', 'objects', 'submit', 'admin'] THEN
    PERFORM baton.agent_invalid(format('scopes must be some of read, notes, objects, submit, admin, not %s', coalesce(array_to_string(p_scopes, ', '), 'none')));
  END IF;
  IF p_secret_sha256 IS NULL OR length(p_secret_sha256) <> 32 THEN PERFORM baton.agent_invalid('a token is stored as the 32-byte SHA-256 of its secret'); END IF;
  IF p_expires_at IS NOT NULL AND p_expires_at <= now() THEN
    PERFORM baton.agent_invalid(format('expiry %s is not in the future', baton.object_ts(p_expires_at)));
  END IF;
  INSERT INTO baton.agent_tokens (id, identity, scopes, secret_sha256, created_by, expires_at, task_id, claim_version, parent_token_id,
                                  note_graphs, note_tasks)
  VALUES ('tok_' || substr(md5(random()::text || clock_timestamp()::text), 1, 16), p_identity,
          ARRAY(SELECT DISTINCT s FROM unnest(p_scopes) s ORDER BY s), p_secret_sha256, p_created_by, p_expires_at, p_task_id, p_claim_version,
          p_parent_token_id, p_note_graphs, p_note_tasks)
  RETURNING * INTO k;
  RETURN k;
END $$;

-- An operator issues a token for an identity; the secret never reaches the database, only its hash.
-- Its expiry is computed by the database's clock, like every other time in baton. Graphs and tasks
-- given (either or both) are its note grants: it reads and writes the notes of those graphs' tasks
-- and of those tasks only. Given neither, it reaches every task's notes: an operator's token.
CREATE FUNCTION baton.agent_token_create(
  p_identity text, p_scopes text[], p_expires_in_ms bigint, p_secret_sha256 bytea, p_created_by text,
  p_note_graphs text[] DEFAULT NULL, p_note_tasks text[] DEFAULT NULL
) RETURNS jsonb LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  k baton.agent_tokens;
  v_graphs text[];
  v_tasks text[];
  v_missing text;
BEGIN
  IF p_expires_in_ms IS NOT NULL AND p_expires_in_ms < 1 THEN PERFORM baton.agent_invalid('a token lives at least 1 ms'); END IF;
  PERFORM baton.object_check_actor(p_created_by, 'creator');
  IF p_note_graphs IS NOT NULL OR p_note_tasks IS NOT NULL THEN
    v_graphs := ARRAY(SELECT DISTINCT g FROM unnest(coalesce(p_note_graphs, '{}')) g ORDER BY g);
    v_tasks := ARRAY(SELECT DISTINCT t FROM unnest(coalesce(p_note_tasks, '{}')) t ORDER BY t);
    IF cardinality(v_graphs) + cardinality(v_tasks) = 0 THEN
      PERFORM baton.agent_invalid('a note grant names at least one graph or task (give none for a token that reaches every task''s notes)');
    END IF;
    -- A misspelt name would make a token that reaches nothing and says so to nobody.
    SELECT g INTO v_missing FROM unnest(v_graphs) g WHERE g IS NULL OR NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = g) LIMIT 1;
    IF FOUND THEN RAISE EXCEPTION 'graph % does not exist', coalesce(v_missing, 'NULL') USING ERRCODE = 'BT002'; END IF;
    SELECT t INTO v_missing FROM unnest(v_tasks) t WHERE t IS NULL OR NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = t) LIMIT 1;
    IF FOUND THEN RAISE EXCEPTION 'task % does not exist', coalesce(v_missing, 'NULL') USING ERRCODE = 'BT002'; END IF;
  END IF;
  k := baton.agent_token_insert(p_identity, p_scopes, now() + p_expires_in_ms * interval '1 millisecond', p_secret_sha256, p_created_by,
    p_note_graphs => v_graphs, p_note_tasks => v_tasks);
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(k.identity));
  PERFORM baton.event_append('agent', k.identity, 'token_created', p_created_by, NULL, NULL, NULL,
    jsonb_build_object('token_id', k.id, 'scopes', to_jsonb(k.scopes), 'expires_at', k.expires_at)
      || CASE WHEN v_graphs IS NOT NULL THEN jsonb_build_object('note_graphs', to_jsonb(v_graphs), 'note_tasks', to_jsonb(v_tasks)) ELSE '{}'::jsonb END);
  RETURN baton.agent_token_view(k);
END $$;
GRANT EXECUTE ON FUNCTION baton.agent_token_create TO baton_client;

-- Tokens people created (run tokens are the runs' own), newest first.
CREATE FUNCTION baton.agent_token_list() RETURNS SETOF jsonb LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT baton.agent_token_view(k) FROM baton.agent_tokens k WHERE k.task_id IS NULL ORDER BY k.created_at DESC, k.id
$$;
GRANT EXECUTE ON FUNCTION baton.agent_token_list TO baton_client, baton_reader;

CREATE FUNCTION baton.agent_token_revoke(p_id text, p_actor text, p_reason text DEFAULT NULL) RETURNS jsonb LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  k baton.agent_tokens;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  UPDATE baton.agent_tokens SET revoked_at = now(), revoked_by = p_actor, revoke_reason = p_reason
   WHERE id = p_id AND revoked_at IS NULL RETURNING * INTO k;
  IF NOT FOUND THEN
    SELECT * INTO k FROM baton.agent_tokens WHERE id = p_id;
    IF NOT FOUND THEN RAISE EXCEPTION 'token % does not exist', p_id USING ERRCODE = 'BT002'; END IF;
    RETURN baton.agent_token_view(k); -- already revoked: nothing changes
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(k.identity));
  PERFORM baton.event_append('agent', k.identity, 'token_revoked', p_actor, NULL, NULL, p_reason, jsonb_build_object('token_id', k.id));
  RETURN baton.agent_token_view(k);
END $$;
GRANT EXECUTE ON FUNCTION baton.agent_token_revoke TO baton_client;

-- A worker issues the token its run's agent uses, bound to the worker's claim (a fenced owner write).
CREATE FUNCTION baton.run_token_issue(
  p_task_id text, p_owner text, p_claim_version bigint, p_identity text, p_secret_sha256 bytea
) RETURNS baton.fenced_result LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF NOT baton.claim_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'run token');
  END IF;
  PERFORM baton.agent_token_insert(p_identity, ARRAY['read', 'notes', 'objects'], NULL, p_secret_sha256, p_owner, p_task_id, p_claim_version);
  RETURN baton.claim_accept_write(p_task_id);
END $$;
GRANT EXECUTE ON FUNCTION baton.run_token_issue TO baton_worker;
