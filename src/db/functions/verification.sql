-- Verification before release (SPEC T7, T8): someone other than the owner checks the exact
-- artifact; a pass releases dependents with their upstream revisions pinned, a fail keeps them blocked.

-- T7: a verifier that is not the agent takes the submitted (or stale) artifact for checking.
CREATE FUNCTION baton.verification_start(p_task_id text, p_verifier text)
RETURNS TABLE (claim_version bigint, artifact jsonb, spec jsonb) LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  t baton.tasks;
BEGIN
  t := baton.task_lock(p_task_id);
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
  RETURN QUERY SELECT t.claim_version, t.artifact, t.spec;
END $$;
GRANT EXECUTE ON FUNCTION baton.verification_start TO baton_worker;

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
  t := baton.task_lock(p_task_id);
  IF t.verifier IS DISTINCT FROM p_verifier OR p_verifier = t.owner THEN
    RAISE EXCEPTION 'task %: % did not start this verification (% did)', p_task_id, p_verifier, coalesce(t.verifier, 'nobody')
      USING ERRCODE = 'BT001';
  END IF;
  IF t.status <> 'verifying' OR t.claim_version <> p_claim_version OR t.artifact->>'revision' <> p_revision THEN
    RAISE EXCEPTION 'task %: verification of revision % at claim version % does not match the task (status %, revision %, claim version %)',
      p_task_id, p_revision, p_claim_version, t.status, t.artifact->>'revision', t.claim_version USING ERRCODE = 'BT001';
  END IF;
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
