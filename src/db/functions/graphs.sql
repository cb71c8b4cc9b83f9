-- Graphs (SPEC T8): a validated graph written atomically, and the policy and operator moves of
-- a task outside any owner's claim.

-- Policy moves outside an owner's claim: retry a rejected task, give up on it, re-run a verified one.
CREATE FUNCTION baton.task_set_status(p_task_id text, p_actor text, p_to text, p_kind text, p_reason text)
RETURNS text LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  t baton.tasks;
  v_count bigint;
BEGIN
  t := baton.task_lock(p_task_id);
  IF NOT EXISTS (SELECT 1 FROM baton.task_statuses WHERE status = p_to) THEN
    RAISE EXCEPTION 'unknown task status %', p_to USING ERRCODE = 'BT003';
  END IF;
  IF p_to = t.status THEN
    RETURN t.status; -- already there (e.g. a retried activity): no change, no event
  END IF;
  -- U11: an archived graph's record lives in the archive; nothing of it runs again.
  IF EXISTS (SELECT 1 FROM baton.archives a WHERE a.graph_id = t.graph_id) THEN
    RAISE EXCEPTION 'task %: its graph % was archived: its record is read-only', p_task_id, t.graph_id USING ERRCODE = 'BT001';
  END IF;
  -- Only policy and operator moves; claims, submits and verifications have their own functions.
  IF NOT ((t.status, p_to) IN (('rejected', 'ready'), ('rejected', 'failed'), ('ready', 'failed'), ('verified', 'ready'),
                               ('stale', 'ready'), ('failed', 'ready'))
          OR (p_to = 'cancelled' AND t.status IN ('blocked', 'ready', 'running', 'submitted', 'verifying', 'awaiting_approval', 'rejected', 'stale'))) THEN
    RAISE EXCEPTION 'task %: % -> % goes through a claim, its owner or a verifier, not a status change', p_task_id, t.status, p_to
      USING ERRCODE = 'BT001';
  END IF;
  -- The event says what decided the move; it can never pass for a claim, a release or a verification.
  IF p_kind IS NULL OR p_kind NOT IN ('rerun_requested', 'rerun_after_rejection', 'rerun_after_stale', 'cancelled', 'failed') THEN
    RAISE EXCEPTION 'unknown status change kind %', p_kind USING ERRCODE = 'BT003';
  END IF;
  UPDATE baton.tasks SET status = p_to,
         owner = CASE WHEN p_to = 'ready' THEN NULL ELSE owner END,
         -- policy.maxAttempts bounds the runs on one set of inputs: a task sent round again by an
         -- operator or for an upstream change starts afresh (a rejected one retried does not).
         attempts = CASE WHEN p_kind IN ('rerun_requested', 'rerun_after_stale') THEN 0 ELSE attempts END,
         lease_expires_at = NULL,
         -- A task sent round again is built on its dependencies' current verified revisions.
         upstream_revisions = CASE WHEN p_to = 'ready' THEN coalesce((
           SELECT jsonb_object_agg(u.key, u.verified_revision)
             FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = p_task_id
         ), '{}'::jsonb) ELSE upstream_revisions END
   WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, p_kind, p_actor, t.claim_version, NULL, p_reason,
    jsonb_build_object('from', t.status, 'to', p_to));
  IF t.status = 'awaiting_approval' THEN
    -- U11: nobody decides on a cancelled task any more.
    UPDATE baton.approvals SET decision = 'cancelled', decided_by = p_actor, decided_at = now(), reason = left(p_reason, 2000)
     WHERE task_id = p_task_id AND decision IS NULL;
  END IF;
  IF t.status = 'verified' THEN
    -- Dependents released against the old revision but not yet started wait for the new one.
    WITH reblocked AS (
      UPDATE baton.tasks dt SET status = 'blocked', upstream_revisions = '{}'::jsonb
        FROM baton.task_dependencies dep
       WHERE dep.depends_on = p_task_id AND dt.id = dep.task_id AND dt.status = 'ready'
      RETURNING dt.id, dt.claim_version
    )
    SELECT count(*) INTO STRICT v_count FROM (
      SELECT baton.event_append('task', r.id, 'reblocked', p_actor, r.claim_version, NULL,
        format('upstream %s is being re-run', t.key)) FROM reblocked r
    ) appended;
  END IF;
  RETURN t.status;
