-- Shared objects (SPEC O1-O4, O6): create, grant, show, read, take, write, heartbeat, release,
-- the stale-view check and the sweep of silent holders. Shared rules: objects_rules.sql.

CREATE FUNCTION baton.object_create(
  p_key text, p_actor text, p_silence_timeout_ms integer, p_default_access text DEFAULT 'none',
  p_content text DEFAULT NULL, p_content_ref text DEFAULT NULL
) RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF p_key IS NULL OR p_key !~ '^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$' THEN
    PERFORM baton.object_invalid(format('object key %L must be 1 to 200 letters, digits or ._/:@+- and start with a letter or digit', p_key));
  END IF;
  IF p_silence_timeout_ms IS NULL OR p_silence_timeout_ms NOT BETWEEN 1 AND 604800000 THEN
    PERFORM baton.object_invalid('silence timeout must be 1 ms to 7 days');
  END IF;
  IF baton.object_access_rank(p_default_access) IS NULL THEN
    PERFORM baton.object_invalid(format('access must be none, view, suggest or write, not %L', p_default_access));
  END IF;
  IF num_nonnulls(p_content, p_content_ref) > 1 THEN PERFORM baton.object_invalid('give at most one of content and content_ref'); END IF;
  INSERT INTO baton.objects (key, content, content_ref, version, silence_timeout_ms, default_access, created_by)
  VALUES (p_key, p_content, p_content_ref, CASE WHEN num_nonnulls(p_content, p_content_ref) > 0 THEN 1 ELSE 0 END,
          p_silence_timeout_ms, p_default_access, p_actor)
  ON CONFLICT (key) DO NOTHING
  RETURNING * INTO o;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'shared object % already exists', p_key USING ERRCODE = 'BT020';
  END IF;
  INSERT INTO baton.object_permissions (object_key, actor, access, granted_by) VALUES (o.key, p_actor, 'write', p_actor);
  PERFORM baton.event_append('object', o.key, 'created', p_actor, o.token, o.version, NULL,
    jsonb_build_object('default_access', p_default_access, 'silence_timeout_ms', p_silence_timeout_ms));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_create TO baton_worker, baton_client;

-- U11: the repository paths the object reserves (replacing those it reserved; none frees them):
-- a run whose commit changes one fails unless its agent holds the object. Only the creator may set
-- them, as it administers access. Each path: a pathspec glob relative to a repository's top, with no
-- '..' or empty part (the API and CLI check the form; this rejects what they would).
CREATE FUNCTION baton.object_reserve(p_key text, p_actor text, p_paths text[])
RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF p_paths IS NULL OR cardinality(p_paths) > 100 OR EXISTS (
       SELECT 1 FROM unnest(p_paths) x(p)
        WHERE p IS NULL OR length(p) NOT BETWEEN 1 AND 4096 OR p ~ '^[/:]' OR ('/' || p || '/') ~ '/\.\.?/' OR p ~ '//') THEN
    PERFORM baton.object_invalid('paths: at most 100, each relative to the repository''s top, with no ''..'', ''.'' or empty part');
  END IF;
  IF p_actor <> o.created_by THEN
    RETURN baton.object_refuse(o, p_actor, 'permission_refused', 'permission', 'reserve',
      format('only %s, who created %s, may reserve paths with it', o.created_by, o.key), '{}'::jsonb);
  END IF;
  UPDATE baton.objects SET paths = ARRAY(SELECT DISTINCT unnest(p_paths) ORDER BY 1) WHERE key = o.key RETURNING * INTO o;
  PERFORM baton.event_append('object', o.key, 'paths_reserved', p_actor, o.token, o.version,
    CASE WHEN cardinality(o.paths) = 0 THEN 'reserves no paths' ELSE 'reserves ' || array_to_string(o.paths, ', ') END,
    jsonb_build_object('paths', to_jsonb(o.paths)));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_reserve TO baton_worker, baton_client;

