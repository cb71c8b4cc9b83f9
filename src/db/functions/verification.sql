-- Verification before release (SPEC T7, T8): someone other than the owner checks the exact
-- artifact; a pass releases dependents with their upstream revisions pinned, a fail keeps them blocked.

-- T7: a verifier that is not the agent takes the submitted artifact for checking (again, when an
-- earlier verifier was lost before recording a result), with what it checks it against and where
-- its graph works. A task whose verification is already decided (verified, rejected, stale, or
-- awaiting a person) is returned as it is, unchanged: a retry of a verification whose outcome was
-- recorded answers with that outcome instead of verifying twice.
CREATE FUNCTION baton.verification_start(p_task_id text, p_verifier text)
RETURNS TABLE (status text, claim_version bigint, artifact jsonb, spec jsonb, graph_id text, key text,
               upstream_revisions jsonb, repo text, base text) LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  t baton.tasks;
BEGIN
  t := baton.task_lock(p_task_id);
  IF t.status NOT IN ('verified', 'rejected', 'stale', 'awaiting_approval') THEN
    IF t.owner = p_verifier THEN
      RAISE EXCEPTION 'task %: % produced the artifact and may not verify it', p_task_id, p_verifier USING ERRCODE = 'BT003';
    END IF;
    IF t.status = 'verifying' THEN
      -- An earlier verifier was lost before recording a result: this one starts over.
      UPDATE baton.tasks SET status = 'submitted' WHERE id = p_task_id;
      PERFORM baton.event_append('task', p_task_id, 'verification_restarted', p_verifier, t.claim_version, NULL,
        format('verifier %s did not record a result', t.verifier), jsonb_build_object('lost_verifier', t.verifier));
    END IF;
    UPDATE baton.tasks SET status = 'verifying', verifier = p_verifier WHERE id = p_task_id;
    PERFORM baton.event_append('task', p_task_id, 'verification_started', p_verifier, t.claim_version, NULL, NULL,
      jsonb_build_object('revision', t.artifact->>'revision'));
    t.status := 'verifying';
  END IF;
  RETURN QUERY SELECT t.status, t.claim_version, t.artifact, t.spec, t.graph_id, t.key, t.upstream_revisions, g.repo, g.base
    FROM baton.graphs g WHERE g.id = t.graph_id;
END $$;
GRANT EXECUTE ON FUNCTION baton.verification_start TO baton_worker;

-- T7: locks task p_task_id for recording the verification p_verifier started of revision
-- p_revision at claim version p_claim_version, and returns it; refuses any other.
CREATE FUNCTION baton.verification_lock(p_task_id text, p_verifier text, p_claim_version bigint, p_revision text)
RETURNS baton.tasks LANGUAGE plpgsql AS $$
DECLARE
  t baton.tasks := baton.task_lock(p_task_id);
BEGIN
  IF t.verifier IS DISTINCT FROM p_verifier OR p_verifier = t.owner THEN
    RAISE EXCEPTION 'task %: % did not start this verification (% did)', p_task_id, p_verifier, coalesce(t.verifier, 'nobody')
      USING ERRCODE = 'BT001';
  END IF;
  IF t.status <> 'verifying' OR t.claim_version <> p_claim_version OR t.artifact->>'revision' <> p_revision THEN
    RAISE EXCEPTION 'task %: verification of revision % at claim version % does not match the task (status %, revision %, claim version %)',
      p_task_id, p_revision, p_claim_version, t.status, t.artifact->>'revision', t.claim_version USING ERRCODE = 'BT001';
  END IF;
  RETURN t;
END $$;

-- T8: the pins of a task that no longer hold, one row per upstream task: verified since at another
-- revision than the one pinned, or itself stale. A task is never verified while any row is left.
CREATE FUNCTION baton.task_list_superseded_pins(p_task_id text)
RETURNS TABLE (upstream text, pinned text, verified text, upstream_status text) LANGUAGE sql STABLE AS $$
  SELECT u.key, t.upstream_revisions->>u.key, u.verified_revision, u.status
    FROM baton.tasks t JOIN baton.task_dependencies d ON d.task_id = t.id JOIN baton.tasks u ON u.id = d.depends_on
   WHERE t.id = p_task_id AND (u.status = 'stale' OR (t.upstream_revisions->>u.key) IS DISTINCT FROM u.verified_revision)
   ORDER BY u.key