END $$;
GRANT EXECUTE ON FUNCTION baton.task_set_status TO baton_worker, baton_client;

-- T8: the graph's policy for a stale task (policy.onUpstreamChange). `rerun` sends it round again on
-- its upstream tasks' current verified revisions once they are all verified; until then it stays
-- stale, and the verification that completes them names it to be woken (verification_record's
-- `staled`). `mark` leaves it stale until an operator reruns it. Returns its status afterwards.
CREATE FUNCTION baton.task_rerun_stale(p_task_id text, p_actor text, p_reason text) RETURNS text LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  t baton.tasks;
  v_policy text;
BEGIN
  t := baton.task_lock(p_task_id);
  SELECT coalesce(g.spec->'policy'->>'onUpstreamChange', 'rerun') INTO STRICT v_policy FROM baton.graphs g WHERE g.id = t.graph_id;
  -- Upstream tasks are read after this task's lock: a verification of one that is under way waits
  -- for the lock, then finds this task stale and names it.
  IF t.status <> 'stale' OR v_policy <> 'rerun' OR baton.task_ready_or_blocked(p_task_id) = 'blocked' THEN
    RETURN t.status;
  END IF;
  PERFORM baton.task_set_status(p_task_id, p_actor, 'ready', 'rerun_after_stale', p_reason);
  RETURN 'ready';
END $$;
GRANT EXECUTE ON FUNCTION baton.task_rerun_stale TO baton_worker;

