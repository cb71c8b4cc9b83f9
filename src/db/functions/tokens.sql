-- The agents' door (SPEC U3, U7, T5): API tokens, run tokens, pooled runs, and baton.agent_call,
-- the one function through which the agent API acts. It finds the token by the SHA-256 of the
-- secret, refuses a revoked or expired token, a token without the operation's scope, and a run
-- token whose claim has moved, and performs the operation with the token's identity as the actor.
-- No argument names the actor. Refusals of tokens baton issued are events: of subject 'agent' (the
-- token's identity), or, for a run token whose claim moved, the task's stale_write_refused. A token
-- baton did not issue is refused without an event each: the API throttles those per client address
-- and records them as summaries (agent_refusals_summarise; src/api/tokenGate.ts).
-- Refusals are returned, never raised, so their events commit; bad input raises BT003.
-- (Named to load after objects_rules.sql, whose helpers its SQL functions use.)

-- The scope an operation needs; 'run' means a run token (bound to a claim). NULL: no such operation.
CREATE FUNCTION baton.agent_operation_scope(p_operation text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN p_operation IN ('whoami', 'notes.list', 'object.show', 'object.read', 'object.check', 'object.log') THEN 'read'
    WHEN p_operation = 'note.add' THEN 'notes'
    WHEN p_operation IN ('object.create', 'object.grant', 'object.take', 'object.write', 'object.heartbeat', 'object.release',
                         'object.offer', 'object.accept', 'object.decline', 'object.withdraw', 'object.suggest', 'object.approve') THEN 'objects'
    WHEN p_operation = 'pool.claim' THEN 'submit'
    WHEN p_operation IN ('context', 'heartbeat', 'submit', 'tool.call') THEN 'run'
  END
$$;

CREATE FUNCTION baton.agent_invalid(p_message text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'BT003';
END $$;

-- Records a refused call against the token's identity (or 'anonymous') and describes the refusal.
CREATE FUNCTION baton.agent_refuse(p_token baton.agent_tokens, p_operation text, p_refusal text, p_reason text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_subject text := coalesce(p_token.identity, 'anonymous');
BEGIN
  -- Agent subjects have no row to lock; this keeps their event numbers gapless under concurrency.
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(v_subject));
  PERFORM baton.append_event('agent', v_subject, 'api_refused', v_subject, p_token.claim_version, NULL, p_reason,
    jsonb_build_object('operation', p_operation, 'refusal', p_refusal, 'token_id', p_token.id, 'task_id', p_token.task_id));
  RETURN jsonb_build_object('ok', false, 'refusal', p_refusal, 'reason', p_reason);
END $$;

-- The token whose secret this is; a row of NULLs when baton issued none.
CREATE FUNCTION baton.agent_token_by_secret(p_secret text) RETURNS baton.agent_tokens LANGUAGE sql STABLE AS $$
  SELECT * FROM baton.agent_tokens WHERE secret_sha256 = sha256(convert_to(coalesce(p_secret, ''), 'UTF8'))
$$;

-- NULL when k may be used: baton issued it, it is neither revoked nor expired, and neither is the
-- token that took its run. Else the refusal, recorded unless baton never issued the token.
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
  PERFORM baton.append_event('agent', 'anonymous', 'api_refused', 'anonymous', NULL, NULL,
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
$$;

CREATE FUNCTION baton.agent_token_insert(
  p_identity text, p_scopes text[], p_expires_at timestamptz, p_secret_sha256 bytea, p_created_by text,
  p_task_id text DEFAULT NULL, p_claim_version bigint DEFAULT NULL, p_parent_token_id text DEFAULT NULL
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
  INSERT INTO baton.agent_tokens (id, identity, scopes, secret_sha256, created_by, expires_at, task_id, claim_version, parent_token_id)
  VALUES ('tok_' || substr(md5(random()::text || clock_timestamp()::text), 1, 16), p_identity,
          ARRAY(SELECT DISTINCT s FROM unnest(p_scopes) s ORDER BY s), p_secret_sha256, p_created_by, p_expires_at, p_task_id, p_claim_version,
          p_parent_token_id)
  RETURNING * INTO k;
  RETURN k;
END $$;

-- An operator issues a token for an identity; the secret never reaches the database, only its hash.
-- Its expiry is computed by the database's clock, like every other time in baton.
CREATE FUNCTION baton.agent_token_create(
  p_identity text, p_scopes text[], p_expires_in_ms bigint, p_secret_sha256 bytea, p_created_by text
) RETURNS jsonb LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  k baton.agent_tokens;
BEGIN
  IF p_expires_in_ms IS NOT NULL AND p_expires_in_ms < 1 THEN PERFORM baton.agent_invalid('a token lives at least 1 ms'); END IF;
  PERFORM baton.object_check_actor(p_created_by, 'creator');
  k := baton.agent_token_insert(p_identity, p_scopes, now() + p_expires_in_ms * interval '1 millisecond', p_secret_sha256, p_created_by);
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(k.identity));
  PERFORM baton.append_event('agent', k.identity, 'token_created', p_created_by, NULL, NULL, NULL,
    jsonb_build_object('token_id', k.id, 'scopes', to_jsonb(k.scopes), 'expires_at', k.expires_at));
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
  PERFORM baton.append_event('agent', k.identity, 'token_revoked', p_actor, NULL, NULL, p_reason, jsonb_build_object('token_id', k.id));
  RETURN baton.agent_token_view(k);
END $$;
GRANT EXECUTE ON FUNCTION baton.agent_token_revoke TO baton_client;

-- A worker issues the token its run's agent uses, bound to the worker's claim (a fenced owner write).
CREATE FUNCTION baton.run_token_issue(
  p_task_id text, p_owner text, p_claim_version bigint, p_identity text, p_secret_sha256 bytea
) RETURNS baton.fenced_result LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF NOT baton.hold_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.refuse_stale_write(p_task_id, p_owner, p_claim_version, 'run token');
  END IF;
  PERFORM baton.agent_token_insert(p_identity, ARRAY['read', 'notes', 'objects'], NULL, p_secret_sha256, p_owner, p_task_id, p_claim_version);
  RETURN baton.accepted_write(p_task_id);
END $$;
GRANT EXECUTE ON FUNCTION baton.run_token_issue TO baton_worker;

-- U7: the worker holding a claim offers its run to the agents of a pool (a fenced owner write).
CREATE FUNCTION baton.pool_offer(p_task_id text, p_owner text, p_claim_version bigint, p_pool text)
RETURNS baton.fenced_result LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF NOT baton.hold_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.refuse_stale_write(p_task_id, p_owner, p_claim_version, 'pool offer');
  END IF;
  INSERT INTO baton.pool_runs (task_id, claim_version, pool, offered_by) VALUES (p_task_id, p_claim_version, p_pool, p_owner)
  ON CONFLICT (task_id, claim_version) DO NOTHING;
  IF FOUND THEN
    PERFORM baton.append_event('task', p_task_id, 'offered_to_pool', p_owner, p_claim_version, NULL, NULL, jsonb_build_object('pool', p_pool));
  END IF;
  RETURN baton.accepted_write(p_task_id);
END $$;
GRANT EXECUTE ON FUNCTION baton.pool_offer TO baton_worker;

-- What the worker relaying a pooled run needs: who took it, how long it has been silent (database
-- clock), its progress and its submitted revision.
CREATE FUNCTION baton.pool_run_state(p_task_id text, p_claim_version bigint)
RETURNS TABLE (agent text, beat_at timestamptz, silent_ms bigint, progress jsonb, revision text) LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT r.agent, r.beat_at, (extract(epoch FROM now() - r.beat_at) * 1000)::bigint, r.progress, r.revision
    FROM baton.pool_runs r WHERE r.task_id = p_task_id AND r.claim_version = p_claim_version
$$;
GRANT EXECUTE ON FUNCTION baton.pool_run_state TO baton_worker;

CREATE FUNCTION baton.agent_notes(p_task_id text) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object('id', n.id, 'author', n.author, 'claimVersion', n.claim_version,
           'body', n.body, 'at', baton.object_ts(n.at)) ORDER BY n.id), '[]'::jsonb)
    FROM baton.task_notes n WHERE n.task_id = p_task_id
$$;

-- What an agent needs to do its task: the spec, where to work, the pinned upstream revisions with
-- their notes, and its own task's notes.
CREATE FUNCTION baton.agent_task_context(t baton.tasks, k baton.agent_tokens) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'identity', k.identity,
    'taskId', t.id, 'graphId', t.graph_id, 'key', t.key, 'claimVersion', k.claim_version,
    'description', t.spec->>'description', 'payload', t.spec->'payload', 'verify', t.spec->'verify',
    'repo', g.spec->>'repo', 'base', coalesce(g.spec->>'base', 'HEAD'),
    'upstream', coalesce((
      SELECT jsonb_agg(jsonb_build_object('key', u.key, 'taskId', u.id, 'revision', t.upstream_revisions->>u.key,
               'notes', baton.agent_notes(u.id)) ORDER BY u.key)
        FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on WHERE d.task_id = t.id), '[]'::jsonb),
    'notes', baton.agent_notes(t.id))
    FROM baton.graphs g WHERE g.id = t.graph_id
$$;


CREATE FUNCTION baton.agent_call(p_secret text, p_operation text, p_args jsonb DEFAULT '{}'::jsonb) RETURNS jsonb LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  v_scope text := baton.agent_operation_scope(p_operation);
  a jsonb := coalesce(p_args, '{}'::jsonb);
  k baton.agent_tokens := baton.agent_token_by_secret(p_secret);
  v_refusal jsonb;
  t baton.tasks;
  r baton.pool_runs;
  o baton.object_outcome;
  v_task text;
  v_secret_sha256 bytea;
BEGIN
  IF v_scope IS NULL THEN PERFORM baton.agent_invalid(format('unknown operation %L', p_operation)); END IF;
  IF jsonb_typeof(a) <> 'object' THEN PERFORM baton.agent_invalid('the arguments must be a JSON object'); END IF;
  v_refusal := baton.agent_token_refusal(k, p_operation);
  IF v_refusal IS NOT NULL THEN RETURN v_refusal; END IF;
  IF k.task_id IS NOT NULL AND p_operation = 'pool.claim' THEN
    RETURN baton.agent_refuse(k, p_operation, 'not_a_run', format('a run token (%s) cannot take further runs: use the token that took this one', k.id));
  END IF;
  IF k.task_id IS NOT NULL THEN
    t := baton.lock_task(k.task_id);
    IF t.claim_version <> k.claim_version OR t.status <> 'running' THEN
      -- T4: the claim this run token was issued for has moved on; like any late owner write.
      PERFORM baton.refuse_stale_write(k.task_id, k.identity, k.claim_version, p_operation);
      RETURN jsonb_build_object('ok', false, 'refusal', 'stale_claim', 'identity', k.identity, 'taskId', k.task_id, 'claimVersion', k.claim_version,
        'reason', format('%s with the run token of claim version %s of task %s refused: the task is %s at claim version %s',
          p_operation, k.claim_version, k.task_id, t.status, t.claim_version),
        'task', jsonb_build_object('status', t.status, 'owner', t.owner, 'claimVersion', t.claim_version));
    END IF;
  ELSIF v_scope = 'run' THEN
    RETURN baton.agent_refuse(k, p_operation, 'not_a_run',
      format('%s needs a run token (one a run gives its agent, or pool.claim returns); token %s of %s is not bound to a claim', p_operation, k.id, k.identity));
  END IF;
  IF v_scope <> 'run' AND NOT (v_scope = ANY (k.scopes) OR 'admin' = ANY (k.scopes)) THEN
    RETURN baton.agent_refuse(k, p_operation, 'scope',
      format('token %s of %s has scope %s; %s needs %s', k.id, k.identity, array_to_string(k.scopes, ', '), p_operation, v_scope));
  END IF;
  UPDATE baton.agent_tokens SET last_used_at = now() WHERE id = k.id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

  CASE p_operation
  WHEN 'whoami' THEN
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_token_view(k) - 'createdBy' - 'revokedAt' - 'revokedBy' - 'lastUsedAt');
  WHEN 'context' THEN
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_task_context(t, k));
  WHEN 'tool.call' THEN
    -- The worker running the claim performs the call (src/tools/toolGateway.ts); here only the token is checked.
    RETURN jsonb_build_object('ok', true, 'result', jsonb_build_object('taskId', t.id, 'claimVersion', t.claim_version, 'identity', k.identity));
  WHEN 'heartbeat' THEN
    UPDATE baton.pool_runs SET beat_at = now(), progress = coalesce(a->'progress', progress)
     WHERE task_id = t.id AND claim_version = t.claim_version;
    RETURN jsonb_build_object('ok', true, 'result', jsonb_build_object('taskId', t.id, 'claimVersion', t.claim_version, 'pooled', FOUND, 'at', baton.object_ts(now())));
  WHEN 'submit' THEN
    IF coalesce(a->>'revision', '') !~ '^[0-9a-f]{40}([0-9a-f]{24})?$' THEN
      PERFORM baton.agent_invalid(format('revision must be a full git commit id (40 or 64 hex digits), not %s', coalesce(a->>'revision', 'none')));
    END IF;
    SELECT * INTO r FROM baton.pool_runs WHERE task_id = t.id AND claim_version = t.claim_version FOR UPDATE;
    IF NOT FOUND THEN
      PERFORM baton.agent_invalid(format('task %s runs on a worker: its agent submits by committing and exiting; submit is for pooled runs', t.id));
    END IF;
    IF r.revision IS NOT NULL AND r.revision <> a->>'revision' THEN
      PERFORM baton.agent_invalid(format('claim version %s of task %s already submitted revision %s', t.claim_version, t.id, r.revision));
    END IF;
    IF r.revision IS NULL THEN
      UPDATE baton.pool_runs SET revision = a->>'revision', submitted_at = now(), beat_at = now()
       WHERE task_id = t.id AND claim_version = t.claim_version;
      PERFORM baton.append_event('task', t.id, 'agent_submitted', k.identity, t.claim_version, NULL, NULL,
        jsonb_build_object('revision', a->>'revision', 'pool', r.pool, 'token_id', k.id));
    END IF;
    RETURN jsonb_build_object('ok', true, 'result', jsonb_build_object('taskId', t.id, 'claimVersion', t.claim_version, 'revision', a->>'revision'));
  WHEN 'note.add' THEN
    IF k.task_id IS NOT NULL AND a ? 'taskId' AND a->>'taskId' IS DISTINCT FROM k.task_id THEN
      PERFORM baton.agent_invalid(format('a run token writes notes on its own task (%s) only', k.task_id));
    END IF;
    v_task := coalesce(k.task_id, a->>'taskId');
    IF v_task IS NULL THEN PERFORM baton.agent_invalid('taskId is required'); END IF;
    IF NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = v_task) THEN
      RAISE EXCEPTION 'task % does not exist', v_task USING ERRCODE = 'BT002';
    END IF;
    IF length(coalesce(a->>'text', '')) NOT BETWEEN 1 AND 10000 THEN PERFORM baton.agent_invalid('text must be 1 to 10000 characters'); END IF;
    INSERT INTO baton.task_notes (task_id, author, claim_version, body) VALUES (v_task, k.identity, k.claim_version, a->>'text');
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_notes(v_task)->-1);
  WHEN 'notes.list' THEN
    v_task := coalesce(a->>'taskId', k.task_id);
    IF v_task IS NULL THEN PERFORM baton.agent_invalid('taskId is required'); END IF;
    IF NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = v_task) THEN
      RAISE EXCEPTION 'task % does not exist', v_task USING ERRCODE = 'BT002';
    END IF;
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_notes(v_task));
  WHEN 'pool.claim' THEN
    IF coalesce(a->>'pool', '') !~ '^[a-z0-9][a-z0-9_-]{0,62}$' THEN
      PERFORM baton.agent_invalid(format('pool must be 1 to 63 lowercase letters, digits, _ or -, not %s', coalesce(a->>'pool', 'none')));
    END IF;
    v_secret_sha256 := decode(coalesce(a->>'runSecretSha256', ''), 'hex');
    SELECT r2.* INTO r FROM baton.pool_runs r2 JOIN baton.tasks t2 ON t2.id = r2.task_id
     WHERE r2.pool = a->>'pool' AND r2.agent IS NULL AND t2.status = 'running' AND t2.claim_version = r2.claim_version
     ORDER BY r2.offered_at, r2.task_id FOR UPDATE OF r2 SKIP LOCKED LIMIT 1;
    IF NOT FOUND THEN RETURN jsonb_build_object('ok', true, 'result', NULL); END IF;
    t := baton.lock_task(r.task_id);
    -- Its claim may have moved since the offer was read (recovered and claimed again): no run then.
    IF t.status <> 'running' OR t.claim_version <> r.claim_version THEN RETURN jsonb_build_object('ok', true, 'result', NULL); END IF;
    -- The run token may read, write notes and use objects as its taker may (admin: all three), take no
    -- further runs, and lives no longer than the token that took it.
    k := baton.agent_token_insert(k.identity,
      ARRAY(SELECT s FROM unnest(CASE WHEN 'admin' = ANY (k.scopes) THEN ARRAY['read', 'notes', 'objects'] ELSE k.scopes || ARRAY['read'] END) s
             WHERE s IN ('read', 'notes', 'objects')),
      k.expires_at, v_secret_sha256, k.identity, t.id, r.claim_version, k.id);
    UPDATE baton.pool_runs SET agent = k.identity, taken_at = now(), beat_at = now(), token_id = k.id
     WHERE task_id = r.task_id AND claim_version = r.claim_version;
    PERFORM baton.append_event('task', t.id, 'taken_from_pool', k.identity, t.claim_version, NULL, NULL,
      jsonb_build_object('pool', r.pool, 'token_id', k.id, 'worker', r.offered_by));
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_task_context(t, k) || jsonb_build_object('pool', r.pool, 'runTokenId', k.id));
  WHEN 'object.log' THEN
    o := baton.object_show(a->>'key', k.identity);
    IF NOT o.ok THEN RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'object', to_jsonb(o)); END IF;
    RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'object', to_jsonb(o), 'result', coalesce((
      SELECT jsonb_agg(jsonb_build_object('seq', e.subject_seq, 'kind', e.kind, 'actor', e.actor, 'at', baton.object_ts(e.at),
               'fence', e.fence, 'version', e.version, 'reason', e.reason, 'details', e.details) ORDER BY e.subject_seq)
        FROM baton.read_object_events(a->>'key', coalesce((a->>'afterSeq')::integer, 0), coalesce((a->>'limit')::integer, 1000)) e), '[]'::jsonb));
  ELSE
    o := CASE p_operation
      WHEN 'object.create' THEN baton.object_create(a->>'key', k.identity, coalesce((a->>'silenceTimeoutMs')::integer, 30000),
                                  coalesce(a->>'defaultAccess', 'none'), a->>'content', a->>'contentRef')
      WHEN 'object.grant' THEN baton.object_grant(a->>'key', k.identity, a->>'grantee', a->>'access')
      WHEN 'object.show' THEN baton.object_show(a->>'key', k.identity)
      WHEN 'object.read' THEN baton.object_read(a->>'key', k.identity)
      WHEN 'object.check' THEN baton.object_check_view(a->>'key', k.identity)
      WHEN 'object.take' THEN baton.object_take(a->>'key', k.identity, a->>'reason')
      WHEN 'object.write' THEN baton.object_write(a->>'key', k.identity, (a->>'version')::bigint, (a->>'token')::bigint, a->>'content', a->>'contentRef')
      WHEN 'object.heartbeat' THEN baton.object_heartbeat(a->>'key', k.identity, (a->>'token')::bigint)
      WHEN 'object.release' THEN baton.object_release(a->>'key', k.identity, (a->>'token')::bigint, a->>'reason')
      WHEN 'object.offer' THEN baton.object_offer(a->>'key', k.identity, (a->>'token')::bigint, (a->>'version')::bigint, a->>'successor')
      WHEN 'object.accept' THEN baton.object_accept(a->>'key', k.identity, (a->>'version')::bigint)
      WHEN 'object.decline' THEN baton.object_decline(a->>'key', k.identity, a->>'reason')
      WHEN 'object.withdraw' THEN baton.object_withdraw(a->>'key', k.identity, (a->>'token')::bigint)
      WHEN 'object.suggest' THEN baton.object_suggest(a->>'key', k.identity, (a->>'baseVersion')::bigint, a->>'content', a->>'contentRef', a->>'note')
      WHEN 'object.approve' THEN baton.object_approve(a->>'key', k.identity, (a->>'token')::bigint, (a->>'suggestionId')::bigint)
    END;
    RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'object', to_jsonb(o));
  END CASE;
END $$;
GRANT EXECUTE ON FUNCTION baton.agent_call TO baton_agent, baton_worker;
