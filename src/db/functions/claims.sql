-- Claims (SPEC T3, T6): one short transaction with FOR UPDATE SKIP LOCKED sets the owner, bumps
-- the claim version and starts the lease on the database clock; a claim given back (after silence,
-- or by a run that failed under its agent) releases exactly that claim version.

-- p_store_claim: taken through the store path (task_claim_next), so no run attempt in Temporal
-- holds it and the watch on silent claims passes it over (claims_silent).
CREATE FUNCTION baton.claim_take(p_task_id text, p_owner text, p_lease_ms integer, p_store_claim boolean) RETURNS baton.claim
LANGUAGE plpgsql AS $$
DECLARE
  c baton.claim;
BEGIN
  UPDATE baton.tasks
     SET status = 'running', owner = p_owner, claim_version = claim_version + 1,
         claimed_at = now(), heartbeat_at = now(), lease_expires_at = now() + p_lease_ms * interval '1 millisecond',
         attempts = attempts + 1, progress = NULL, artifact = NULL, store_claim = p_store_claim
   WHERE id = p_task_id
  RETURNING id, graph_id, key, spec, claim_version, lease_expires_at, attempts, upstream_revisions INTO c;
  PERFORM baton.event_append('task', c.task_id, 'claimed', p_owner, c.claim_version, NULL, NULL,
    jsonb_build_object('attempt', c.attempts, 'lease_expires_at', c.lease_expires_at));
  RETURN c;
END $$;