-- A task's id: its graph's id, '/', its key (graph ids have no '/'; src/tasks/format.ts reads the
-- key back as everything after the first '/'). The one place SQL composes a task id.
CREATE FUNCTION baton.task_id_of(p_graph_id text, p_key text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT p_graph_id || '/' || p_key
$$;

-- The LIKE pattern the id of every task of a graph matches, the graph id's own % and _ escaped.
CREATE FUNCTION baton.task_id_pattern_of(p_graph_id text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT replace(replace(p_graph_id, '%', '\%'), '_', '\_') || '/%'
$$;

-- T8, U11: writes the tasks p_tasks ({key, spec, dependsOn}) of graph p_graph_id, whose policy is
-- p_policy: each ready when it depends on nothing, else blocked, under the concurrency limits that
-- apply to it; their dependencies; one 'created' event each (with p_details). Returns how many.
CREATE FUNCTION baton.graph_insert_tasks(p_graph_id text, p_actor text, p_policy jsonb, p_tasks jsonb, p_details jsonb)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_task jsonb;
  v_dep text;
  v_count integer := 0;
BEGIN
  FOR v_task IN SELECT * FROM jsonb_array_elements(p_tasks) LOOP
    INSERT INTO baton.tasks (id, graph_id, key, spec, status, limits)
      VALUES (baton.task_id_of(p_graph_id, v_task->>'key'), p_graph_id, v_task->>'key', v_task->'spec',
              CASE WHEN jsonb_array_length(v_task->'dependsOn') = 0 THEN 'ready' ELSE 'blocked' END,
              -- U11: the concurrency limits its claims are taken under (migration 0019).
              nullif(jsonb_strip_nulls(jsonb_build_object('graph', p_policy->'maxRunning',
                'key', v_task->'spec'->'concurrency'->'key', 'keyLimit', v_task->'spec'->'concurrency'->'limit',
                'pool', v_task->'spec'->'run'->'pool')), '{}'::jsonb));
    v_count := v_count + 1;
  END LOOP;
  FOR v_task IN SELECT * FROM jsonb_array_elements(p_tasks) LOOP
    FOR v_dep IN SELECT * FROM jsonb_array_elements_text(v_task->'dependsOn') LOOP
      INSERT INTO baton.task_dependencies (task_id, depends_on)
        VALUES (baton.task_id_of(p_graph_id, v_task->>'key'), baton.task_id_of(p_graph_id, v_dep));
    END LOOP;
    PERFORM baton.event_append('task', baton.task_id_of(p_graph_id, v_task->>'key'), 'created', p_actor, 0, NULL, NULL,
      jsonb_build_object('depends_on', v_task->'dependsOn') || p_details);
  END LOOP;
  RETURN v_count;
END $$;

-- U11: an operator adds the tasks p_tasks ({key, spec, dependsOn}, validated by the client with the
-- graph's own) to the running graph p_graph_id. Each depends on tasks of the graph or on others
-- added with it; one whose dependencies are all verified is released at once with their revisions
-- pinned, the rest wait (blocked) like any task. One 'tasks_added' event on the graph, 'created' on
-- each (details `added`, and p_details: the proposal they came from). Returns the added tasks with their status.
CREATE FUNCTION baton.graph_add_tasks(p_graph_id text, p_actor text, p_tasks jsonb, p_details jsonb DEFAULT '{}'::jsonb)
RETURNS TABLE (task_id text, status text) LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
#variable_conflict use_column
DECLARE
  v_policy jsonb;
  v_keys text[];
  v_problem text;
  v_id text;
  v_pins jsonb;
BEGIN
  SELECT g.spec->'policy' INTO v_policy FROM baton.graphs g WHERE g.id = p_graph_id FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002'; END IF;
  IF EXISTS (SELECT 1 FROM baton.archives a WHERE a.graph_id = p_graph_id) THEN
    RAISE EXCEPTION 'graph % was archived: nothing is added to it', p_graph_id USING ERRCODE = 'BT001';
  END IF;
  v_keys := ARRAY(SELECT t->>'key' FROM jsonb_array_elements(p_tasks) t);
  v_problem := baton.graph_addition_problem(p_graph_id, p_tasks);
  IF v_problem IS NOT NULL THEN RAISE EXCEPTION '%: nothing was added', v_problem USING ERRCODE = 'BT003'; END IF;
  PERFORM baton.graph_insert_tasks(p_graph_id, p_actor, v_policy, p_tasks, jsonb_build_object('added', true) || p_details);
  -- Those whose dependencies are all verified already are released now, as a verification would.
  FOR v_id IN SELECT baton.task_id_of(p_graph_id, k) FROM unnest(v_keys) k ORDER BY 1 LOOP
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM baton.task_dependencies x WHERE x.task_id = v_id)
      OR EXISTS (SELECT 1 FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on
                  WHERE x.task_id = v_id AND u.status <> 'verified');
    SELECT jsonb_object_agg(u.key, u.verified_revision) INTO v_pins
      FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = v_id;
    UPDATE baton.tasks SET status = 'ready', upstream_revisions = v_pins WHERE id = v_id;
    PERFORM baton.event_append('task', v_id, 'released', p_actor, 0, NULL, 'added with all dependencies verified',
      jsonb_build_object('upstream_revisions', v_pins));
  END LOOP;
  PERFORM baton.event_append('graph', p_graph_id, 'tasks_added', p_actor, NULL, NULL,
    format('%s task(s) added: %s', cardinality(v_keys), array_to_string(v_keys, ', ')), jsonb_build_object('keys', to_jsonb(v_keys)) || p_details);
  RETURN QUERY SELECT t.id, t.status FROM baton.tasks t WHERE t.id IN (SELECT baton.task_id_of(p_graph_id, k) FROM unnest(v_keys) k) ORDER BY t.id;
END $$;
GRANT EXECUTE ON FUNCTION baton.graph_add_tasks TO baton_client;

-- U11: graph_add_tasks, its answer as the agent API gives it: [{taskId, status}] by task id.
CREATE FUNCTION baton.graph_add_tasks_json(p_graph_id text, p_actor text, p_tasks jsonb, p_details jsonb DEFAULT '{}'::jsonb)
RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object('taskId', x.task_id, 'status', x.status) ORDER BY x.task_id), '[]'::jsonb)
    FROM baton.graph_add_tasks(p_graph_id, p_actor, p_tasks, p_details) x
