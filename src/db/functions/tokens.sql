-- Agent tokens (SPEC U3, U7, T5, S6): API tokens people make (with note grants or without) and
-- the run tokens a worker issues for its claim. A token is stored as the SHA-256 of its secret; the
-- check every call of the agent API starts with is in agent_door.sql, which also issues a pooled
-- run's token (pool.claim). Token events are of subject 'agent' (the token's identity); bad input
-- raises BT003 (agent_invalid).
-- (Named to load after objects_rules.sql, whose helpers its SQL functions use.)

CREATE FUNCTION baton.agent_token_view(k baton.agent_tokens) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('id', k.id, 'identity', k.identity, 'scopes', to_jsonb(k.scopes), 'createdBy', k.created_by,
    'createdAt', baton.object_ts(k.created_at), 'expiresAt', baton.object_ts(k.expires_at),
    'revokedAt', baton.object_ts(k.revoked_at), 'revokedBy', k.revoked_by, 'lastUsedAt', baton.object_ts(k.last_used_at),
    'taskId', k.task_id, 'claimVersion', k.claim_version)
    -- A run token's notes are its run's (agent_notes_refusal); only tokens people made have grants.
    || CASE WHEN k.task_id IS NULL THEN jsonb_build_object('noteGrants', CASE WHEN k.note_graphs IS NOT NULL
         THEN jsonb_build_object('graphs', to_jsonb(k.note_graphs), 'tasks', to_jsonb(k.note_tasks)) END,
         'pools', to_jsonb(k.pools)) ELSE '{}'::jsonb END
$$;

CREATE FUNCTION baton.agent_token_insert(
  p_identity text, p_scopes text[], p_expires_at timestamptz, p_secret_sha256 bytea, p_created_by text,
  p_task_id text DEFAULT NULL, p_claim_version bigint DEFAULT NULL, p_parent_token_id text DEFAULT NULL,
  p_note_graphs text[] DEFAULT NULL, p_note_tasks text[] DEFAULT NULL, p_pools text[] DEFAULT NULL
) RETURNS baton.agent_tokens LANGUAGE plpgsql AS $$
DECLARE
  k baton.agent_tokens;
BEGIN
  PERFORM baton.object_check_actor(p_identity, 'identity');
  IF p_scopes IS NULL OR cardinality(p_scopes) = 0 OR NOT p_scopes <@ ARRAY['read', 'notes', 'objects', 'submit', 'view', 'approve', 'admin'] THEN
    PERFORM baton.agent_invalid(format('scopes must be some of read, notes, objects, submit, view, approve, admin, not %s', coalesce(array_to_string(p_scopes, ', '), 'none')));
  END IF;
  IF p_secret_sha256 IS NULL OR length(p_secret_sha256) <> 32 THEN PERFORM baton.agent_invalid('a token is stored as the 32-byte SHA-256 of its secret'); END IF;
  IF p_expires_at IS NOT NULL AND p_expires_at <= now() THEN
    PERFORM baton.agent_invalid(format('expiry %s is not in the future', baton.object_ts(p_expires_at)));
  END IF;
  INSERT INTO baton.agent_tokens (id, identity, scopes, secret_sha256, created_by, expires_at, task_id, claim_version, parent_token_id,
                                  note_graphs, note_tasks, pools)
  VALUES ('tok_' || substr(md5(random()::text || clock_timestamp()::text), 1, 16), p_identity,
          ARRAY(SELECT DISTINCT s FROM unnest(p_scopes) s ORDER BY s), p_secret_sha256, p_created_by, p_expires_at, p_task_id, p_claim_version,
          p_parent_token_id, p_note_graphs, p_note_tasks, p_pools)
  RETURNING * INTO k;
  RETURN k;
END $$;

-- An operator issues a token for an identity; the secret never reaches the database, only its hash.
-- Its expiry is computed by the database's clock, like every other time in baton. Graphs and tasks
-- given (either or both) are its note grants: it reads and writes the notes of those graphs' tasks
-- and of those tasks only. Given neither, it reaches every task's notes: an operator's token. Pools
-- given (U11) are the only ones it takes work from; given none, it may take from any.
CREATE FUNCTION baton.agent_token_create(
  p_identity text, p_scopes text[], p_expires_in_ms bigint, p_secret_sha256 bytea, p_created_by text,
  p_note_graphs text[] DEFAULT NULL, p_note_tasks text[] DEFAULT NULL, p_pools text[] DEFAULT NULL
) RETURNS jsonb LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  k baton.agent_tokens;
  v_graphs text[];
  v_tasks text[];
  v_pools text[];
  v_missing text;
BEGIN
  IF p_expires_in_ms IS NOT NULL AND p_expires_in_ms < 1 THEN PERFORM baton.agent_invalid('a token lives at least 1 ms'); END IF;
  IF p_pools IS NOT NULL THEN
    v_pools := ARRAY(SELECT DISTINCT p FROM unnest(p_pools) p ORDER BY p);
    IF cardinality(v_pools) NOT BETWEEN 1 AND 50 OR EXISTS (SELECT 1 FROM unnest(v_pools) p WHERE p IS NULL OR p !~ '^[a-z0-9][a-z0-9_-]{0,62}$') THEN
      PERFORM baton.agent_invalid(format('pools are 1 to 50 names of 1 to 63 lowercase letters, digits, _ or -, not %s',
        coalesce(array_to_string(p_pools, ', ', 'NULL'), 'none')));
    END IF;
  END IF;
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
    p_note_graphs => v_graphs, p_note_tasks => v_tasks, p_pools => v_pools);
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(k.identity));
  PERFORM baton.event_append('agent', k.identity, 'token_created', p_created_by, NULL, NULL, NULL,
    jsonb_build_object('token_id', k.id, 'scopes', to_jsonb(k.scopes), 'expires_at', k.expires_at)
      || CASE WHEN v_graphs IS NOT NULL THEN jsonb_build_object('note_graphs', to_jsonb(v_graphs), 'note_tasks', to_jsonb(v_tasks)) ELSE '{}'::jsonb END
      || CASE WHEN v_pools IS NOT NULL THEN jsonb_build_object('pools', to_jsonb(v_pools)) ELSE '{}'::jsonb END);
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
