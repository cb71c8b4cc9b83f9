-- SPEC U6: what the metrics endpoint reads. Counters and histograms come from the event log (the
-- record every change is written to in its own transaction), so every exporter reports the same
-- deployment-wide figures, and none is lost with a process that dies: a scrape after a kill still
-- matches the log. Rows carry counts and durations only, never an identity, a reason or a payload,
-- so every component role may read them (the agent API service included).

-- Events after `p_after` in id order, at most `p_limit`, each with the labels and the duration
-- (seconds) its metric needs: a verification passed since the claim it verified; a reclaim since the
-- silent owner's last heartbeat.
CREATE FUNCTION baton.metrics_events(p_after bigint, p_limit integer)
RETURNS TABLE (id bigint, subject_kind text, kind text, labels jsonb, amount bigint, seconds double precision)
LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT e.id, e.subject_kind, e.kind,
         CASE
           WHEN e.subject_kind = 'task' AND e.kind = 'stale_write_refused'
             THEN jsonb_build_object('action', coalesce(e.details->>'action', 'unknown'))
           WHEN e.subject_kind IN ('object', 'agent') AND e.details ? 'refusal'
             THEN jsonb_build_object('refusal', e.details->>'refusal', 'operation', coalesce(e.details->>'operation', 'none'))
           ELSE '{}'::jsonb
         END,
         CASE WHEN e.kind = 'api_refused' AND e.details ? 'count' THEN (e.details->>'count')::bigint ELSE 1 END,
         CASE
           WHEN e.subject_kind = 'task' AND e.kind = 'verified' THEN
             (SELECT extract(epoch FROM e.at - c.at)::double precision FROM baton.events c
               WHERE c.subject_kind = 'task' AND c.subject_id = e.subject_id AND c.kind = 'claimed' AND c.fence = e.fence
               ORDER BY c.subject_seq DESC LIMIT 1)
           WHEN e.subject_kind = 'task' AND e.kind = 'reclaimed_after_silence' AND e.details ? 'silent_since'
             THEN extract(epoch FROM e.at - (e.details->>'silent_since')::timestamptz)::double precision
         END
    FROM baton.events e
   WHERE e.id > p_after
   ORDER BY e.id
   LIMIT p_limit
$$;
GRANT EXECUTE ON FUNCTION baton.metrics_events TO baton_worker, baton_client, baton_reader, baton_agent;

-- What is waiting now: tasks by status, and the offers of each pool no agent has taken yet.
CREATE FUNCTION baton.metrics_gauges()
RETURNS TABLE (name text, labels jsonb, value bigint)
LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT 'tasks', jsonb_build_object('status', t.status), count(*) FROM baton.tasks t GROUP BY t.status
  UNION ALL
  SELECT 'pool_offers_waiting', jsonb_build_object('pool', w.pool), count(*)
    FROM baton.pool_runs w JOIN baton.tasks t ON t.id = w.task_id
   WHERE w.agent IS NULL AND t.status = 'running' AND t.claim_version = w.claim_version
   GROUP BY w.pool
$$;
GRANT EXECUTE ON FUNCTION baton.metrics_gauges TO baton_worker, baton_client, baton_reader, baton_agent;