$$;

-- U11: why the tasks p_tasks ({key, dependsOn, ...}) cannot be added to graph p_graph_id now, or NULL:
-- none given, a key the graph has already, a dependency on a task neither the graph nor p_tasks has.
CREATE FUNCTION baton.graph_addition_problem(p_graph_id text, p_tasks jsonb) RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_keys text[] := ARRAY(SELECT t->>'key' FROM jsonb_array_elements(p_tasks) t);
  v_found text;
BEGIN
  IF cardinality(v_keys) = 0 THEN RETURN 'no tasks to add'; END IF;
  SELECT string_agg(k, ', ') INTO v_found FROM unnest(v_keys) k WHERE EXISTS (SELECT 1 FROM baton.tasks t WHERE t.id = baton.task_id_of(p_graph_id, k));
  IF v_found IS NOT NULL THEN RETURN format('graph %s already has task(s) %s', p_graph_id, v_found); END IF;
  SELECT string_agg(DISTINCT d, ', ') INTO v_found
    FROM jsonb_array_elements(p_tasks) t, jsonb_array_elements_text(t->'dependsOn') d
   WHERE NOT d = ANY (v_keys) AND NOT EXISTS (SELECT 1 FROM baton.tasks x WHERE x.id = baton.task_id_of(p_graph_id, d));
  IF v_found IS NOT NULL THEN RETURN format('graph %s has no task(s) %s to depend on', p_graph_id, v_found); END IF;
  RETURN NULL;
END $$;

