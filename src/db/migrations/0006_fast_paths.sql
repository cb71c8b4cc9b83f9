-- Fewer statements on the two hottest paths, found by `npm run bench` (issue 6):
--  - an owner's submit and heartbeat check the fence in the UPDATE itself (one statement instead
--    of lock-then-update-then-read), with the fence predicate still defined once;
--  - a task's status is checked once, by the state machine trigger (a new task starts blocked or
--    ready; every change must be a row of task_transitions, whose statuses are foreign keys): the
--    foreign key from tasks.status repeated that check on every update;
--  - claim_next_task orders ready tasks by (created_at, id); the ready index was (graph_id, id) and
--    its graph filter was `p_graph_id IS NULL OR graph_id = p_graph_id`, so each claim read and
--    sorted every ready row (2.2x slower with 2,000 ready): now one index per form of the claim;
--  - a claim given back by a run that failed under its agent was logged as `released`, the event
--    that also means "dependencies verified, task ready": it is `claim_released` now;
--  - a run or verification reads the graph's repo and base from columns, not by loading the whole
--    graph spec (1.2 MB for 10,000 tasks) twice per task.

-- T4: the fence, defined once: the caller holds this claim of the task.
CREATE FUNCTION baton.holds_claim(t baton.tasks, p_owner text, p_claim_version bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT t.owner = p_owner AND t.claim_version = p_claim_version AND t.status = 'running'
$$;

-- Locks the task if, and only if, the caller still holds this claim.
CREATE OR REPLACE FUNCTION baton.hold_fence(p_task_id text, p_owner text, p_claim_version bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM baton.tasks t WHERE t.id = p_task_id AND baton.holds_claim(t, p_owner, p_claim_version) FOR UPDATE OF t;
  RETURN FOUND;
END $$;

-- T4: the owner's heartbeat extends its lease (database clock) and stores progress.
CREATE OR REPLACE FUNCTION baton.heartbeat_task(p_task_id text, p_owner text, p_claim_version bigint, p_lease_ms integer, p_progress jsonb)
RETURNS baton.fenced_result LANGUAGE plpgsql AS $$
DECLARE
  r baton.fenced_result;
BEGIN
  UPDATE baton.tasks t
     SET heartbeat_at = now(), lease_expires_at = now() + p_lease_ms * interval '1 millisecond',
         progress = coalesce(p_progress, t.progress)
   WHERE t.id = p_task_id AND baton.holds_claim(t, p_owner, p_claim_version)
  RETURNING true, t.status, t.owner, t.claim_version, t.lease_expires_at INTO r;
  IF NOT FOUND THEN
    RETURN baton.refuse_stale_write(p_task_id, p_owner, p_claim_version, 'heartbeat');
  END IF;
  RETURN r;
END $$;

-- T4, T7: the owner submits its artifact (revision, test command, its own result).
CREATE OR REPLACE FUNCTION baton.submit_task(p_task_id text, p_owner text, p_claim_version bigint, p_artifact jsonb)
RETURNS baton.fenced_result LANGUAGE plpgsql AS $$
DECLARE
  r baton.fenced_result;
BEGIN
  IF p_artifact IS NULL OR coalesce(p_artifact->>'revision', '') = '' THEN
    RAISE EXCEPTION 'task %: an artifact must name its revision', p_task_id USING ERRCODE = 'BT003';
  END IF;
  UPDATE baton.tasks t SET status = 'submitted', artifact = p_artifact, lease_expires_at = NULL
   WHERE t.id = p_task_id AND baton.holds_claim(t, p_owner, p_claim_version)
  RETURNING true, t.status, t.owner, t.claim_version, t.lease_expires_at INTO r;
  IF NOT FOUND THEN
    -- The same submit again (its first answer was lost): accepted, and nothing changes.
    IF EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id AND owner = p_owner AND claim_version = p_claim_version
                AND artifact->>'revision' = p_artifact->>'revision' AND status <> 'running') THEN
      RETURN baton.accepted_write(p_task_id);
    END IF;
    RETURN baton.refuse_stale_write(p_task_id, p_owner, p_claim_version, 'submit');
  END IF;
  PERFORM baton.append_event('task', p_task_id, 'submitted', p_owner, p_claim_version, NULL, NULL,
    jsonb_build_object('revision', p_artifact->>'revision'));
  RETURN r;
END $$;

ALTER TABLE baton.graphs
  ADD COLUMN repo text GENERATED ALWAYS AS (spec->>'repo') STORED,
  ADD COLUMN base text GENERATED ALWAYS AS (spec->>'base') STORED;

ALTER TABLE baton.tasks DROP CONSTRAINT tasks_status_fkey;

DROP INDEX baton.tasks_ready_idx;
CREATE INDEX tasks_ready_in_graph_idx ON baton.tasks (graph_id, created_at, id) WHERE status = 'ready';
CREATE INDEX tasks_ready_idx ON baton.tasks (created_at, id) WHERE status = 'ready';

-- T3: claim the next ready task, optionally within one graph: the oldest first, one index entry read.
CREATE OR REPLACE FUNCTION baton.claim_next_task(p_owner text, p_lease_ms integer, p_graph_id text DEFAULT NULL)
RETURNS SETOF baton.claim LANGUAGE plpgsql AS $$
DECLARE
  v_id text;
BEGIN
  IF p_lease_ms IS NULL OR p_lease_ms < 1 THEN
    RAISE EXCEPTION 'lease must be a positive number of milliseconds, not %', p_lease_ms USING ERRCODE = 'BT003';
  END IF;
  IF p_graph_id IS NULL THEN
    SELECT id INTO v_id FROM baton.tasks WHERE status = 'ready'
     ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED;
  ELSE
    SELECT id INTO v_id FROM baton.tasks WHERE status = 'ready' AND graph_id = p_graph_id
     ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED;
  END IF;
  IF FOUND THEN
    RETURN NEXT baton.take_claim(v_id, p_owner, p_lease_ms);
  END IF;
END $$;

-- T6: make a running task claimable again, after its owner went silent (reclaimed_after_silence) or
-- its run failed under the agent (claim_released). Only that claim: if the task has moved on,
-- nothing changes and false is returned.
CREATE OR REPLACE FUNCTION baton.release_claim(p_task_id text, p_claim_version bigint, p_actor text, p_kind text, p_reason text, p_details jsonb)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_owner text;
BEGIN
  IF p_kind NOT IN ('reclaimed_after_silence', 'claim_released') THEN
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
