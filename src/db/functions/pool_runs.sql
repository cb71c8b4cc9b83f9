-- Pooled runs (SPEC U7): the worker holding a claim offers its run to the remote agents of a pool,
-- and reads how the run is going while it relays it. The agents take and serve the run through the
-- agent door (agent_door.sql: pool.claim, heartbeat, submit).

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

-- U11: at most p_max_running of pool p_pool's tasks run at once, across every graph; NULL lifts
-- the limit. Set by an operator (p_actor, recorded with it); claims enforce it (claim_within_limits).
-- Returns the limit now in force.
CREATE FUNCTION baton.pool_limit_set(p_pool text, p_max_running integer, p_actor text) RETURNS integer LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF coalesce(p_pool, '') !~ '^[a-z0-9][a-z0-9_-]{0,62}$' THEN
    RAISE EXCEPTION 'pool must be 1 to 63 lowercase letters, digits, _ or -, not %', coalesce(p_pool, 'none') USING ERRCODE = 'BT003';
  END IF;
  IF p_max_running IS NULL THEN
    DELETE FROM baton.pool_limits WHERE pool = p_pool;
    RETURN NULL;
  END IF;
  IF p_max_running NOT BETWEEN 1 AND 10000 THEN
    RAISE EXCEPTION 'a pool limit is from 1 to 10000 running tasks, not %', p_max_running USING ERRCODE = 'BT003';
  END IF;
  INSERT INTO baton.pool_limits (pool, max_running, set_by) VALUES (p_pool, p_max_running, p_actor)
  ON CONFLICT (pool) DO UPDATE SET max_running = EXCLUDED.max_running, set_by = EXCLUDED.set_by, set_at = now();
  RETURN p_max_running;
END $$;
GRANT EXECUTE ON FUNCTION baton.pool_limit_set TO baton_client;