$$;

-- T8: staleness flows downstream. Every task that depends on a stale task, directly or through
-- others, was built on an outdated artifact: a verified one becomes stale, and a ready one goes
-- back to blocked until its upstream tasks are verified again. Rows are locked in id order.
CREATE FUNCTION baton.task_propagate_stale(p_task_id text, p_actor text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_key text;
  v_reason text;
  d record;
BEGIN
  SELECT key INTO STRICT v_key FROM baton.tasks WHERE id = p_task_id;
  v_reason := format('it depends on %s, which is stale', v_key);
  FOR d IN
    WITH RECURSIVE downstream(id) AS (
      SELECT task_id FROM baton.task_dependencies WHERE depends_on = p_task_id
      UNION
      SELECT dep.task_id FROM downstream s JOIN baton.task_dependencies dep ON dep.depends_on = s.id
    )
    SELECT t.id, t.status, t.claim_version FROM baton.tasks t WHERE t.id IN (SELECT id FROM downstream)
     ORDER BY t.id FOR UPDATE OF t
  LOOP
    IF d.status = 'verified' THEN
      UPDATE baton.tasks SET status = 'stale' WHERE id = d.id;
      PERFORM baton.event_append('task', d.id, 'marked_stale', p_actor, d.claim_version, NULL, v_reason,
        jsonb_build_object('stale_upstream', v_key));
    ELSIF d.status = 'ready' THEN
      UPDATE baton.tasks SET status = 'blocked', upstream_revisions = '{}'::jsonb WHERE id = d.id;
      PERFORM baton.event_append('task', d.id, 'reblocked', p_actor, d.claim_version, NULL, v_reason,
        jsonb_build_object('stale_upstream', v_key));
    END IF;
  END LOOP;
END $$;

-- T7, T8: records a verification of the exact artifact. A pass on pins that no longer hold
-- (task_list_superseded_pins) leaves the task stale, with the reason, and so its dependents. Any other pass
-- verifies it: dependents whose dependencies are all verified become ready with those revisions
-- pinned, and dependents verified against an older revision of this task become stale. `staled`
-- names the stale dependents whose dependencies are now all verified: the graph's policy may re-run
-- them now (task_rerun_stale); a stale task is named so by the verification of its last dependency.
CREATE FUNCTION baton.verification_record(
  p_task_id text, p_verifier text, p_claim_version bigint, p_revision text, p_command text,
  p_exit_code integer, p_output_digest text, p_output_tail text
) RETURNS TABLE (status text, released text[], staled text[]) LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  t baton.tasks;
  v_passed boolean := p_exit_code = 0;
  v_released text[] := '{}';
  v_staled text[] := '{}';
  v_superseded jsonb;
  v_why text;
  v_id text;
  d baton.tasks;
  v_all_verified boolean;
  v_pins jsonb;
BEGIN
  t := baton.verification_lock(p_task_id, p_verifier, p_claim_version, p_revision);
  INSERT INTO baton.verifications (task_id, claim_version, revision, command, exit_code, output_digest, output_tail, verifier, passed)
    VALUES (p_task_id, p_claim_version, p_revision, p_command, p_exit_code, p_output_digest, coalesce(p_output_tail, ''), p_verifier, v_passed);

  IF NOT v_passed THEN
    UPDATE baton.tasks SET status = 'rejected' WHERE id = p_task_id;
    PERFORM baton.event_append('task', p_task_id, 'rejected', p_verifier, p_claim_version, NULL,
      -- The reason ends with the output's last line: for a refused artifact (T12), the refusal itself.
      format('%s exited %s', p_command, p_exit_code) || coalesce(': ' || left(nullif(btrim(
        (regexp_match(coalesce(p_output_tail, ''), '([^\n]*)\n*$'))[1]), ''), 500), ''),
      jsonb_build_object('revision', p_revision, 'output_digest', p_output_digest));
    RETURN QUERY SELECT 'rejected'::text, v_released, v_staled;
    RETURN;
  END IF;

  -- T8: the artifact was built on its pins; if an upstream task has moved on since, it is outdated.
  -- (An upstream verification running now waits for this task's lock, and then finds it verified.)
  SELECT jsonb_agg(jsonb_build_object('upstream', s.upstream, 'pinned', s.pinned, 'verified', s.verified, 'status', s.upstream_status)),
         string_agg(CASE WHEN s.upstream_status = 'stale' THEN format('%s is stale', s.upstream)
                         ELSE format('%s is verified at %s, not %s', s.upstream, s.verified, coalesce(s.pinned, 'the pinned revision')) END, '; ')
    INTO v_superseded, v_why
    FROM baton.task_list_superseded_pins(p_task_id) s;
  IF v_superseded IS NOT NULL THEN
    UPDATE baton.tasks SET status = 'stale' WHERE id = p_task_id;
    PERFORM baton.event_append('task', p_task_id, 'marked_stale', p_verifier, p_claim_version, NULL,
      format('revision %s passed on superseded pins: %s', p_revision, v_why),
      jsonb_build_object('revision', p_revision, 'superseded', v_superseded));
    PERFORM baton.task_propagate_stale(p_task_id, p_verifier);
    RETURN QUERY SELECT 'stale'::text, v_released, v_staled;
    RETURN;
  END IF;

  -- Pins stay what the artifact was built on (set at release); they are never rewritten here.
  UPDATE baton.tasks SET status = 'verified', verified_revision = p_revision WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, 'verified', p_verifier, p_claim_version, NULL, NULL,
    jsonb_build_object('revision', p_revision, 'command', p_command, 'output_digest', p_output_digest));

  -- Dependents are locked in id order first; each is read again below, as marking one stale may
  -- already have made another (that depends on it) stale.
  PERFORM 1 FROM baton.task_dependencies dep JOIN baton.tasks dt ON dt.id = dep.task_id
    WHERE dep.depends_on = p_task_id ORDER BY dt.id FOR UPDATE OF dt;
  FOR v_id IN SELECT dep.task_id FROM baton.task_dependencies dep WHERE dep.depends_on = p_task_id ORDER BY dep.task_id LOOP
    SELECT * INTO STRICT d FROM baton.tasks WHERE id = v_id;
    v_all_verified := NOT EXISTS (
      SELECT 1 FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = d.id AND u.status <> 'verified'
    );
    IF d.status = 'blocked' AND v_all_verified THEN
      SELECT jsonb_object_agg(u.key, u.verified_revision) INTO v_pins
        FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = d.id;
      UPDATE baton.tasks SET status = 'ready', upstream_revisions = v_pins WHERE id = d.id;
      PERFORM baton.event_append('task', d.id, 'released', p_verifier, d.claim_version, NULL,
        'all dependencies verified', jsonb_build_object('upstream_revisions', v_pins));
      v_released := v_released || d.id;
    ELSIF d.status = 'verified' AND (d.upstream_revisions->>t.key) IS DISTINCT FROM p_revision THEN
      UPDATE baton.tasks SET status = 'stale' WHERE id = d.id;
      PERFORM baton.event_append('task', d.id, 'marked_stale', p_verifier, d.claim_version, NULL,
        format('%s was verified at %s; this task was verified against %s', t.key, p_revision, d.upstream_revisions->>t.key),
        jsonb_build_object('upstream', t.key, 'old_revision', d.upstream_revisions->>t.key, 'new_revision', p_revision));
      PERFORM baton.task_propagate_stale(d.id, p_verifier);
      d.status := 'stale';
    END IF;
    -- A stale dependent whose dependencies are now all verified (marked just now, or before through
    -- this task or another) can be re-run: this verification is the one that wakes it.
    IF d.status = 'stale' AND v_all_verified THEN
      v_staled := v_staled || d.id;
    END IF;
  END LOOP;
  RETURN QUERY SELECT 'verified'::text, v_released, v_staled;
END $$;
GRANT EXECUTE ON FUNCTION baton.verification_record TO baton_worker;

-- U11: the check of an artifact whose verify names an approval passed (p_command NULL: it names no
-- command or function, and only the artifact check ran): a person decides next, and the task waits
-- in awaiting_approval, with one open request saying until when and what a wait that runs out
-- decides. The check's pass is recorded as a verification like any other. Pins already superseded
-- make the task stale at once, as verification_record would: nobody is asked about an outdated artifact.
CREATE FUNCTION baton.approval_request(
  p_task_id text, p_verifier text, p_claim_version bigint, p_revision text, p_command text, p_output_digest text, p_output_tail text
) RETURNS TABLE (status text, released text[], staled text[]) LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  t baton.tasks := baton.verification_lock(p_task_id, p_verifier, p_claim_version, p_revision);
  v_approval jsonb := t.spec->'verify'->'approval';
  v_due timestamptz;
  v_on_timeout text;
BEGIN
  IF jsonb_typeof(v_approval) IS DISTINCT FROM 'object' THEN
    RAISE EXCEPTION 'task %: its verify names no approval', p_task_id USING ERRCODE = 'BT003';
  END IF;
  IF EXISTS (SELECT 1 FROM baton.task_list_superseded_pins(p_task_id)) THEN
    RETURN QUERY SELECT * FROM baton.verification_record(p_task_id, p_verifier, p_claim_version, p_revision,
      coalesce(p_command, 'baton: artifact check'), 0, p_output_digest, p_output_tail);
    RETURN;
  END IF;
  IF p_command IS NOT NULL THEN
    INSERT INTO baton.verifications (task_id, claim_version, revision, command, exit_code, output_digest, output_tail, verifier, passed)
      VALUES (p_task_id, p_claim_version, p_revision, p_command, 0, p_output_digest, coalesce(p_output_tail, ''), p_verifier, true);
  END IF;
  v_due := now() + (v_approval->>'timeoutMs')::bigint * interval '1 millisecond';
  v_on_timeout := coalesce(v_approval->>'onTimeout', 'reject');
  INSERT INTO baton.approvals (task_id, claim_version, revision, requested_by, due_at, on_timeout)
    VALUES (p_task_id, p_claim_version, p_revision, p_verifier, v_due, v_on_timeout);
  UPDATE baton.tasks SET status = 'awaiting_approval' WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, 'approval_requested', p_verifier, p_claim_version, NULL,
    format('%s passed: waiting for a person with the approve scope%s', coalesce(p_command, 'the artifact check'),
      coalesce(format(' until %s, then %s', baton.object_ts(v_due), v_on_timeout), '')),
    jsonb_build_object('revision', p_revision, 'dueAt', v_due, 'onTimeout', v_on_timeout));
  RETURN QUERY SELECT 'awaiting_approval'::text, '{}'::text[], '{}'::text[];