-- The identity a claim's agent acts as: whoever took it from a pool, else the task's run.agent,
-- else the task id (src/tasks/taskId.ts runAgentIdentity).
CREATE FUNCTION baton.task_agent_identity(t baton.tasks) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT w.agent FROM baton.pool_runs w WHERE w.task_id = t.id AND w.claim_version = t.claim_version),
    t.spec->'run'->>'agent', t.id)
$$;

-- U11: for the run of claim p_claim_version of task p_task_id (its owner asks, before it submits):
-- the objects reserving paths that the run's agent does not hold, each with its holder and paths.
CREATE FUNCTION baton.object_reservations_for(p_task_id text, p_claim_version bigint)
RETURNS TABLE (key text, holder text, paths text[]) LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  t baton.tasks;
BEGIN
  SELECT * INTO t FROM baton.tasks WHERE id = p_task_id AND claim_version = p_claim_version;
  IF NOT FOUND THEN RETURN; END IF;
  RETURN QUERY SELECT o.key, o.holder, o.paths FROM baton.objects o
    WHERE o.paths <> '{}' AND o.holder IS DISTINCT FROM baton.task_agent_identity(t) ORDER BY o.key;
END $$;
GRANT EXECUTE ON FUNCTION baton.object_reservations_for TO baton_worker;

-- U11: records on object p_key that the run of claim p_claim_version of task p_task_id changed
-- p_paths, which the object reserves, without its agent holding it; the run fails with the reason.
CREATE FUNCTION baton.object_paths_refused(p_key text, p_task_id text, p_claim_version bigint, p_paths text[])
RETURNS text LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  t baton.tasks;
  v_agent text;
  v_reason text;
BEGIN
  SELECT * INTO STRICT t FROM baton.tasks WHERE id = p_task_id;
  v_agent := baton.task_agent_identity(t);
  v_reason := format('the commit of %s (claim version %s) changes %s, reserved by %s, which %s',
    p_task_id, p_claim_version, array_to_string(p_paths[1:5], ', ') || CASE WHEN cardinality(p_paths) > 5
      THEN format(' and %s more', cardinality(p_paths) - 5) ELSE '' END,
    o.key, CASE WHEN o.holder IS NULL THEN 'nobody holds: take it first' ELSE format('%s holds, not %s', o.holder, v_agent) END);
  PERFORM baton.event_append('object', o.key, 'reserved_path_refused', v_agent, o.token, o.version, v_reason,
    jsonb_build_object('taskId', p_task_id, 'claimVersion', p_claim_version, 'paths', to_jsonb(p_paths), 'holder', o.holder));
  RETURN v_reason;
END $$;
GRANT EXECUTE ON FUNCTION baton.object_paths_refused TO baton_worker;

-- Only the creator administers access; the creator's own write access cannot be taken away.
CREATE FUNCTION baton.object_grant(p_key text, p_actor text, p_grantee text, p_access text)
RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_actor(p_grantee, 'grantee');
  IF baton.object_access_rank(p_access) IS NULL THEN
    PERFORM baton.object_invalid(format('access must be none, view, suggest or write, not %L', p_access));
  END IF;
  IF p_grantee = o.created_by THEN
    PERFORM baton.object_refuse_move(format('%s created %s and keeps write access', p_grantee, o.key));
  END IF;
  IF p_actor <> o.created_by THEN
    RETURN baton.object_refuse(o, p_actor, 'permission_refused', 'permission', 'grant',
      format('only %s, who created %s, may grant access to it', o.created_by, o.key), '{}'::jsonb);
  END IF;
  INSERT INTO baton.object_permissions (object_key, actor, access, granted_by) VALUES (o.key, p_grantee, p_access, p_actor)
  ON CONFLICT (object_key, actor) DO UPDATE SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = now();
  PERFORM baton.event_append('object', o.key, 'granted', p_actor, o.token, o.version, NULL,
    jsonb_build_object('grantee', p_grantee, 'access', p_access));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_grant TO baton_worker, baton_client;