-- A lease is a positive number of milliseconds (BT003 otherwise).
CREATE FUNCTION baton.claim_check_lease(p_lease_ms integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_lease_ms IS NULL OR p_lease_ms < 1 THEN
    RAISE EXCEPTION 'lease must be a positive number of milliseconds, not %', p_lease_ms USING ERRCODE = 'BT003';
  END IF;
END $$;

-- T3: claim one named task if it is ready and, when p_max_attempts is given, has attempts left. Returns no
-- row when it is not (or another claim holds its lock). With the claim, its graph's repository and
-- base, which the run needs next (no read of its own).
CREATE FUNCTION baton.task_claim(p_task_id text, p_owner text, p_lease_ms integer, p_max_attempts integer DEFAULT NULL)
RETURNS TABLE (task_id text, graph_id text, key text, spec jsonb, claim_version bigint, lease_expires_at timestamptz,
               attempts integer, upstream_revisions jsonb, repo text, base text)
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  v_id text;
  v_limits jsonb;
BEGIN
  PERFORM baton.claim_check_lease(p_lease_ms);
  SELECT t.id, t.limits INTO v_id, v_limits FROM baton.tasks t
   WHERE t.id = p_task_id AND t.status = 'ready' AND (p_max_attempts IS NULL OR t.attempts < p_max_attempts)
     FOR UPDATE SKIP LOCKED;
  IF FOUND AND (v_limits IS NULL OR baton.claim_within_limits(v_id, v_limits)) THEN
    RETURN QUERY SELECT c.*, g.repo, g.base FROM baton.claim_take(v_id, p_owner, p_lease_ms, false) c JOIN baton.graphs g ON g.id = c.graph_id;
  END IF;
END $$;
GRANT EXECUTE ON FUNCTION baton.task_claim TO baton_worker;

-- U11: whether task p_task_id may be claimed now under its limits (tasks.limits): fewer than
-- `graph` of its graph's tasks running, fewer than `keyLimit` of all tasks with its `key`, and
-- fewer than its `pool`'s limit (pool_limits, when an operator set one) of the pool's tasks.
-- Each count is taken under a transaction lock on the graph, then on the key, then on the pool
-- (always in that order), held until the claim commits: two claims cannot both take the last place.
CREATE FUNCTION baton.claim_within_limits(p_task_id text, p_limits jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_graph text;
  v_max integer;
BEGIN
  IF p_limits ? 'graph' THEN
    SELECT graph_id INTO STRICT v_graph FROM baton.tasks WHERE id = p_task_id;
    PERFORM pg_advisory_xact_lock(hashtext('baton.limit.graph'), hashtext(v_graph));
    IF (SELECT count(*) FROM baton.tasks WHERE status = 'running' AND graph_id = v_graph) >= (p_limits->>'graph')::integer THEN
      RETURN false;
    END IF;
  END IF;
  IF p_limits ? 'key' THEN
    PERFORM pg_advisory_xact_lock(hashtext('baton.limit.key'), hashtext(p_limits->>'key'));
    IF (SELECT count(*) FROM baton.tasks WHERE status = 'running' AND limits->>'key' = p_limits->>'key')
       >= (p_limits->>'keyLimit')::integer THEN
      RETURN false;
    END IF;
  END IF;
  -- A pool's limit is an operator's (pool_limits); a pool without one reads one row and nothing more.
  IF p_limits ? 'pool' THEN
    SELECT max_running INTO v_max FROM baton.pool_limits WHERE pool = p_limits->>'pool';
    IF FOUND THEN
      PERFORM pg_advisory_xact_lock(hashtext('baton.limit.pool'), hashtext(p_limits->>'pool'));
      IF (SELECT count(*) FROM baton.tasks WHERE status = 'running' AND limits->>'pool' = p_limits->>'pool') >= v_max THEN
        RETURN false;
      END IF;
    END IF;
  END IF;
  RETURN true;
END $$;

-- T3: claim the next ready task, optionally within one graph: the oldest first, one index entry read.
-- U11: the oldest is claimed only within its limits (none else is tried: a store-path claimer with
-- limits asks again, as after finding nothing).
CREATE FUNCTION baton.task_claim_next(p_owner text, p_lease_ms integer, p_graph_id text DEFAULT NULL)
RETURNS SETOF baton.claim LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  v_id text;
  v_limits jsonb;
BEGIN
  PERFORM baton.claim_check_lease(p_lease_ms);
  IF p_graph_id IS NULL THEN
    SELECT id, limits INTO v_id, v_limits FROM baton.tasks WHERE status = 'ready'
     ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED;
  ELSE
    SELECT id, limits INTO v_id, v_limits FROM baton.tasks WHERE status = 'ready' AND graph_id = p_graph_id
     ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED;
  END IF;
  IF FOUND AND (v_limits IS NULL OR baton.claim_within_limits(v_id, v_limits)) THEN
    RETURN NEXT baton.claim_take(v_id, p_owner, p_lease_ms, true);
  END IF;
END $$;
GRANT EXECUTE ON FUNCTION baton.task_claim_next TO baton_worker;

-- T6: make a running task claimable again, after its owner went silent (reclaimed_after_silence), its
-- run failed under the agent (claim_released), or its owner handed it back unfinished as it shut
-- down (handed_back: by the owner only, and the attempt is given back with it, so a deploy costs a
-- task none of its attempts). Only that claim: if the task has moved on, nothing changes and false
-- is returned.
CREATE FUNCTION baton.claim_release(p_task_id text, p_claim_version bigint, p_actor text, p_kind text, p_reason text, p_details jsonb)
RETURNS boolean LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  v_owner text;
  v_heartbeat_at timestamptz;
BEGIN
  IF p_kind NOT IN ('reclaimed_after_silence', 'claim_released', 'handed_back') THEN
    RAISE EXCEPTION 'unknown release kind %', p_kind USING ERRCODE = 'BT003';
  END IF;
  SELECT owner, heartbeat_at INTO v_owner, v_heartbeat_at FROM baton.tasks
   WHERE id = p_task_id AND claim_version = p_claim_version AND status = 'running' FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF p_kind = 'handed_back' AND v_owner IS DISTINCT FROM p_actor THEN
    RAISE EXCEPTION '% may not hand back claim version % of task %: % holds it', p_actor, p_claim_version, p_task_id, v_owner
      USING ERRCODE = 'BT003';
  END IF;
  UPDATE baton.tasks
     SET status = baton.task_ready_or_blocked(p_task_id), owner = NULL, lease_expires_at = NULL,
         attempts = attempts - CASE WHEN p_kind = 'handed_back' THEN 1 ELSE 0 END
   WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, p_kind, p_actor, p_claim_version, NULL, p_reason,
    coalesce(p_details, '{}'::jsonb) || jsonb_build_object('previous_owner', v_owner)
      -- The owner's last sign of life: a recovery's length is measured from it (baton_recovery_seconds).
      || CASE WHEN p_kind = 'reclaimed_after_silence' THEN jsonb_build_object('silent_since', v_heartbeat_at) ELSE '{}'::jsonb END);
  RETURN true;
END $$;
GRANT EXECUTE ON FUNCTION baton.claim_release TO baton_worker;

-- T6: claims whose lease ran out on the database clock in the last p_within_ms (their owner stopped
-- heartbeating, or froze), the latest first, with the lease each was given (the graph's heartbeat
-- timeout). Workers watch these tasks' run attempts in Temporal (src/temporal/silentAttempts.ts):
-- the latest first, so claims left long ago (a task queue no worker serves) never crowd out a fresh
-- silence. Store-path claims are left out: no run attempt holds them, and a stream of them running
-- out (thousands taken together) would otherwise fill every round (migration 0025). Changes nothing.
CREATE FUNCTION baton.claims_silent(p_limit integer, p_within_ms integer)
RETURNS TABLE (task_id text, owner text, claim_version bigint, lease_ms integer)
LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT t.id, t.owner, t.claim_version,
         (extract(epoch FROM t.lease_expires_at - t.heartbeat_at) * 1000)::integer
    FROM baton.tasks t
   WHERE t.status = 'running' AND NOT t.store_claim AND t.lease_expires_at < now()
     AND t.lease_expires_at > now() - p_within_ms * interval '1 millisecond'
   ORDER BY t.lease_expires_at DESC, t.id
   LIMIT p_limit
$$;
GRANT EXECUTE ON FUNCTION baton.claims_silent TO baton_worker;