END $$;
GRANT EXECUTE ON FUNCTION baton.approval_request TO baton_worker;

-- U11: decides the open approval of task p_task_id as p_actor: `approved` or `rejected` by a person
-- (never the run's agent or its owner, T7), or `timed_out` by the worker watching the wait, once it
-- is due on the database clock. Recorded as the task's verification, by p_actor: an approval
-- verifies the artifact and releases dependents as any pass does (or leaves it stale when an
-- upstream task has moved on meanwhile); a rejection, and a wait run out under on_timeout `reject`,
-- leave it rejected for the graph's onVerificationFailure policy; under `fail`, it fails.
CREATE FUNCTION baton.approval_decide(p_task_id text, p_actor text, p_decision text, p_reason text)
RETURNS TABLE (status text, released text[], staled text[]) LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  t baton.tasks := baton.task_lock(p_task_id);
  a baton.approvals;
  v_reason text := nullif(btrim(coalesce(p_reason, '')), '');
  v_kind text;
  r record;
BEGIN
  IF p_decision IS NULL OR p_decision NOT IN ('approved', 'rejected', 'timed_out') THEN
    RAISE EXCEPTION 'a decision is approved, rejected or timed_out, not %', coalesce(p_decision, 'none') USING ERRCODE = 'BT003';
  END IF;
  IF length(v_reason) > 2000 OR (p_decision = 'rejected' AND v_reason IS NULL) THEN
    RAISE EXCEPTION 'a % needs a reason of 1 to 2000 characters (it is recorded, and the agent reads it)',
      CASE WHEN p_decision = 'rejected' THEN 'rejection' ELSE 'decision' END USING ERRCODE = 'BT003';
  END IF;
  SELECT * INTO a FROM baton.approvals x WHERE x.task_id = p_task_id AND x.decision IS NULL FOR UPDATE;
  IF t.status <> 'awaiting_approval' OR a.id IS NULL THEN
    RAISE EXCEPTION 'task % is not awaiting approval: it is %', p_task_id, t.status USING ERRCODE = 'BT001';
  END IF;
  IF p_decision = 'timed_out' AND (a.due_at IS NULL OR a.due_at > now()) THEN
    RAISE EXCEPTION 'task %: its approval is not due yet (due %)', p_task_id, coalesce(a.due_at::text, 'never') USING ERRCODE = 'BT001';
  END IF;
  -- Its owner, the agent its spec names, and whoever took its run from a pool (task_agent_identity).
  IF p_decision <> 'timed_out' AND p_actor IN (t.owner, coalesce(t.spec->'run'->>'agent', t.id), baton.task_agent_identity(t)) THEN
    RAISE EXCEPTION 'task %: % produced the artifact and may not approve or reject it', p_task_id, p_actor USING ERRCODE = 'BT003';
  END IF;
  IF p_decision = 'timed_out' THEN
    v_reason := format('nobody decided by %s: the approval policy says %s', baton.object_ts(a.due_at),
      a.on_timeout);
  END IF;
  UPDATE baton.approvals SET decision = p_decision, decided_by = p_actor, decided_at = now(), reason = v_reason WHERE id = a.id;
  v_kind := CASE p_decision WHEN 'approved' THEN 'approved' WHEN 'rejected' THEN 'approval_refused' ELSE 'approval_timed_out' END;
  PERFORM baton.event_append('task', p_task_id, v_kind, p_actor, t.claim_version, NULL, v_reason,
    jsonb_build_object('revision', a.revision, 'approvalId', a.id));
  UPDATE baton.tasks SET status = 'verifying', verifier = p_actor WHERE id = p_task_id;
  SELECT * INTO r FROM baton.verification_record(p_task_id, p_actor, t.claim_version, a.revision,
    CASE WHEN p_decision = 'timed_out' THEN 'baton: approval wait' ELSE format('baton: approval by %s', p_actor) END,
    CASE WHEN p_decision = 'approved' THEN 0 ELSE 1 END,
    'sha256:' || encode(sha256(convert_to(coalesce(v_reason, ''), 'UTF8')), 'hex'), v_reason);
  IF p_decision = 'timed_out' AND a.on_timeout = 'fail' THEN
    PERFORM baton.task_set_status(p_task_id, p_actor, 'failed', 'failed', v_reason);
    r.status := 'failed';
  END IF;
  RETURN QUERY SELECT r.status, r.released, r.staled;
END $$;
GRANT EXECUTE ON FUNCTION baton.approval_decide TO baton_worker, baton_client;

-- U11: how long until the open approval of task p_task_id is due, in ms on the database clock (0 or
-- less: due now); NULL when it waits without a limit or nothing is open. What the task's workflow waits on.
CREATE FUNCTION baton.approval_due_in_ms(p_task_id text) RETURNS bigint LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  RETURN (SELECT floor(extract(epoch FROM a.due_at - now()) * 1000)::bigint FROM baton.approvals a
           WHERE a.task_id = p_task_id AND a.decision IS NULL);
END $$;
GRANT EXECUTE ON FUNCTION baton.approval_due_in_ms TO baton_worker;

-- U11: one approval request as the views show it. PL/pgSQL, resolved when it runs: object_ts is
-- defined in objects_rules.sql, which loads after this file.
CREATE FUNCTION baton.approval_view(a baton.approvals) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN jsonb_build_object('id', a.id, 'taskId', a.task_id, 'claimVersion', a.claim_version, 'revision', a.revision,
    'requestedBy', a.requested_by, 'requestedAt', baton.object_ts(a.requested_at), 'dueAt', baton.object_ts(a.due_at),
    'onTimeout', a.on_timeout, 'decision', a.decision, 'decidedBy', a.decided_by, 'decidedAt', baton.object_ts(a.decided_at),
    'reason', a.reason);
END $$;

-- U11: the approvals waiting for a decision, oldest first, each with its task's graph, key and description.
CREATE FUNCTION baton.approval_list() RETURNS jsonb LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(baton.approval_view(a)
                   || jsonb_build_object('graphId', t.graph_id, 'key', t.key, 'description', t.spec->>'description')
                   ORDER BY a.requested_at, a.id), '[]'::jsonb)
            FROM baton.approvals a JOIN baton.tasks t ON t.id = a.task_id WHERE a.decision IS NULL);
END $$;
GRANT EXECUTE ON FUNCTION baton.approval_list TO baton_client, baton_reader;