-- The object as it stands, without recording a read; needs view access.
CREATE FUNCTION baton.object_show(p_key text, p_actor text) RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'view') THEN RETURN baton.object_refuse_access(o, p_actor, 'view', 'show'); END IF;
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_show TO baton_worker, baton_client;

-- The content and its version, recording that p_actor has now read this version (O4).
CREATE FUNCTION baton.object_read(p_key text, p_actor text) RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'view') THEN RETURN baton.object_refuse_access(o, p_actor, 'view', 'read'); END IF;
  PERFORM baton.object_record_view(o, p_actor);
  RETURN baton.object_outcome_of(o, true, p_with_content => true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_read TO baton_worker, baton_client;

-- Takes the role now, whoever holds it (O2): never waits for the holder, bumps the token and
-- records from whom and why. An open offer is accepted when its successor takes, and is
-- overtaken when anyone else does (O5).
CREATE FUNCTION baton.object_take(p_key text, p_actor text, p_reason text DEFAULT NULL)
RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  f baton.object_offers := baton.object_open_offer(p_key);
  v_kind text;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'take'); END IF;
  IF f.successor = p_actor THEN
    RETURN baton.object_outcome_of(baton.object_accept_offer(o, f, p_actor, 'take'), true);
  ELSIF o.holder = p_actor AND f.id IS NOT NULL THEN
    RETURN baton.object_refuse_offer_open(o, p_actor, 'take');
  ELSIF o.holder = p_actor AND NOT baton.object_is_silent(o, false) THEN
    -- Taking what one holds changes nothing, so a retried take returns the same token.
    RETURN baton.object_outcome_of(baton.object_touch(o), true);
  END IF;
  IF f.id IS NOT NULL THEN
    UPDATE baton.object_offers SET status = 'overtaken', closed_at = now(), closed_by = p_actor WHERE id = f.id;
    PERFORM baton.event_append('object', o.key, 'overtaken', p_actor, o.token, f.version,
      format('offer from %s to %s at version %s overtaken by %s', f.giver, f.successor, f.version, p_actor),
      jsonb_build_object('offer_id', f.id, 'giver', f.giver, 'successor', f.successor, 'by', p_actor));
  END IF;
  v_kind := CASE WHEN o.holder IS NULL THEN 'taken'
                 WHEN baton.object_is_silent(o, f.id IS NOT NULL) THEN 'reclaimed_after_silence'
                 ELSE 'taken_over' END;
  o := baton.object_move_role(o, p_actor, v_kind, p_actor,
    CASE v_kind WHEN 'taken' THEN coalesce(p_reason, 'the role was free')
                WHEN 'reclaimed_after_silence' THEN baton.object_silence_reason(o)
                ELSE coalesce(p_reason, format('taken over from %s', o.holder)) END,
    CASE WHEN v_kind = 'reclaimed_after_silence'
         THEN baton.object_silence_details(o, 'take') || jsonb_build_object('requested_reason', p_reason)
         ELSE '{}'::jsonb END);
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_take TO baton_worker, baton_client;

-- Compare-and-swap write (O3): names the version read and the fencing token. The named successor
-- of an open offer accepts it by writing with the token in force (O5).
CREATE FUNCTION baton.object_write(
  p_key text, p_actor text, p_version bigint, p_token bigint, p_content text DEFAULT NULL, p_content_ref text DEFAULT NULL
) RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  f baton.object_offers;
  refused baton.object_outcome;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_content(p_content, p_content_ref);
  IF p_version IS NULL OR p_token IS NULL THEN PERFORM baton.object_invalid('a write names the version read and the token'); END IF;
  o := baton.object_expire_if_silent(o, p_actor, 'write');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'write'); END IF;
  f := baton.object_open_offer(o.key);
  IF f.successor = p_actor AND p_token = o.token THEN
    IF p_version <> o.version THEN RETURN baton.object_refuse_version(o, p_actor, p_version, 'write'); END IF;
    o := baton.object_accept_offer(o, f, p_actor, 'write');
    p_token := o.token;
    f := NULL;
  END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'write');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  IF f.id IS NOT NULL THEN RETURN baton.object_refuse_offer_open(o, p_actor, 'write'); END IF;
  IF p_version <> o.version THEN RETURN baton.object_refuse_version(o, p_actor, p_version, 'write'); END IF;
  UPDATE baton.objects
     SET content = p_content, content_ref = p_content_ref, version = version + 1, holder_heartbeat_at = now(), updated_at = now()
   WHERE key = o.key
  RETURNING * INTO o;
  PERFORM baton.object_record_view(o, p_actor);
  PERFORM baton.event_append('object', o.key, 'written', p_actor, o.token, o.version, NULL,
    jsonb_build_object('from_version', p_version, 'digest', md5(coalesce(p_content, p_content_ref))));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_write TO baton_worker, baton_client;

