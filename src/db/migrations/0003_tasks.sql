-- Tasks, dependencies, verifications and notes (SPEC T1-T8). Every write goes through the
-- functions below; each appends its event (0002) in the same transaction.

CREATE TABLE baton.task_statuses (status text PRIMARY KEY);
INSERT INTO baton.task_statuses (status) VALUES {{task_status_rows}};

CREATE TABLE baton.task_transitions (
  from_status text NOT NULL REFERENCES baton.task_statuses,
  to_status text NOT NULL REFERENCES baton.task_statuses,
  PRIMARY KEY (from_status, to_status)
);
INSERT INTO baton.task_transitions (from_status, to_status) VALUES {{task_transition_rows}};

CREATE TABLE baton.graphs (
  id text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  submitted_by text NOT NULL,
  submitted_at timestamptz NOT NULL DEFAULT now(),
  spec jsonb NOT NULL
);

CREATE TABLE baton.tasks (
  id text PRIMARY KEY,
  graph_id text NOT NULL REFERENCES baton.graphs,
  key text NOT NULL CHECK (key ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  spec jsonb NOT NULL,
  status text NOT NULL REFERENCES baton.task_statuses,
  -- The claim holder while running; afterwards, who produced the artifact.
  owner text,
  claim_version bigint NOT NULL DEFAULT 0 CHECK (claim_version >= 0),
  claimed_at timestamptz,
  heartbeat_at timestamptz,
  lease_expires_at timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  progress jsonb,
  artifact jsonb,
  verified_revision text,
  -- Who is verifying (or last verified) the artifact; never its owner.
  verifier text,
  -- Upstream key -> verified revision this task was released (or re-verified) against.
  upstream_revisions jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (graph_id, key),
  CHECK (status <> 'running' OR (owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
  CHECK (status NOT IN ('submitted', 'verifying', 'verified', 'rejected', 'stale') OR artifact IS NOT NULL)
);
CREATE INDEX tasks_ready_idx ON baton.tasks (graph_id, id) WHERE status = 'ready';

CREATE TABLE baton.task_dependencies (
  task_id text NOT NULL REFERENCES baton.tasks,
  depends_on text NOT NULL REFERENCES baton.tasks,
  PRIMARY KEY (task_id, depends_on),
  CHECK (task_id <> depends_on)
);
CREATE INDEX task_dependencies_upstream_idx ON baton.task_dependencies (depends_on);

CREATE TABLE baton.verifications (
  id bigserial PRIMARY KEY,
  task_id text NOT NULL REFERENCES baton.tasks,
  claim_version bigint NOT NULL,
  revision text NOT NULL,
  command text NOT NULL,
  exit_code integer NOT NULL,
  output_digest text NOT NULL,
  output_tail text NOT NULL DEFAULT '',
  verifier text NOT NULL,
  passed boolean NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);

-- Discussion. A note is never a record of ownership; notes tied to a claim are fenced.
CREATE TABLE baton.task_notes (
  id bigserial PRIMARY KEY,
  task_id text NOT NULL REFERENCES baton.tasks,
  author text NOT NULL,
  claim_version bigint,
  body text NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
  at timestamptz NOT NULL DEFAULT now()
);

-- The state machine, enforced whoever writes: a client bug or a hostile agent cannot skip a state.
CREATE FUNCTION baton.check_task_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.status NOT IN ('blocked', 'ready') OR NEW.claim_version <> 0 THEN
      RAISE EXCEPTION 'task %: a new task starts blocked or ready with claim version 0, not %', NEW.id, NEW.status
        USING ERRCODE = 'BT001';
    END IF;
    RETURN NEW;
  END IF;
  IF NEW.claim_version < OLD.claim_version THEN
    RAISE EXCEPTION 'task %: claim version may not go back from % to %', NEW.id, OLD.claim_version, NEW.claim_version
      USING ERRCODE = 'BT001';
  END IF;
  IF NEW.claim_version <> OLD.claim_version AND NOT (OLD.status = 'ready' AND NEW.status = 'running') THEN
    RAISE EXCEPTION 'task %: the claim version changes only when a ready task is claimed', NEW.id USING ERRCODE = 'BT001';
  END IF;
  IF NEW.status IS DISTINCT FROM OLD.status AND NOT EXISTS (
    SELECT 1 FROM baton.task_transitions WHERE from_status = OLD.status AND to_status = NEW.status
  ) THEN
    RAISE EXCEPTION 'task %: % -> % is not an allowed transition', NEW.id, OLD.status, NEW.status USING ERRCODE = 'BT001';
  END IF;
  IF NEW.status = 'verified' AND OLD.status <> 'verified' AND NOT EXISTS (
    SELECT 1 FROM baton.verifications v
     WHERE v.task_id = NEW.id AND v.passed AND v.claim_version = NEW.claim_version AND v.revision = NEW.artifact->>'revision'
  ) THEN
    RAISE EXCEPTION 'task %: verified needs a passed verification of revision % at claim version %',
      NEW.id, NEW.artifact->>'revision', NEW.claim_version USING ERRCODE = 'BT001';
  END IF;
  NEW.updated_at := now();
  RETURN NEW;
END $$;

CREATE TRIGGER tasks_state_machine BEFORE INSERT OR UPDATE ON baton.tasks
  FOR EACH ROW EXECUTE FUNCTION baton.check_task_change();

-- T8, enforced whoever writes: a dependent becomes ready only when every dependency is verified.
CREATE FUNCTION baton.check_task_release() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_unverified text;
BEGIN
  SELECT string_agg(u.key || ' (' || u.status || ')', ', ' ORDER BY u.key) INTO v_unverified
    FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on
   WHERE d.task_id = NEW.id AND u.status <> 'verified';
  IF v_unverified IS NOT NULL THEN
    RAISE EXCEPTION 'task %: cannot become ready before its dependencies are verified: %', NEW.id, v_unverified
      USING ERRCODE = 'BT001';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER tasks_release_guard BEFORE UPDATE OF status ON baton.tasks
  FOR EACH ROW WHEN (OLD.status <> 'ready' AND NEW.status = 'ready')
  EXECUTE FUNCTION baton.check_task_release();

CREATE FUNCTION baton.refuse_record_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'BT004';
END $$;
CREATE TRIGGER verifications_append_only BEFORE UPDATE OR DELETE ON baton.verifications
  FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_record_change();
CREATE TRIGGER task_notes_append_only BEFORE UPDATE OR DELETE ON baton.task_notes
  FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_record_change();

-- What a claim returns: enough to start work, committed before any work starts (T3).
CREATE TYPE baton.claim AS (
  task_id text, graph_id text, key text, spec jsonb, claim_version bigint,
  lease_expires_at timestamptz, attempts integer, upstream_revisions jsonb
);

CREATE FUNCTION baton.take_claim(p_task_id text, p_owner text, p_lease_ms integer) RETURNS baton.claim
LANGUAGE plpgsql AS $$
DECLARE
  c baton.claim;
BEGIN
  UPDATE baton.tasks
     SET status = 'running', owner = p_owner, claim_version = claim_version + 1,
         claimed_at = now(), heartbeat_at = now(), lease_expires_at = now() + p_lease_ms * interval '1 millisecond',
         attempts = attempts + 1, progress = NULL, artifact = NULL
   WHERE id = p_task_id
  RETURNING id, graph_id, key, spec, claim_version, lease_expires_at, attempts, upstream_revisions INTO c;
  PERFORM baton.append_event('task', c.task_id, 'claimed', p_owner, c.claim_version, NULL, NULL,
    jsonb_build_object('attempt', c.attempts, 'lease_expires_at', c.lease_expires_at));
  RETURN c;
END $$;

-- T3: claim one named task if it is ready. Returns no row when it is not (or another claim holds its lock).
CREATE FUNCTION baton.claim_task(p_task_id text, p_owner text, p_lease_ms integer) RETURNS SETOF baton.claim
LANGUAGE plpgsql AS $$
DECLARE
  v_id text;
BEGIN
  IF p_lease_ms IS NULL OR p_lease_ms < 1 THEN
    RAISE EXCEPTION 'lease must be a positive number of milliseconds, not %', p_lease_ms USING ERRCODE = 'BT003';
  END IF;
  SELECT id INTO v_id FROM baton.tasks WHERE id = p_task_id AND status = 'ready' FOR UPDATE SKIP LOCKED;
  IF FOUND THEN
    RETURN NEXT baton.take_claim(v_id, p_owner, p_lease_ms);
  END IF;
END $$;

-- T3: claim the next ready task, optionally within one graph.
CREATE FUNCTION baton.claim_next_task(p_owner text, p_lease_ms integer, p_graph_id text DEFAULT NULL)
RETURNS SETOF baton.claim LANGUAGE plpgsql AS $$
DECLARE
  v_id text;
BEGIN
  IF p_lease_ms IS NULL OR p_lease_ms < 1 THEN
    RAISE EXCEPTION 'lease must be a positive number of milliseconds, not %', p_lease_ms USING ERRCODE = 'BT003';
  END IF;
  SELECT id INTO v_id FROM baton.tasks
   WHERE status = 'ready' AND (p_graph_id IS NULL OR graph_id = p_graph_id)
   ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED;
  IF FOUND THEN
    RETURN NEXT baton.take_claim(v_id, p_owner, p_lease_ms);
  END IF;
END $$;

-- The answer to every fenced write: accepted, or refused with what the task looks like now.
CREATE TYPE baton.fenced_result AS (
  accepted boolean, status text, owner text, claim_version bigint, lease_expires_at timestamptz
);

-- T4: records a refused owner write as an event and describes the task as it is now.
CREATE FUNCTION baton.refuse_stale_write(p_task_id text, p_owner text, p_claim_version bigint, p_action text)
RETURNS baton.fenced_result LANGUAGE plpgsql AS $$
DECLARE
  t baton.tasks;
BEGIN
  SELECT * INTO t FROM baton.tasks WHERE id = p_task_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  -- The event's fence is the stale claim version the write carried; the current one is in the reason.
  PERFORM baton.append_event('task', p_task_id, 'stale_write_refused', p_owner, p_claim_version, NULL,
    format('%s by %s at claim version %s refused: task is %s, owner %s, claim version %s',
           p_action, p_owner, p_claim_version, t.status, coalesce(t.owner, 'none'), t.claim_version),
    jsonb_build_object('action', p_action, 'current_claim_version', t.claim_version));
  RETURN ROW(false, t.status, t.owner, t.claim_version, t.lease_expires_at)::baton.fenced_result;
END $$;

-- Where a task goes when it is given back: ready, unless an upstream task is being re-run.
CREATE FUNCTION baton.ready_or_blocked(p_task_id text) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN EXISTS (
    SELECT 1 FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on
     WHERE d.task_id = p_task_id AND u.status <> 'verified'
  ) THEN 'blocked' ELSE 'ready' END
$$;

-- T4: the fence, defined once: locks the task if, and only if, the caller still holds this claim.
CREATE FUNCTION baton.hold_fence(p_task_id text, p_owner text, p_claim_version bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM baton.tasks
   WHERE id = p_task_id AND owner = p_owner AND claim_version = p_claim_version AND status = 'running'
   FOR UPDATE;
  RETURN FOUND;
END $$;

-- An accepted owner write: the task as it is now.
CREATE FUNCTION baton.accepted_write(p_task_id text) RETURNS baton.fenced_result LANGUAGE sql AS $$
  SELECT true, status, owner, claim_version, lease_expires_at FROM baton.tasks WHERE id = p_task_id
$$;

-- T4: the owner's heartbeat extends its lease (database clock) and stores progress.
CREATE FUNCTION baton.heartbeat_task(p_task_id text, p_owner text, p_claim_version bigint, p_lease_ms integer, p_progress jsonb)
RETURNS baton.fenced_result LANGUAGE plpgsql AS $$
BEGIN
  IF NOT baton.hold_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.refuse_stale_write(p_task_id, p_owner, p_claim_version, 'heartbeat');
  END IF;
  UPDATE baton.tasks
     SET heartbeat_at = now(), lease_expires_at = now() + p_lease_ms * interval '1 millisecond',
         progress = coalesce(p_progress, progress)
   WHERE id = p_task_id;
  RETURN baton.accepted_write(p_task_id);
END $$;

-- T4, T7: the owner submits its artifact (revision, test command, its own result).
CREATE FUNCTION baton.submit_task(p_task_id text, p_owner text, p_claim_version bigint, p_artifact jsonb)
RETURNS baton.fenced_result LANGUAGE plpgsql AS $$
BEGIN
  IF p_artifact IS NULL OR coalesce(p_artifact->>'revision', '') = '' THEN
    RAISE EXCEPTION 'task %: an artifact must name its revision', p_task_id USING ERRCODE = 'BT003';
  END IF;
  IF NOT baton.hold_fence(p_task_id, p_owner, p_claim_version) THEN
    -- The same submit again (its first answer was lost): accepted, and nothing changes.
    IF EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id AND owner = p_owner AND claim_version = p_claim_version
                AND artifact->>'revision' = p_artifact->>'revision' AND status <> 'running') THEN
      RETURN baton.accepted_write(p_task_id);
    END IF;
    RETURN baton.refuse_stale_write(p_task_id, p_owner, p_claim_version, 'submit');
  END IF;
  UPDATE baton.tasks SET status = 'submitted', artifact = p_artifact, lease_expires_at = NULL WHERE id = p_task_id;
  PERFORM baton.append_event('task', p_task_id, 'submitted', p_owner, p_claim_version, NULL, NULL,
    jsonb_build_object('revision', p_artifact->>'revision'));
  RETURN baton.accepted_write(p_task_id);
END $$;

-- T4: the owner gives the task back after its agent failed; retry makes it ready, else failed.
CREATE FUNCTION baton.fail_attempt(p_task_id text, p_owner text, p_claim_version bigint, p_reason text, p_retry boolean)
RETURNS baton.fenced_result LANGUAGE plpgsql AS $$
BEGIN
  IF NOT baton.hold_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.refuse_stale_write(p_task_id, p_owner, p_claim_version, 'fail');
  END IF;
  UPDATE baton.tasks
     SET status = CASE WHEN p_retry THEN baton.ready_or_blocked(p_task_id) ELSE 'failed' END,
         owner = CASE WHEN p_retry THEN NULL ELSE owner END, lease_expires_at = NULL
   WHERE id = p_task_id;
  PERFORM baton.append_event('task', p_task_id, CASE WHEN p_retry THEN 'attempt_failed' ELSE 'failed' END,
    p_owner, p_claim_version, NULL, p_reason);
  RETURN baton.accepted_write(p_task_id);
END $$;

-- T4: a note; one tied to a claim (p_claim_version not null) is fenced like any owner write.
CREATE FUNCTION baton.add_task_note(p_task_id text, p_author text, p_claim_version bigint, p_body text)
RETURNS baton.fenced_result LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id) THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  IF p_claim_version IS NOT NULL AND NOT baton.hold_fence(p_task_id, p_author, p_claim_version) THEN
    RETURN baton.refuse_stale_write(p_task_id, p_author, p_claim_version, 'note');
  END IF;
  INSERT INTO baton.task_notes (task_id, author, claim_version, body) VALUES (p_task_id, p_author, p_claim_version, p_body);
  RETURN baton.accepted_write(p_task_id);
END $$;

-- T6: after Temporal reported the owner silent, make the task claimable again. Only the claim that
-- went silent is released: if the task has moved on, nothing changes and false is returned.
CREATE FUNCTION baton.release_claim(p_task_id text, p_claim_version bigint, p_actor text, p_kind text, p_reason text, p_details jsonb)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_owner text;
BEGIN
  IF p_kind NOT IN ('reclaimed_after_silence', 'released') THEN
    RAISE EXCEPTION 'unknown release kind %', p_kind USING ERRCODE = 'BT003';
  END IF;
  SELECT owner INTO v_owner FROM baton.tasks
   WHERE id = p_task_id AND claim_version = p_claim_version AND status = 'running' FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE baton.tasks SET status = baton.ready_or_blocked(p_task_id), owner = NULL, lease_expires_at = NULL WHERE id = p_task_id;
  PERFORM baton.append_event('task', p_task_id, p_kind, p_actor, p_claim_version, NULL, p_reason,
    coalesce(p_details, '{}'::jsonb) || jsonb_build_object('previous_owner', v_owner));
  RETURN true;
END $$;

-- T7: a verifier that is not the agent takes the submitted (or stale) artifact for checking.
CREATE FUNCTION baton.start_verification(p_task_id text, p_verifier text)
RETURNS TABLE (claim_version bigint, artifact jsonb, spec jsonb) LANGUAGE plpgsql AS $$
DECLARE
  t baton.tasks;
BEGIN
  SELECT * INTO t FROM baton.tasks WHERE id = p_task_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  IF t.owner = p_verifier THEN
    RAISE EXCEPTION 'task %: % produced the artifact and may not verify it', p_task_id, p_verifier USING ERRCODE = 'BT003';
  END IF;
  IF t.status = 'verifying' THEN
    -- An earlier verifier was lost before recording a result: this one starts over.
    UPDATE baton.tasks SET status = 'submitted' WHERE id = p_task_id;
    PERFORM baton.append_event('task', p_task_id, 'verification_restarted', p_verifier, t.claim_version, NULL,
      format('verifier %s did not record a result', t.verifier), jsonb_build_object('lost_verifier', t.verifier));
  END IF;
  UPDATE baton.tasks SET status = 'verifying', verifier = p_verifier WHERE id = p_task_id;
  PERFORM baton.append_event('task', p_task_id, 'verification_started', p_verifier, t.claim_version, NULL, NULL,
    jsonb_build_object('revision', t.artifact->>'revision'));
  RETURN QUERY SELECT t.claim_version, t.artifact, t.spec;
END $$;

-- T7, T8: records a verification of the exact artifact; if it passed, the task is verified,
-- dependents whose dependencies are all verified become ready with those revisions pinned, and
-- dependents verified against an older revision of this task become stale.
CREATE FUNCTION baton.record_verification(
  p_task_id text, p_verifier text, p_claim_version bigint, p_revision text, p_command text,
  p_exit_code integer, p_output_digest text, p_output_tail text
) RETURNS TABLE (status text, released text[], staled text[]) LANGUAGE plpgsql AS $$
DECLARE
  t baton.tasks;
  v_passed boolean := p_exit_code = 0;
  v_released text[] := '{}';
  v_staled text[] := '{}';
  d record;
  v_pins jsonb;
BEGIN
  SELECT * INTO t FROM baton.tasks WHERE id = p_task_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
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
    PERFORM baton.append_event('task', p_task_id, 'rejected', p_verifier, p_claim_version, NULL,
      format('%s exited %s', p_command, p_exit_code), jsonb_build_object('revision', p_revision, 'output_digest', p_output_digest));
    RETURN QUERY SELECT 'rejected'::text, v_released, v_staled;
    RETURN;
  END IF;

  -- Pins stay what the artifact was built on (set at release); they are never rewritten here.
  UPDATE baton.tasks SET status = 'verified', verified_revision = p_revision WHERE id = p_task_id;
  PERFORM baton.append_event('task', p_task_id, 'verified', p_verifier, p_claim_version, NULL, NULL,
    jsonb_build_object('revision', p_revision, 'command', p_command, 'output_digest', p_output_digest));

  FOR d IN
    SELECT dt.* FROM baton.task_dependencies dep JOIN baton.tasks dt ON dt.id = dep.task_id
     WHERE dep.depends_on = p_task_id ORDER BY dt.id FOR UPDATE OF dt
  LOOP
    IF d.status = 'blocked' AND NOT EXISTS (
      SELECT 1 FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on
       WHERE x.task_id = d.id AND u.status <> 'verified'
    ) THEN
      SELECT jsonb_object_agg(u.key, u.verified_revision) INTO v_pins
        FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = d.id;
      UPDATE baton.tasks SET status = 'ready', upstream_revisions = v_pins WHERE id = d.id;
      PERFORM baton.append_event('task', d.id, 'released', p_verifier, d.claim_version, NULL,
        'all dependencies verified', jsonb_build_object('upstream_revisions', v_pins));
      v_released := v_released || d.id;
    ELSIF d.status = 'verified' AND d.upstream_revisions ? t.key AND d.upstream_revisions->>t.key <> p_revision THEN
      UPDATE baton.tasks SET status = 'stale' WHERE id = d.id;
      PERFORM baton.append_event('task', d.id, 'marked_stale', p_verifier, d.claim_version, NULL,
        format('%s was verified at %s; this task was verified against %s', t.key, p_revision, d.upstream_revisions->>t.key),
        jsonb_build_object('upstream', t.key, 'old_revision', d.upstream_revisions->>t.key, 'new_revision', p_revision));
      v_staled := v_staled || d.id;
    END IF;
  END LOOP;
  RETURN QUERY SELECT 'verified'::text, v_released, v_staled;
END $$;

-- Policy moves outside an owner's claim: retry a rejected task, give up on it, re-run a verified one.
CREATE FUNCTION baton.set_task_status(p_task_id text, p_actor text, p_to text, p_kind text, p_reason text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t baton.tasks;
  v_count bigint;
BEGIN
  SELECT * INTO t FROM baton.tasks WHERE id = p_task_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM baton.task_statuses WHERE status = p_to) THEN
    RAISE EXCEPTION 'unknown task status %', p_to USING ERRCODE = 'BT003';
  END IF;
  IF p_to = t.status THEN
    RETURN t.status; -- already there (e.g. a retried activity): no change, no event
  END IF;
  -- Only policy and operator moves; claims, submits and verifications have their own functions.
  IF NOT ((t.status, p_to) IN (('rejected', 'ready'), ('rejected', 'failed'), ('ready', 'failed'), ('verified', 'ready'),
                               ('stale', 'ready'), ('failed', 'ready'))
          OR (p_to = 'cancelled' AND t.status IN ('blocked', 'ready', 'running', 'submitted'))) THEN
    RAISE EXCEPTION 'task %: % -> % goes through a claim, its owner or a verifier, not a status change', p_task_id, t.status, p_to
      USING ERRCODE = 'BT001';
  END IF;
  UPDATE baton.tasks SET status = p_to,
         owner = CASE WHEN p_to = 'ready' THEN NULL ELSE owner END,
         lease_expires_at = NULL,
         -- A task sent round again is built on its dependencies' current verified revisions.
         upstream_revisions = CASE WHEN p_to = 'ready' THEN coalesce((
           SELECT jsonb_object_agg(u.key, u.verified_revision)
             FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = p_task_id
         ), '{}'::jsonb) ELSE upstream_revisions END
   WHERE id = p_task_id;
  PERFORM baton.append_event('task', p_task_id, p_kind, p_actor, t.claim_version, NULL, p_reason,
    jsonb_build_object('from', t.status, 'to', p_to));
  IF t.status = 'verified' THEN
    -- Dependents released against the old revision but not yet started wait for the new one.
    WITH reblocked AS (
      UPDATE baton.tasks dt SET status = 'blocked', upstream_revisions = '{}'::jsonb
        FROM baton.task_dependencies dep
       WHERE dep.depends_on = p_task_id AND dt.id = dep.task_id AND dt.status = 'ready'
      RETURNING dt.id, dt.claim_version
    )
    SELECT count(*) INTO STRICT v_count FROM (
      SELECT baton.append_event('task', r.id, 'reblocked', p_actor, r.claim_version, NULL,
        format('upstream %s is being re-run', t.key)) FROM reblocked r
    ) appended;
  END IF;
  RETURN t.status;
END $$;

-- T8: a validated graph, written atomically: graph, tasks (ready when they depend on nothing,
-- else blocked), dependencies and one 'created' event per task.
CREATE FUNCTION baton.submit_graph(p_graph_id text, p_actor text, p_spec jsonb, p_tasks jsonb)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_task jsonb;
  v_dep text;
  v_count integer := 0;
BEGIN
  INSERT INTO baton.graphs (id, submitted_by, spec) VALUES (p_graph_id, p_actor, p_spec);
  PERFORM baton.append_event('graph', p_graph_id, 'submitted', p_actor, NULL, NULL, NULL,
    jsonb_build_object('tasks', jsonb_array_length(p_tasks)));
  FOR v_task IN SELECT * FROM jsonb_array_elements(p_tasks) LOOP
    INSERT INTO baton.tasks (id, graph_id, key, spec, status)
      VALUES (p_graph_id || '/' || (v_task->>'key'), p_graph_id, v_task->>'key', v_task->'spec',
              CASE WHEN jsonb_array_length(v_task->'dependsOn') = 0 THEN 'ready' ELSE 'blocked' END);
    v_count := v_count + 1;
  END LOOP;
  FOR v_task IN SELECT * FROM jsonb_array_elements(p_tasks) LOOP
    FOR v_dep IN SELECT * FROM jsonb_array_elements_text(v_task->'dependsOn') LOOP
      INSERT INTO baton.task_dependencies (task_id, depends_on)
        VALUES (p_graph_id || '/' || (v_task->>'key'), p_graph_id || '/' || v_dep);
    END LOOP;
    PERFORM baton.append_event('task', p_graph_id || '/' || (v_task->>'key'), 'created', p_actor, 0, NULL, NULL,
      jsonb_build_object('depends_on', v_task->'dependsOn'));
  END LOOP;
  RETURN v_count;
END $$;
