-- The operator's views and actions (SPEC U4), answered by baton.agent_call for the page `baton
-- serve` serves (src/api/operatorPage.ts, ui/) and for any client of the agent API: graphs, a graph's
-- tasks, a task with its timeline, verifications, notes and tool-call ledger, the event log after an
-- id (the page's live feed), shared objects, pools and tokens. The views need the view scope (admin
-- includes it) on a token people made without note grants: they show the whole deployment, which
-- no agent's token sees unless it is given it, and a run's token or a token limited to some graphs'
-- notes never. The actions (cancel a task or a graph, rerun a
-- task) need the admin scope and are recorded under the token's identity, as any operator's are.
-- PL/pgSQL throughout: these are resolved when they run, so they may use what later files define.

-- Events as the page reads them: database time, actor, claim version (fence) and reason.
CREATE FUNCTION baton.agent_view_events(p_events baton.events[]) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object('id', e.id, 'subjectKind', e.subject_kind, 'subjectId', e.subject_id,
           'seq', e.subject_seq, 'kind', e.kind, 'actor', e.actor, 'at', baton.object_ts(e.at), 'fence', e.fence,
           'version', e.version, 'reason', e.reason, 'details', e.details) ORDER BY e.id), '[]'::jsonb)
    FROM unnest(p_events) e);
END $$;

-- graphs.list: newest first, narrowed by state, age (seconds) and a search of id and submitter.
CREATE FUNCTION baton.agent_view_graphs(a jsonb) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object('id', g.id, 'submittedBy', g.submitted_by, 'submittedAt', baton.object_ts(g.submitted_at),
           'tasks', g.tasks, 'counts', g.counts, 'state', g.state) ORDER BY g.submitted_at DESC, g.id DESC), '[]'::jsonb)
    FROM baton.graph_list(a->>'state', make_interval(secs => (a->>'submittedWithinSeconds')::double precision),
                          coalesce((a->>'limit')::integer, 100), nullif(a->>'search', '')) g);
END $$;

-- A task as the graph view draws it.
CREATE FUNCTION baton.agent_view_task_summary(t baton.task_view) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN jsonb_build_object('id', t.id, 'key', t.key, 'status', t.status, 'owner', t.owner, 'claimVersion', t.claim_version,
    'attempts', t.attempts, 'dependsOn', to_jsonb(t.depends_on), 'leaseExpired', t.lease_expired,
    'description', t.spec->>'description', 'pool', t.spec->'run'->>'pool');
END $$;

-- graph.show: the graph (who submitted it, where it works, its policy) and every task, by key.
CREATE FUNCTION baton.agent_view_graph(p_graph_id text) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  g baton.graphs;
BEGIN
  SELECT * INTO g FROM baton.graphs WHERE id = p_graph_id;
  IF NOT FOUND THEN RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002'; END IF;
  RETURN jsonb_build_object('id', g.id, 'submittedBy', g.submitted_by, 'submittedAt', baton.object_ts(g.submitted_at),
    'repo', g.repo, 'base', g.base, 'policy', g.spec->'policy',
    'tasks', (SELECT coalesce(jsonb_agg(baton.agent_view_task_summary(v) ORDER BY v.key), '[]'::jsonb)
                FROM baton.tasks t, baton.task_view(t) v WHERE t.graph_id = p_graph_id));
END $$;

-- task.show: the task, its verifications with their output tails, notes, ownership timeline,
-- tool-call ledger and pooled runs.
CREATE FUNCTION baton.agent_view_task(p_task_id text) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  v baton.task_view;
BEGIN
  SELECT x.* INTO v FROM baton.tasks t, baton.task_view(t) x WHERE t.id = p_task_id;
  IF NOT FOUND THEN RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002'; END IF;
  RETURN baton.agent_view_task_summary(v) || jsonb_build_object('graphId', v.graph_id, 'spec', v.spec,
    'claimedAt', baton.object_ts(v.claimed_at), 'leaseExpiresAt', baton.object_ts(v.lease_expires_at), 'progress', v.progress,
    'artifact', v.artifact, 'verifiedRevision', v.verified_revision, 'upstreamRevisions', v.upstream_revisions,
    'verifications', (SELECT coalesce(jsonb_agg(jsonb_build_object('id', x.id, 'claimVersion', x.claim_version, 'revision', x.revision,
         'command', x.command, 'exitCode', x.exit_code, 'passed', x.passed, 'verifier', x.verifier, 'at', baton.object_ts(x.at),
         'outputDigest', x.output_digest, 'outputTail', right(x.output_tail, 4000)) ORDER BY x.id), '[]'::jsonb)
       FROM baton.verifications x WHERE x.task_id = p_task_id),
    'notes', baton.agent_notes(p_task_id),
    'events', baton.agent_view_events(ARRAY(SELECT e FROM baton.events e WHERE e.subject_kind = 'task' AND e.subject_id = p_task_id ORDER BY e.id)),
    'toolCalls', (SELECT coalesce(jsonb_agg(jsonb_build_object('step', c.step, 'tool', c.tool, 'status', c.status,
         'reconciled', c.status LIKE 'reconciled_%', 'owner', c.owner, 'claimVersion', c.claim_version, 'attempts', c.attempts,
         'result', c.result, 'error', c.error, 'createdAt', baton.object_ts(c.created_at), 'updatedAt', baton.object_ts(c.updated_at))
         ORDER BY c.created_at, c.step), '[]'::jsonb)
       FROM baton.tool_calls c WHERE c.task_id = p_task_id),
    'poolRuns', (SELECT coalesce(jsonb_agg(jsonb_build_object('claimVersion', r.claim_version, 'pool', r.pool, 'offeredBy', r.offered_by,
         'offeredAt', baton.object_ts(r.offered_at), 'agent', r.agent, 'takenAt', baton.object_ts(r.taken_at),
         'beatAt', baton.object_ts(r.beat_at), 'revision', r.revision) ORDER BY r.claim_version), '[]'::jsonb)
       FROM baton.pool_runs r WHERE r.task_id = p_task_id),
    'approvals', (SELECT coalesce(jsonb_agg(baton.approval_view(a) ORDER BY a.id), '[]'::jsonb) FROM baton.approvals a WHERE a.task_id = p_task_id));
END $$;

-- events.list: the log after an id, oldest first, of one graph (its tasks and the graph) or of
-- everything token k may see (an object's only with view access to it, refused calls of agents
-- only with admin); without afterId, none, only the id to follow from.
CREATE FUNCTION baton.agent_view_event_log(k baton.agent_tokens, a jsonb) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_graph text := a->>'graphId';
  v_limit integer := coalesce((a->>'limit')::integer, 500);
  v_events baton.events[];
BEGIN
  -- An unknown graph is said at once, not waited on.
  IF v_graph IS NOT NULL AND NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = v_graph) THEN
    RAISE EXCEPTION 'graph % does not exist', v_graph USING ERRCODE = 'BT002';
  END IF;
  IF a->'afterId' IS NULL OR jsonb_typeof(a->'afterId') = 'null' THEN
    RETURN jsonb_build_object('events', '[]'::jsonb, 'lastId', (SELECT coalesce(max(id), 0) FROM baton.events));
  END IF;
  v_events := ARRAY(SELECT e FROM baton.events e WHERE e.id > (a->>'afterId')::bigint
    AND (v_graph IS NULL OR (e.subject_kind = 'graph' AND e.subject_id = v_graph)
         OR (e.subject_kind = 'task' AND e.subject_id LIKE baton.task_id_pattern_of(v_graph)))
    AND CASE e.subject_kind
          WHEN 'object' THEN 'admin' = ANY (k.scopes)
            OR EXISTS (SELECT 1 FROM baton.objects o WHERE o.key = e.subject_id AND baton.object_may(o, k.identity, 'view'))
          WHEN 'agent' THEN 'admin' = ANY (k.scopes)
          ELSE true END
    ORDER BY e.id LIMIT v_limit);
  RETURN jsonb_build_object('events', baton.agent_view_events(v_events),
    'lastId', coalesce((SELECT max(x.id) FROM unnest(v_events) x), (a->>'afterId')::bigint));
END $$;

-- U11: why event e concerns token k's identity, in a word, or NULL when it does not: an offer made
-- to it (offer) or withdrawn from it, one it made accepted or declined (offer_answered), a role it
-- held taken over or lost to silence (role_lost), a grant on an object (granted), a suggestion on an
-- object it holds now (suggestion), a call of its refused (refused), a decision on subtasks it
-- proposed (proposal_answered), and, for a token that may decide them, a task awaiting approval
-- (approval; approve, admin) and subtasks waiting for an operator (proposal; admin).
CREATE FUNCTION baton.inbox_reason(k baton.agent_tokens, e baton.events) RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN CASE
    WHEN e.kind = 'offered' AND e.details->>'successor' = k.identity THEN 'offer'
    WHEN e.kind = 'withdrawn' AND e.details->>'successor' = k.identity THEN 'offer_answered'
    WHEN e.kind IN ('declined', 'accepted') AND e.subject_kind = 'object'
     AND coalesce(e.details->>'giver', e.details->>'from') = k.identity THEN 'offer_answered'
    WHEN e.kind IN ('taken_over', 'reclaimed_after_silence') AND e.subject_kind = 'object'
     AND e.details->>'from' = k.identity AND e.actor <> k.identity THEN 'role_lost'
    WHEN e.kind = 'granted' AND e.details->>'grantee' = k.identity THEN 'granted'
    WHEN e.kind = 'suggested' AND e.actor <> k.identity
     AND EXISTS (SELECT 1 FROM baton.objects o WHERE o.key = e.subject_id AND o.holder = k.identity) THEN 'suggestion'
    WHEN e.actor = k.identity AND e.kind LIKE '%\_refused' THEN 'refused'
    WHEN e.kind = 'api_refused' AND e.subject_kind = 'agent' AND e.subject_id = k.identity THEN 'refused'
    WHEN e.kind = 'approval_requested' AND ('approve' = ANY (k.scopes) OR 'admin' = ANY (k.scopes)) THEN 'approval'
    WHEN e.kind = 'subtasks_proposed' AND e.details->>'policy' = 'review' AND 'admin' = ANY (k.scopes) THEN 'proposal'
    WHEN e.kind = 'proposal_decided' AND e.details->>'proposedBy' = k.identity THEN 'proposal_answered'
  END;
END $$;

-- U11: inbox.wait: the events after p_after_id that concern token k's identity (inbox_reason), oldest
-- first, each with why; `lastId` is where to follow from: the last one returned, or, when fewer than
-- the limit concern it, the last event of the log older than a minute (an event is written in its
-- store call's transaction, so one a minute old has long been committed: none is skipped).
CREATE FUNCTION baton.agent_inbox(k baton.agent_tokens, a jsonb) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_after bigint := coalesce((a->>'afterId')::bigint, 0);
  v_limit integer := coalesce((a->>'limit')::integer, 100);
  v_items jsonb;
  v_count integer;
  v_last bigint;
BEGIN
  SELECT coalesce(jsonb_agg(baton.agent_view_events(ARRAY[x.e])->0 || jsonb_build_object('why', x.why) ORDER BY (x.e).id), '[]'::jsonb),
         count(*), max((x.e).id)
    INTO v_items, v_count, v_last
    FROM (SELECT r.e, r.why FROM (SELECT e, baton.inbox_reason(k, e) AS why FROM baton.events e WHERE e.id > v_after ORDER BY e.id OFFSET 0) r
           WHERE r.why IS NOT NULL LIMIT v_limit) x;
  IF v_count < v_limit THEN
    v_last := greatest(v_last, v_after,
      (SELECT max(e.id) FROM baton.events e WHERE e.id > v_after AND e.at < statement_timestamp() - interval '1 minute'));
  END IF;
  RETURN jsonb_build_object('items', v_items, 'lastId', coalesce(v_last, v_after));
END $$;

-- objects.list: the shared objects token k may view (an admin token: every one) with holder, token,
-- version, silence, open offer and open suggestions; with a key, that object alone and its log.
CREATE FUNCTION baton.agent_view_objects(k baton.agent_tokens, a jsonb) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_key text := a->>'key';
  v_objects jsonb;
BEGIN
  SELECT coalesce(jsonb_agg(jsonb_build_object('key', o.key, 'version', o.version, 'token', o.token, 'holder', o.holder,
           'holderSince', baton.object_ts(o.holder_since), 'heartbeatAt', baton.object_ts(o.holder_heartbeat_at),
           'silenceTimeoutMs', o.silence_timeout_ms, 'silent', baton.object_is_silent(o, f.id IS NOT NULL),
           'defaultAccess', o.default_access, 'createdBy', o.created_by, 'updatedAt', baton.object_ts(o.updated_at), 'paths', to_jsonb(o.paths),
           'offer', CASE WHEN f.id IS NOT NULL THEN jsonb_build_object('id', f.id, 'giver', f.giver, 'successor', f.successor,
                      'version', f.version, 'token', f.token, 'offeredAt', baton.object_ts(f.offered_at)) END,
           'suggestions', (SELECT coalesce(jsonb_agg(jsonb_build_object('id', s.id, 'suggestedBy', s.suggested_by, 'baseVersion', s.base_version,
                             'note', s.note, 'createdAt', baton.object_ts(s.created_at)) ORDER BY s.id), '[]'::jsonb)
                             FROM baton.object_suggestions s WHERE s.object_key = o.key AND s.status = 'open'))
           ORDER BY o.key), '[]'::jsonb)
    INTO v_objects
    FROM baton.objects o LEFT JOIN baton.object_offers f ON f.object_key = o.key AND f.status = 'open'
   WHERE (v_key IS NULL OR o.key = v_key) AND ('admin' = ANY (k.scopes) OR baton.object_may(o, k.identity, 'view'));
  IF v_key IS NULL THEN RETURN jsonb_build_object('objects', v_objects); END IF;
  -- One the token may not view answers as one that does not exist: it learns nothing of it.
  IF jsonb_array_length(v_objects) = 0 THEN RAISE EXCEPTION 'object % does not exist', v_key USING ERRCODE = 'BT002'; END IF;
  RETURN jsonb_build_object('objects', v_objects, 'log', baton.agent_view_events(ARRAY(
    SELECT e FROM baton.events e WHERE e.subject_kind = 'object' AND e.subject_id = v_key ORDER BY e.id)));
END $$;

-- pools.list: per pool, its limit (U11), the offers waiting to be taken and the runs taken and not
-- yet over (who took them, when they last beat), and who took work from it in the last day.
CREATE FUNCTION baton.agent_view_pools() RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(p ORDER BY p->>'pool'), '[]'::jsonb) FROM (
    SELECT jsonb_build_object('pool', r.pool,
      'maxRunning', (SELECT l.max_running FROM baton.pool_limits l WHERE l.pool = r.pool),
      'waiting', (SELECT coalesce(jsonb_agg(jsonb_build_object('taskId', w.task_id, 'claimVersion', w.claim_version,
                    'offeredBy', w.offered_by, 'offeredAt', baton.object_ts(w.offered_at)) ORDER BY w.offered_at), '[]'::jsonb)
                    FROM baton.pool_runs w JOIN baton.tasks t ON t.id = w.task_id
                   WHERE w.pool = r.pool AND w.agent IS NULL AND t.status = 'running' AND t.claim_version = w.claim_version),
      'running', (SELECT coalesce(jsonb_agg(jsonb_build_object('taskId', w.task_id, 'claimVersion', w.claim_version, 'agent', w.agent,
                    'tokenId', w.token_id, 'takenAt', baton.object_ts(w.taken_at), 'beatAt', baton.object_ts(w.beat_at),
                    'submitted', w.revision IS NOT NULL) ORDER BY w.taken_at), '[]'::jsonb)
                    FROM baton.pool_runs w JOIN baton.tasks t ON t.id = w.task_id
                   WHERE w.pool = r.pool AND w.agent IS NOT NULL AND t.status = 'running' AND t.claim_version = w.claim_version),
      'takers', (SELECT coalesce(jsonb_agg(jsonb_build_object('agent', x.agent, 'runs', x.runs, 'lastTakenAt', baton.object_ts(x.last)) ORDER BY x.last DESC), '[]'::jsonb)
                   FROM (SELECT w.agent, count(*)::integer AS runs, max(w.taken_at) AS last FROM baton.pool_runs w
                          WHERE w.pool = r.pool AND w.taken_at > now() - interval '1 day' GROUP BY w.agent) x)) AS p
      FROM (SELECT pool FROM baton.pool_runs UNION SELECT pool FROM baton.pool_limits) r) pools);
END $$;

-- tokens.list: the tokens people made (never a secret), and how many run tokens are live.
CREATE FUNCTION baton.agent_view_tokens() RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN jsonb_build_object(
    'tokens', (SELECT coalesce(jsonb_agg(baton.agent_token_view(k) ORDER BY k.created_at, k.id), '[]'::jsonb)
                 FROM baton.agent_tokens k WHERE k.task_id IS NULL),
    'liveRunTokens', (SELECT count(*) FROM baton.agent_tokens k JOIN baton.tasks t ON t.id = k.task_id
                       WHERE k.revoked_at IS NULL AND t.status = 'running' AND t.claim_version = k.claim_version));
END $$;

-- task.cancel and graph.cancel: records every unfinished task of the one (or of the graph) as
-- cancelled by p_actor, with the reason; the caller then cancels their workflows (T12: a
-- verification in progress is cancelled too). Finished tasks are left as they are, and listed.
CREATE FUNCTION baton.agent_cancel(p_actor text, p_graph_id text, p_task_id text, p_reason text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_cancelled text[] := '{}';
  v_left jsonb := '[]'::jsonb;
  x record;
  v_task baton.tasks;
BEGIN
  IF p_graph_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = p_graph_id) THEN
    RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002';
  END IF;
  IF p_task_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id) THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  FOR x IN SELECT t.id FROM baton.tasks t WHERE t.id = p_task_id OR t.graph_id = p_graph_id ORDER BY t.id LOOP
    -- Locked, then read: a task finished meanwhile is left as it is.
    v_task := baton.task_lock(x.id);
    IF v_task.status IN ('verified', 'failed', 'cancelled') THEN
      v_left := v_left || jsonb_build_object('taskId', x.id, 'status', v_task.status);
    ELSE
      PERFORM baton.task_set_status(x.id, p_actor, 'cancelled', 'cancelled', p_reason);
      v_cancelled := v_cancelled || x.id;
    END IF;
  END LOOP;
  RETURN jsonb_build_object('cancelled', to_jsonb(v_cancelled), 'left', v_left);
END $$;

-- task.rerun: sends a verified, stale or failed task round again (task_set_status says which may
-- go), recorded as requested by p_actor; the caller starts its workflow with the graph's policy.
CREATE FUNCTION baton.agent_rerun(p_actor text, p_task_id text, p_reason text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  PERFORM baton.task_set_status(p_task_id, p_actor, 'ready', 'rerun_requested', p_reason);
  RETURN jsonb_build_object('taskId', p_task_id, 'policy', (SELECT g.spec->'policy' FROM baton.tasks t JOIN baton.graphs g ON g.id = t.graph_id WHERE t.id = p_task_id));
END $$;

-- task.approve and task.reject (U11): p_actor's decision on a task awaiting approval; the caller
-- then tells the task's workflow.
CREATE FUNCTION baton.agent_approval_decide(p_actor text, p_task_id text, p_decision text, p_reason text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  SELECT * INTO STRICT r FROM baton.approval_decide(p_task_id, p_actor, p_decision, p_reason);
  RETURN jsonb_build_object('taskId', p_task_id, 'status', r.status, 'released', to_jsonb(r.released));
END $$;

-- What agent_call answers for a view or an action of token k (already checked), or NULL when
-- p_operation is neither.
CREATE FUNCTION baton.agent_view(k baton.agent_tokens, p_operation text, a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_reason text := a->>'reason';
BEGIN
  IF p_operation IN ('task.cancel', 'graph.cancel', 'task.rerun') AND length(coalesce(v_reason, '')) NOT BETWEEN 1 AND 2000 THEN
    PERFORM baton.agent_invalid(format('%s needs a reason of 1 to 2000 characters (it is recorded with the change)', p_operation));
  END IF;
  RETURN CASE p_operation
    WHEN 'graphs.list' THEN baton.agent_view_graphs(a)
    WHEN 'graph.show' THEN baton.agent_view_graph(a->>'graphId')
    WHEN 'task.show' THEN baton.agent_view_task(a->>'taskId')
    WHEN 'events.list' THEN baton.agent_view_event_log(k, a)
    WHEN 'objects.list' THEN baton.agent_view_objects(k, a)
    WHEN 'pools.list' THEN baton.agent_view_pools()
    WHEN 'tokens.list' THEN baton.agent_view_tokens()
    WHEN 'task.cancel' THEN baton.agent_cancel(k.identity, NULL, a->>'taskId', v_reason)
    WHEN 'graph.cancel' THEN baton.agent_cancel(k.identity, a->>'graphId', NULL, v_reason)
    WHEN 'task.rerun' THEN baton.agent_rerun(k.identity, a->>'taskId', v_reason)
    -- The tasks come validated with the graph's own by the API (src/api/dispatch.ts), as {key, spec, dependsOn}.
    WHEN 'graph.add' THEN jsonb_build_object('added', baton.graph_add_tasks_json(a->>'graphId', k.identity, a->'tasks'),
                            'policy', (SELECT g.spec->'policy' FROM baton.graphs g WHERE g.id = a->>'graphId'))
    WHEN 'approvals.list' THEN baton.approval_list()
    WHEN 'inbox.wait' THEN baton.agent_inbox(k, a)
    WHEN 'task.approve' THEN baton.agent_approval_decide(k.identity, a->>'taskId', 'approved', v_reason)
    WHEN 'task.reject' THEN baton.agent_approval_decide(k.identity, a->>'taskId', 'rejected', v_reason)
    WHEN 'proposals.list' THEN baton.proposal_list(a->>'graphId', coalesce((a->>'all')::boolean, false))
    WHEN 'proposal.accept' THEN baton.proposal_decide((a->>'proposalId')::bigint, k.identity, true, v_reason)
    WHEN 'proposal.decline' THEN baton.proposal_decide((a->>'proposalId')::bigint, k.identity, false, v_reason)
  END;
END $$;
