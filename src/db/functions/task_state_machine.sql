-- The task state machine (SPEC T2), enforced by triggers whoever writes: allowed transitions
-- are rows of baton.task_transitions (migration 0003), and a task becomes ready only when every
-- dependency is verified.

-- The state machine, enforced whoever writes: a client bug or a hostile agent cannot skip a state.
CREATE FUNCTION baton.task_check_change() RETURNS trigger LANGUAGE plpgsql AS $$
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
  FOR EACH ROW EXECUTE FUNCTION baton.task_check_change();

-- T8, enforced whoever writes: a dependent becomes ready only when every dependency is verified.
CREATE FUNCTION baton.task_check_release() RETURNS trigger LANGUAGE plpgsql AS $$
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
  EXECUTE FUNCTION baton.task_check_release();

-- Where a task goes when it is given back: ready, unless an upstream task is being re-run.
CREATE FUNCTION baton.task_ready_or_blocked(p_task_id text) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN EXISTS (
    SELECT 1 FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on
     WHERE d.task_id = p_task_id AND u.status <> 'verified'
  ) THEN 'blocked' ELSE 'ready' END
$$;

-- Locks the task for a change and returns it; a task that does not exist is an error (BT002).
CREATE FUNCTION baton.task_lock(p_task_id text) RETURNS baton.tasks LANGUAGE plpgsql AS $$
DECLARE
  t baton.tasks;
BEGIN
  SELECT * INTO t FROM baton.tasks WHERE id = p_task_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  RETURN t;
END $$;
