-- baton.agent_call (SPEC U3, U7, T5, S6), the one function through which the agent API acts, with
-- pooled runs and the reach of a token's notes. It checks the token (tokens.sql), refuses a token
-- without the operation's scope, a run token whose claim has moved, and notes the token was not
-- granted, and performs the operation with the token's identity as the actor. No argument names
-- the actor. Refusals are events of subject 'agent' (the token's identity), or, for a run token
-- whose claim moved, the task's stale_write_refused; they are returned, never raised, so their
-- events commit; bad input raises BT003. (Loads after tokens.sql, whose functions it uses.)

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

-- U7: the worker holding a claim offers its run to the agents of a pool (a fenced owner write).
CREATE FUNCTION baton.pool_offer(p_task_id text, p_owner text, p_claim_version bigint, p_pool text)
RETURNS baton.fenced_result LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF NOT baton.claim_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'pool offer');
  END IF;
  INSERT INTO baton.pool_runs (task_id, claim_version, pool, offered_by) VALUES (p_task_id, p_claim_version, p_pool, p_owner)
  ON CONFLICT (task_id, claim_version) DO NOTHING;
  IF FOUND THEN
    PERFORM baton.event_append('task', p_task_id, 'offered_to_pool', p_owner, p_claim_version, NULL, NULL, jsonb_build_object('pool', p_pool));
  END IF;
  RETURN baton.claim_accept_write(p_task_id);
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

-- S6: NULL when token k may read (notes.list) or write (note.add) the notes of task p_task; else the
-- refusal, recorded. A run token: its own task's, and reading those of the upstream tasks its task is
-- pinned to (what `context` shows it). A token people made with note grants: those graphs' tasks and
-- those tasks. Without grants: every task's (an operator's token). Asked before the task is looked
-- up, so a token learns nothing of tasks outside its reach, not even whether they exist.
CREATE FUNCTION baton.agent_notes_refusal(k baton.agent_tokens, p_operation text, p_task text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_writes boolean := p_operation = 'note.add';
  v_asked jsonb := jsonb_build_object('requested_task_id', p_task);
BEGIN
  IF k.task_id IS NOT NULL THEN
    IF p_task = k.task_id THEN RETURN NULL; END IF;
    IF v_writes THEN
      RETURN baton.agent_refuse(k, p_operation, 'not_granted',
        format('run token %s of %s writes notes of its own task %s only, not of task %s', k.id, k.identity, k.task_id, p_task), v_asked);
    END IF;
    IF EXISTS (SELECT 1 FROM baton.task_dependencies d WHERE d.task_id = k.task_id AND d.depends_on = p_task) THEN RETURN NULL; END IF;
    RETURN baton.agent_refuse(k, p_operation, 'not_granted',
      format('run token %s of %s reads the notes of its own task %s and of the upstream tasks it is pinned to only, not of task %s',
        k.id, k.identity, k.task_id, p_task), v_asked);
  END IF;
  IF k.note_graphs IS NULL THEN RETURN NULL; END IF;
  IF p_task = ANY (k.note_tasks) OR EXISTS (SELECT 1 FROM baton.tasks t WHERE t.id = p_task AND t.graph_id = ANY (k.note_graphs)) THEN
    RETURN NULL;
  END IF;
  RETURN baton.agent_refuse(k, p_operation, 'not_granted',
    format('token %s of %s may read and write the notes of %s only, not of task %s', k.id, k.identity,
      concat_ws(' and ', CASE WHEN cardinality(k.note_graphs) > 0 THEN 'graph ' || array_to_string(k.note_graphs, ', ') END,
                         CASE WHEN cardinality(k.note_tasks) > 0 THEN 'task ' || array_to_string(k.note_tasks, ', ') END), p_task), v_asked);
END $$;

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
    t := baton.task_lock(k.task_id);
    IF t.claim_version <> k.claim_version OR t.status <> 'running' THEN
      -- T4: the claim this run token was issued for has moved on; like any late owner write.
      PERFORM baton.claim_refuse_stale_write(k.task_id, k.identity, k.claim_version, p_operation);
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
      PERFORM baton.event_append('task', t.id, 'agent_submitted', k.identity, t.claim_version, NULL, NULL,
        jsonb_build_object('revision', a->>'revision', 'pool', r.pool, 'token_id', k.id));
    END IF;
    RETURN jsonb_build_object('ok', true, 'result', jsonb_build_object('taskId', t.id, 'claimVersion', t.claim_version, 'revision', a->>'revision'));
  WHEN 'note.add', 'notes.list' THEN
    v_task := coalesce(a->>'taskId', k.task_id);
    -- Well-formed (taskId is optional, for run tokens): a token with no task of its own names no task (S7).
    IF v_task IS NULL THEN RAISE EXCEPTION 'token % has no task of its own: name one with taskId', k.id USING ERRCODE = 'BT002'; END IF;
    v_refusal := baton.agent_notes_refusal(k, p_operation, v_task);
    IF v_refusal IS NOT NULL THEN RETURN v_refusal; END IF;
    IF NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = v_task) THEN
      RAISE EXCEPTION 'task % does not exist', v_task USING ERRCODE = 'BT002';
    END IF;
    IF p_operation = 'notes.list' THEN RETURN jsonb_build_object('ok', true, 'result', baton.agent_notes(v_task)); END IF;
    IF length(coalesce(a->>'text', '')) NOT BETWEEN 1 AND 10000 THEN PERFORM baton.agent_invalid('text must be 1 to 10000 characters'); END IF;
    INSERT INTO baton.task_notes (task_id, author, claim_version, body) VALUES (v_task, k.identity, k.claim_version, a->>'text');
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_notes(v_task)->-1);
  WHEN 'pool.claim' THEN
    IF coalesce(a->>'pool', '') !~ '^[a-z0-9][a-z0-9_-]{0,62}$' THEN
      PERFORM baton.agent_invalid(format('pool must be 1 to 63 lowercase letters, digits, _ or -, not %s', coalesce(a->>'pool', 'none')));
    END IF;
    v_secret_sha256 := decode(coalesce(a->>'runSecretSha256', ''), 'hex');
    SELECT r2.* INTO r FROM baton.pool_runs r2 JOIN baton.tasks t2 ON t2.id = r2.task_id
     WHERE r2.pool = a->>'pool' AND r2.agent IS NULL AND t2.status = 'running' AND t2.claim_version = r2.claim_version
     ORDER BY r2.offered_at, r2.task_id FOR UPDATE OF r2 SKIP LOCKED LIMIT 1;
    IF NOT FOUND THEN RETURN jsonb_build_object('ok', true, 'result', NULL); END IF;
    t := baton.task_lock(r.task_id);
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
    PERFORM baton.event_append('task', t.id, 'taken_from_pool', k.identity, t.claim_version, NULL, NULL,
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