-- Proves the holder is alive. Not an event: heartbeats are not changes, and the reclaim event
-- records the last one. Allowed while an offer is open (it changes nothing the successor gets).
CREATE FUNCTION baton.object_heartbeat(p_key text, p_actor text, p_token bigint) RETURNS baton.object_outcome
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  refused baton.object_outcome;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  o := baton.object_expire_if_silent(o, p_actor, 'heartbeat');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'heartbeat'); END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'heartbeat');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  RETURN baton.object_outcome_of(baton.object_touch(o), true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_heartbeat TO baton_worker, baton_client;

CREATE FUNCTION baton.object_release(p_key text, p_actor text, p_token bigint, p_reason text DEFAULT NULL)
RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  refused baton.object_outcome;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  o := baton.object_expire_if_silent(o, p_actor, 'release');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'release'); END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'release');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  IF (baton.object_open_offer(o.key)).id IS NOT NULL THEN RETURN baton.object_refuse_offer_open(o, p_actor, 'release'); END IF;
  o := baton.object_move_role(o, p_actor, 'released', NULL, coalesce(p_reason, format('released by %s', p_actor)));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_release TO baton_worker, baton_client;

-- The check before an irreversible step (O4): refuses when p_actor's last read is not the
-- current version.
CREATE FUNCTION baton.object_check_view(p_key text, p_actor text) RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  v_read bigint;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'view') THEN RETURN baton.object_refuse_access(o, p_actor, 'view', 'check_view'); END IF;
  SELECT version INTO v_read FROM baton.object_read_views WHERE object_key = o.key AND actor = p_actor;
  IF v_read IS NULL THEN
    RETURN baton.object_refuse(o, p_actor, 'stale_view_refused', 'stale_view', 'check_view',
      format('%s has not read %s', p_actor, o.key), '{}'::jsonb);
  ELSIF v_read <> o.version THEN
    RETURN baton.object_refuse(o, p_actor, 'stale_view_refused', 'stale_view', 'check_view',
      format('%s read version %s of %s; version moved from %s to %s', p_actor, v_read, o.key, v_read, o.version),
      jsonb_build_object('read_version', v_read));
  END IF;
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_check_view TO baton_worker, baton_client;

-- Records the loss of every silent holder nobody has touched since; skips objects in use.
CREATE FUNCTION baton.object_sweep(p_actor text)
RETURNS TABLE (object_key text, silent_holder text, token bigint) LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  FOR o IN
    SELECT x.* FROM baton.objects x
     WHERE x.holder IS NOT NULL
       AND x.holder_heartbeat_at + make_interval(secs => x.silence_timeout_ms / 1000.0) < now()
       AND NOT EXISTS (SELECT 1 FROM baton.object_offers f WHERE f.object_key = x.key AND f.status = 'open')
     ORDER BY x.key
       FOR NO KEY UPDATE SKIP LOCKED
  LOOP
    object_key := o.key;
    silent_holder := o.holder;
    o := baton.object_expire_if_silent(o, p_actor, 'sweep');
    token := o.token;
    RETURN NEXT;
  END LOOP;
END $$;
GRANT EXECUTE ON FUNCTION baton.object_sweep TO baton_worker, baton_client;