-- U11: the agent p_actor, on the current claim of task t (locked and checked by agent_call),
-- proposes the subtasks p_tasks ({key, description, payload?, dependsOn}, validated by the API:
-- parseSubtasks in src/tasks/graphSpec.ts). Each subtask's spec is its proposer's with the
-- agent's description and payload: whatever else the input holds is ignored, so an agent cannot
-- give work it spawns another check, agent or tool allowance than its own. The graph's
-- policy.subtasks says what follows: `accept` adds them now (graph_add_tasks, as p_actor),
-- `review` keeps them for an operator (proposal_decide). Returns the proposal (proposalId, status,
-- the tasks added, the graph's policy), or a refusal's name and reason ({refusal, reason}) for
-- agent_call to record.
CREATE FUNCTION baton.task_propose(t baton.tasks, p_actor text, p_tasks jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_policy jsonb := (SELECT g.spec->'policy' FROM baton.graphs g WHERE g.id = t.graph_id);
  v_mode text := coalesce(v_policy->>'subtasks', 'review');
  v_before integer;
  v_tasks jsonb;
  v_keys text[];
  v_problem text;
  v_id bigint;
  v_added jsonb := '[]'::jsonb;
BEGIN
  IF v_mode = 'refuse' THEN
    RETURN jsonb_build_object('refusal', 'subtasks_refused',
      'reason', format('graph %s takes no subtasks from its agents (policy.subtasks: refuse)', t.graph_id));
  END IF;
  SELECT coalesce(sum(jsonb_array_length(p.tasks)), 0) INTO v_before FROM baton.proposals p WHERE p.task_id = t.id AND p.status <> 'declined';
  IF v_before + jsonb_array_length(p_tasks) > 50 THEN
    RETURN jsonb_build_object('refusal', 'limit',
      'reason', format('task %s has proposed %s subtask(s); %s more would pass the limit of 50 per task (MAX_SUBTASKS_PER_TASK)', t.id, v_before, jsonb_array_length(p_tasks)));
  END IF;
  -- Subtasks run the proposer's agent, which may propose again: the graph's size bounds the nesting.
  IF (SELECT count(*) FROM baton.tasks x WHERE x.graph_id = t.graph_id) + jsonb_array_length(p_tasks) > 50000 THEN
    RETURN jsonb_build_object('refusal', 'limit',
      'reason', format('graph %s would pass 50000 tasks (MAX_TASKS_PER_GRAPH) with %s more', t.graph_id, jsonb_array_length(p_tasks)));
  END IF;
  v_tasks := (SELECT jsonb_agg(jsonb_build_object('key', x->>'key', 'dependsOn', coalesce(x->'dependsOn', '[]'::jsonb),
                'spec', (t.spec - 'description' - 'payload') || jsonb_build_object('description', coalesce(x->>'description', x->>'key'))
                        || CASE WHEN x ? 'payload' THEN jsonb_build_object('payload', x->'payload') ELSE '{}'::jsonb END) ORDER BY n)
                FROM jsonb_array_elements(p_tasks) WITH ORDINALITY e(x, n));
  v_keys := ARRAY(SELECT x->>'key' FROM jsonb_array_elements(v_tasks) x);
  v_problem := baton.graph_addition_problem(t.graph_id, v_tasks);
  IF v_problem IS NOT NULL THEN PERFORM baton.agent_invalid(v_problem || ': nothing was proposed'); END IF;
  INSERT INTO baton.proposals (graph_id, task_id, claim_version, proposed_by, tasks, status, decided_by, decided_at)
    VALUES (t.graph_id, t.id, t.claim_version, p_actor, v_tasks, CASE v_mode WHEN 'accept' THEN 'accepted' ELSE 'pending' END,
            CASE v_mode WHEN 'accept' THEN 'policy.subtasks' END, CASE v_mode WHEN 'accept' THEN now() END)
    RETURNING id INTO v_id;
  PERFORM baton.event_append('task', t.id, 'subtasks_proposed', p_actor, t.claim_version, NULL,
    format('%s subtask(s) proposed: %s; %s', cardinality(v_keys), array_to_string(v_keys, ', '),
      CASE v_mode WHEN 'accept' THEN 'added at once (policy.subtasks: accept)' ELSE 'waiting for an operator (policy.subtasks: review)' END),
    jsonb_build_object('proposal', v_id, 'keys', to_jsonb(v_keys), 'policy', v_mode));
  IF v_mode = 'accept' THEN
    v_added := baton.graph_add_tasks_json(t.graph_id, p_actor, v_tasks, jsonb_build_object('proposal', v_id, 'proposer', t.id));
  END IF;
  RETURN jsonb_build_object('proposalId', v_id, 'status', CASE v_mode WHEN 'accept' THEN 'accepted' ELSE 'pending' END,
    'added', v_added, 'policy', v_policy);
END $$;

-- U11: one proposal as the views show it.
CREATE FUNCTION baton.proposal_view(p baton.proposals) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN jsonb_build_object('id', p.id, 'graphId', p.graph_id, 'taskId', p.task_id, 'claimVersion', p.claim_version,
    'proposedBy', p.proposed_by, 'proposedAt', baton.object_ts(p.proposed_at), 'status', p.status,
    'tasks', (SELECT jsonb_agg(jsonb_build_object('key', x->>'key', 'description', x->'spec'->>'description',
                'payload', x->'spec'->'payload', 'dependsOn', x->'dependsOn') ORDER BY n)
                FROM jsonb_array_elements(p.tasks) WITH ORDINALITY e(x, n)),
    'decidedBy', p.decided_by, 'decidedAt', baton.object_ts(p.decided_at), 'reason', p.reason);
END $$;

-- U11: the proposals waiting for an operator (or, with p_all, every one), oldest first; of one graph with p_graph_id.
CREATE FUNCTION baton.proposal_list(p_graph_id text DEFAULT NULL, p_all boolean DEFAULT false) RETURNS jsonb LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(baton.proposal_view(p) ORDER BY p.proposed_at, p.id), '[]'::jsonb)
            FROM baton.proposals p WHERE (p_all OR p.status = 'pending') AND (p_graph_id IS NULL OR p.graph_id = p_graph_id));
