-- The agent door (SPEC U3, U7, T5, S6): baton.agent_call, the one function through which the agent
-- API acts, the token check every call starts with (agent_authenticate), and the operations a token
-- may call (agent_operations, its MCP tool list). A token is found by the
-- SHA-256 of its secret (tokens.sql); a revoked or expired token is refused, and so is a command
-- run's token outside its run, a token without the operation's scope, a run token whose claim has
-- moved, and notes the token was not granted. The operation is performed with the token's identity
-- as the actor: no argument names the actor. Refusals of tokens baton issued are events of subject
-- 'agent' (the token's identity), or, for a run token whose claim moved, the task's
-- stale_write_refused. A token baton did not issue is refused without an event each: the API
-- throttles those per client address and records them as summaries (agent_refusals_summarise;
-- src/api/tokenGate.ts). Refusals are returned, never raised, so their events commit; bad input
-- raises BT003.

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

-- The scope an operation needs; 'run' means a run token (bound to a claim). NULL: no such operation.
CREATE FUNCTION baton.agent_operation_scope(p_operation text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN p_operation IN ('whoami', 'notes.list', 'object.show', 'object.read', 'object.check', 'object.log', 'inbox.wait', 'objects.list') THEN 'read'
    WHEN p_operation = 'note.add' THEN 'notes'
    WHEN p_operation IN ('object.create', 'object.grant', 'object.reserve', 'object.take', 'object.write', 'object.heartbeat', 'object.release',
                         'object.offer', 'object.accept', 'object.decline', 'object.withdraw', 'object.suggest', 'object.approve') THEN 'objects'
    WHEN p_operation = 'pool.claim' THEN 'submit'
    WHEN p_operation IN ('context', 'heartbeat', 'submit', 'tool.call', 'task.propose') THEN 'run'
    WHEN p_operation IN ('graphs.list', 'graph.show', 'task.show', 'events.list', 'pools.list', 'proposals.list') THEN 'view'
    WHEN p_operation IN ('tokens.list', 'task.cancel', 'graph.cancel', 'task.rerun', 'graph.add', 'proposal.accept', 'proposal.decline') THEN 'admin'
    WHEN p_operation IN ('approvals.list', 'task.approve', 'task.reject') THEN 'approve'
  END
$$;

-- Why token k may not call p_operation (whose scope is p_scope), in a word, or NULL when it may:
-- 'not_a_run' for a run operation without a run token, and for a run token taking another run;
-- 'limited' for the operator's views (agent_views.sql) with a run token or one limited to some notes;
-- 'scope' for a token without the scope (admin has every scope; view includes read). Records nothing: agent_call records
-- the refusal, and agent_operations lists what passes.
CREATE FUNCTION baton.agent_scope_denial(k baton.agent_tokens, p_operation text, p_scope text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN p_scope = 'run' THEN CASE WHEN k.task_id IS NULL THEN 'not_a_run' END
    WHEN k.task_id IS NOT NULL AND p_operation = 'pool.claim' THEN 'not_a_run'
    WHEN (k.task_id IS NOT NULL OR k.note_graphs IS NOT NULL)
     AND p_operation IN ('graphs.list', 'graph.show', 'task.show', 'events.list', 'pools.list', 'tokens.list',
                         'task.cancel', 'graph.cancel', 'task.rerun', 'graph.add', 'approvals.list', 'task.approve', 'task.reject') THEN 'limited'
    -- admin has every scope; view includes read (who sees the whole deployment reads what an agent reads).
    WHEN NOT (p_scope = ANY (k.scopes) OR 'admin' = ANY (k.scopes) OR (p_scope = 'read' AND 'view' = ANY (k.scopes))) THEN 'scope'
  END
$$;

-- Which of p_operations token p_secret may call, in the order given: what its MCP tool list shows
-- (src/api/agentMcp.ts). The same rules as agent_call's (agent_scope_denial); a token agent_call
-- would refuse outright is refused the same way. Acts on nothing.
CREATE FUNCTION baton.agent_operations(p_secret text, p_operations text[]) RETURNS jsonb LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  k baton.agent_tokens := baton.agent_token_by_secret(p_secret);
  v_refusal jsonb := baton.agent_token_refusal(k, NULL);
BEGIN
  IF v_refusal IS NOT NULL THEN RETURN v_refusal; END IF;
  RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'result', to_jsonb(ARRAY(
    SELECT o FROM unnest(p_operations) WITH ORDINALITY AS x (o, n)
     WHERE baton.agent_operation_scope(o) IS NOT NULL AND baton.agent_scope_denial(k, o, baton.agent_operation_scope(o)) IS NULL
     ORDER BY n)));
END $$;
GRANT EXECUTE ON FUNCTION baton.agent_operations TO baton_agent, baton_worker;

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

-- A task's notes, oldest first. PL/pgSQL, resolved when it runs: this file loads before
-- objects_rules.sql (object_ts), and a LANGUAGE sql body is checked when it is created.
CREATE FUNCTION baton.agent_notes(p_task_id text) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object('id', n.id, 'author', n.author, 'claimVersion', n.claim_version,
           'body', n.body, 'at', baton.object_ts(n.at)) ORDER BY n.id), '[]'::jsonb)
    FROM baton.task_notes n WHERE n.task_id = p_task_id);
END $$;

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
  v_denial text;
  t baton.tasks;
  r baton.pool_runs;
  o baton.object_outcome;
  v_task text;
  v_secret_sha256 bytea;
  v_outcome jsonb;