END $$;
GRANT EXECUTE ON FUNCTION baton.proposal_list TO baton_client, baton_reader;

-- U11: an operator p_actor accepts (adds its subtasks to the graph, as p_actor) or declines (with a
-- reason) the waiting proposal p_id; never the agent that proposed it. One 'proposal_decided' event on
-- the proposing task. Returns the proposal's view with the added tasks and, when accepted, the graph's
-- policy, for the caller to start their workflows.
CREATE FUNCTION baton.proposal_decide(p_id bigint, p_actor text, p_accept boolean, p_reason text) RETURNS jsonb LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  p baton.proposals;
  v_reason text := nullif(btrim(coalesce(p_reason, '')), '');
  v_added jsonb := '[]'::jsonb;
BEGIN
  IF length(v_reason) > 2000 OR (NOT p_accept AND v_reason IS NULL) THEN
    RAISE EXCEPTION 'declining a proposal needs a reason of 1 to 2000 characters (it is recorded, and its agent reads it)' USING ERRCODE = 'BT003';
  END IF;
  SELECT * INTO p FROM baton.proposals x WHERE x.id = p_id FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'proposal % does not exist', p_id USING ERRCODE = 'BT002'; END IF;
  IF p.status <> 'pending' THEN
    RAISE EXCEPTION 'proposal % was % by % already', p_id, p.status, p.decided_by USING ERRCODE = 'BT001';
  END IF;
  IF p_actor = p.proposed_by THEN
    RAISE EXCEPTION 'proposal %: % proposed it and may not decide it', p_id, p_actor USING ERRCODE = 'BT003';
  END IF;
  -- The proposing task's row lock keeps its event numbers gapless beside its own writes.
  PERFORM baton.task_lock(p.task_id);
  UPDATE baton.proposals SET status = CASE WHEN p_accept THEN 'accepted' ELSE 'declined' END,
         decided_by = p_actor, decided_at = now(), reason = v_reason
   WHERE id = p_id RETURNING * INTO p;
  PERFORM baton.event_append('task', p.task_id, 'proposal_decided', p_actor, NULL, NULL, v_reason,
    jsonb_build_object('proposal', p.id, 'decision', p.status, 'proposedBy', p.proposed_by,
      'keys', (SELECT jsonb_agg(x->'key') FROM jsonb_array_elements(p.tasks) x)));
  IF p_accept THEN
    v_added := baton.graph_add_tasks_json(p.graph_id, p_actor, p.tasks, jsonb_build_object('proposal', p.id, 'proposer', p.task_id));
  END IF;
  RETURN baton.proposal_view(p) || jsonb_build_object('added', v_added)
    || CASE WHEN p_accept THEN jsonb_build_object('policy', (SELECT g.spec->'policy' FROM baton.graphs g WHERE g.id = p.graph_id))
            ELSE '{}'::jsonb END;
END $$;
GRANT EXECUTE ON FUNCTION baton.proposal_decide TO baton_client;

-- T8: a validated graph, written atomically: graph, tasks (ready when they depend on nothing,
-- else blocked), dependencies and one 'created' event per task.
CREATE FUNCTION baton.graph_submit(p_graph_id text, p_actor text, p_spec jsonb, p_tasks jsonb)
RETURNS integer LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  v_count integer;
BEGIN
  BEGIN
    INSERT INTO baton.graphs (id, submitted_by, spec) VALUES (p_graph_id, p_actor, p_spec);
  EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'graph % already exists', p_graph_id USING ERRCODE = 'BT003';
  END;
  PERFORM baton.event_append('graph', p_graph_id, 'submitted', p_actor, NULL, NULL, NULL,
    jsonb_build_object('tasks', jsonb_array_length(p_tasks)));
  v_count := baton.graph_insert_tasks(p_graph_id, p_actor, p_spec->'policy', p_tasks, '{}'::jsonb);
  RETURN v_count;
END $$;
GRANT EXECUTE ON FUNCTION baton.graph_submit TO baton_client;