BEGIN
  IF v_scope IS NULL THEN PERFORM baton.agent_invalid(format('unknown operation %L', p_operation)); END IF;
  IF jsonb_typeof(a) <> 'object' THEN PERFORM baton.agent_invalid('the arguments must be a JSON object'); END IF;
  v_refusal := baton.agent_token_refusal(k, p_operation);
  IF v_refusal IS NOT NULL THEN RETURN v_refusal; END IF;
  v_denial := baton.agent_scope_denial(k, p_operation, v_scope);
  -- Before a run token's claim is looked at (and locked): a view is no run's business.
  IF v_denial = 'limited' THEN
    RETURN baton.agent_refuse(k, p_operation, 'limited', format('%s shows the whole deployment; token %s of %s is limited to %s',
      p_operation, k.id, k.identity, CASE WHEN k.task_id IS NOT NULL THEN format('its run of task %s', k.task_id) ELSE 'the notes it was granted' END));
  END IF;
  IF k.task_id IS NOT NULL AND v_denial = 'not_a_run' THEN
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
  ELSIF v_denial = 'not_a_run' THEN
    RETURN baton.agent_refuse(k, p_operation, 'not_a_run',
      format('%s needs a run token (one a run gives its agent, or pool.claim returns); token %s of %s is not bound to a claim', p_operation, k.id, k.identity));
  END IF;
  IF v_denial = 'scope' THEN
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
  WHEN 'task.propose' THEN
    IF jsonb_typeof(a->'tasks') IS DISTINCT FROM 'array' THEN PERFORM baton.agent_invalid('tasks must be a list of subtasks'); END IF;
    v_outcome := baton.task_propose(t, k.identity, a->'tasks');
    IF v_outcome ? 'refusal' THEN RETURN baton.agent_refuse(k, p_operation, v_outcome->>'refusal', v_outcome->>'reason'); END IF;
    RETURN jsonb_build_object('ok', true, 'result', v_outcome);
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
    -- U11: a token limited to some pools takes work from those only; the refusal is recorded.
    IF k.pools IS NOT NULL AND NOT (a->>'pool' = ANY (k.pools)) THEN
      RETURN baton.agent_refuse(k, p_operation, 'not_granted',
        format('token %s of %s may take work from pool %s only, not from %s', k.id, k.identity, array_to_string(k.pools, ', '), a->>'pool'),
        jsonb_build_object('requested_pool', a->>'pool'));
    END IF;
    v_secret_sha256 := decode(coalesce(a->>'runSecretSha256', ''), 'hex');
    -- U11: the offer of the graph of the highest priority (policy.priority, 1 first); among graphs of one
    -- priority, of the graph with the fewest of this pool's runs taken and not submitted (graphs in
    -- turn, not first come first served); then the oldest.
    SELECT r2.* INTO r FROM baton.pool_runs r2 JOIN baton.tasks t2 ON t2.id = r2.task_id JOIN baton.graphs g2 ON g2.id = t2.graph_id
     WHERE r2.pool = a->>'pool' AND r2.agent IS NULL AND t2.status = 'running' AND t2.claim_version = r2.claim_version
     ORDER BY coalesce((g2.spec->'policy'->>'priority')::integer, 3),
              (SELECT count(*) FROM baton.pool_runs x JOIN baton.tasks y ON y.id = x.task_id
                WHERE x.pool = r2.pool AND x.agent IS NOT NULL AND x.revision IS NULL AND y.graph_id = t2.graph_id
                  AND y.status = 'running' AND y.claim_version = x.claim_version),
              r2.offered_at, r2.task_id
     FOR UPDATE OF r2 SKIP LOCKED LIMIT 1;
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
  WHEN 'graphs.list', 'graph.show', 'task.show', 'events.list', 'objects.list', 'pools.list', 'tokens.list',
       'task.cancel', 'graph.cancel', 'task.rerun', 'graph.add', 'approvals.list', 'task.approve', 'task.reject', 'inbox.wait',
       'proposals.list', 'proposal.accept', 'proposal.decline' THEN
    RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'result', baton.agent_view(k, p_operation, a));
  WHEN 'object.log' THEN
    o := baton.object_show(a->>'key', k.identity);
    IF NOT o.ok THEN RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'object', to_jsonb(o)); END IF;
    RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'object', to_jsonb(o), 'result', coalesce((
      SELECT jsonb_agg(jsonb_build_object('seq', e.subject_seq, 'kind', e.kind, 'actor', e.actor, 'at', baton.object_ts(e.at),
               'fence', e.fence, 'version', e.version, 'reason', e.reason, 'details', e.details) ORDER BY e.subject_seq)
        FROM baton.object_read_events(a->>'key', coalesce((a->>'afterSeq')::integer, 0), coalesce((a->>'limit')::integer, 1000)) e), '[]'::jsonb));
  ELSE
    o := CASE p_operation
      WHEN 'object.create' THEN baton.object_create(a->>'key', k.identity, coalesce((a->>'silenceTimeoutMs')::integer, 30000),
                                  coalesce(a->>'defaultAccess', 'none'), a->>'content', a->>'contentRef')
      WHEN 'object.grant' THEN baton.object_grant(a->>'key', k.identity, a->>'grantee', a->>'access')
      WHEN 'object.reserve' THEN baton.object_reserve(a->>'key', k.identity, ARRAY(SELECT jsonb_array_elements_text(a->'paths')))
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
