-- What components read (SPEC S1): no role but the owner may read a table, so every read is one of
-- these functions, granted to the groups that need it. They take no lock and change nothing; an
-- unknown task or graph is BT002.

-- A task as baton's code sees it: one row, read as `FROM baton.tasks t, baton.task_view(t) v`.
-- Named there, a set-returning SQL function is inlined into the query like a view; called as
-- `(baton.task_view(t)).*` it was planned again on every read, once for each of its 16 columns.
CREATE FUNCTION baton.task_view(t baton.tasks) RETURNS SETOF baton.task_view LANGUAGE sql STABLE AS $$
  SELECT t.id, t.graph_id, t.key, t.spec, t.status, t.owner, t.claim_version, t.claimed_at, t.lease_expires_at,
         t.attempts, t.progress, t.artifact, t.verified_revision, t.upstream_revisions,
         coalesce(t.lease_expires_at < now(), false),
         coalesce((SELECT array_agg(u.key ORDER BY u.key) FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on
                    WHERE d.task_id = t.id), '{}')
$$;

CREATE FUNCTION baton.task_read(p_task_id text) RETURNS SETOF baton.task_view LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  RETURN QUERY SELECT v.* FROM baton.tasks t, baton.task_view(t) v WHERE t.id = p_task_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
END $$;
GRANT EXECUTE ON FUNCTION baton.task_read TO baton_worker, baton_client, baton_reader;

-- Every task of a graph, by key.
CREATE FUNCTION baton.graph_read_tasks(p_graph_id text) RETURNS SETOF baton.task_view LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = p_graph_id) THEN
    RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002';
  END IF;
  RETURN QUERY SELECT v.* FROM baton.tasks t, baton.task_view(t) v WHERE t.graph_id = p_graph_id ORDER BY t.key;
END $$;
GRANT EXECUTE ON FUNCTION baton.graph_read_tasks TO baton_worker, baton_client, baton_reader;

-- The graph as submitted, and where its runs work (repo, base).
CREATE FUNCTION baton.graph_read(p_graph_id text)
RETURNS TABLE (spec jsonb, submitted_by text, submitted_at timestamptz, repo text, base text) LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  RETURN QUERY SELECT g.spec, g.submitted_by, g.submitted_at, g.repo, g.base FROM baton.graphs g WHERE g.id = p_graph_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002';
  END IF;
END $$;
GRANT EXECUTE ON FUNCTION baton.graph_read TO baton_worker, baton_client, baton_reader;

-- A graph's state (GRAPH_STATES in src/tasks/states.ts) from the statuses its tasks are in: the
-- first that holds.
CREATE FUNCTION baton.graph_state_of(p_present text[]) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_present <@ ARRAY['verified'] THEN 'verified'
              WHEN p_present && ARRAY['ready', 'running', 'submitted', 'verifying', 'rejected'] THEN 'running'
              WHEN 'awaiting_approval' = ANY (p_present) THEN 'awaiting_approval'
              WHEN 'failed' = ANY (p_present) THEN 'failed'
              WHEN 'cancelled' = ANY (p_present) THEN 'cancelled'
              WHEN 'stale' = ANY (p_present) THEN 'stale'
              ELSE 'blocked' END
$$;

-- One graph's state, as graph_list gives it, and its tasks' ids by status (each list by key): what
-- a client waiting for the graph to end reads.
CREATE FUNCTION baton.graph_progress(p_graph_id text) RETURNS TABLE (state text, task_ids jsonb) LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = p_graph_id) THEN
    RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002';
  END IF;
  RETURN QUERY
  SELECT baton.graph_state_of(coalesce(array_agg(s.status), '{}')), coalesce(jsonb_object_agg(s.status, s.ids), '{}')
    FROM (SELECT t.status, jsonb_agg(t.id ORDER BY t.key) AS ids FROM baton.tasks t WHERE t.graph_id = p_graph_id GROUP BY t.status) s;
END $$;
GRANT EXECUTE ON FUNCTION baton.graph_progress TO baton_worker, baton_client, baton_reader;

-- Graphs, newest first, each with its task count, how many of its tasks are in each status, and its
-- state (GRAPH_STATES in src/tasks/states.ts, the first that holds). A NULL p_state,
-- p_submitted_within (submitted that long ago or later, by the database clock) or p_search (in the
-- graph's id or its submitter, any case) narrows nothing.
CREATE FUNCTION baton.graph_list(p_state text, p_submitted_within interval, p_limit integer, p_search text DEFAULT NULL)
RETURNS TABLE (id text, submitted_by text, submitted_at timestamptz, tasks integer, counts jsonb, state text)
LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
BEGIN
  IF p_state IS NOT NULL AND p_state NOT IN ('verified', 'running', 'awaiting_approval', 'failed', 'cancelled', 'stale', 'blocked') THEN
    RAISE EXCEPTION 'graph state %: the states are verified, running, awaiting_approval, failed, cancelled, stale and blocked', p_state
      USING ERRCODE = 'BT003';
  END IF;
  IF p_limit IS NULL OR p_limit < 1 THEN
    RAISE EXCEPTION 'limit %: how many graphs to list, at least 1', coalesce(p_limit::text, 'NULL') USING ERRCODE = 'BT003';
  END IF;
  RETURN QUERY
  WITH listed AS (
    SELECT g.id, g.submitted_by, g.submitted_at FROM baton.graphs g
     WHERE (p_submitted_within IS NULL OR g.submitted_at >= now() - p_submitted_within)
       AND (p_search IS NULL OR strpos(lower(g.id), lower(p_search)) > 0 OR strpos(lower(g.submitted_by), lower(p_search)) > 0)
     ORDER BY g.submitted_at DESC, g.id DESC
     -- Without a state to match, only the newest p_limit graphs need their tasks counted.
     LIMIT CASE WHEN p_state IS NULL THEN p_limit END
  ), counted AS (
    SELECT t.graph_id, t.status, count(*)::integer AS n
      FROM baton.tasks t JOIN listed l ON l.id = t.graph_id
     GROUP BY t.graph_id, t.status
  ), summed AS (
    SELECT l.id, l.submitted_by, l.submitted_at, coalesce(sum(c.n), 0)::integer AS tasks,
           jsonb_object_agg(s.status, coalesce(c.n, 0)) AS counts,
           coalesce(array_agg(s.status) FILTER (WHERE c.n > 0), '{}') AS present
      FROM listed l CROSS JOIN baton.task_statuses s
      LEFT JOIN counted c ON c.graph_id = l.id AND c.status = s.status
     GROUP BY l.id, l.submitted_by, l.submitted_at
  ), stated AS (
    SELECT m.id, m.submitted_by, m.submitted_at, m.tasks, m.counts, baton.graph_state_of(m.present) AS state
      FROM summed m
  )
  SELECT x.id, x.submitted_by, x.submitted_at, x.tasks, x.counts, x.state FROM stated x
   WHERE p_state IS NULL OR x.state = p_state
   ORDER BY x.submitted_at DESC, x.id DESC
   LIMIT p_limit;
END $$;
GRANT EXECUTE ON FUNCTION baton.graph_list TO baton_client, baton_reader;

-- The record of one subject in order after p_after_id, or also of every task of a graph when
-- p_include_graph_tasks (the subject is then a graph id); an archived graph's from the archive (U11).
CREATE FUNCTION baton.event_read(p_subject_kind text, p_subject_id text, p_after_id bigint, p_include_graph_tasks boolean)
RETURNS SETOF baton.event_view LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT id, subject_kind, subject_id, subject_seq, kind, actor, at, fence, version, reason, details
    FROM (SELECT e.id, e.subject_kind, e.subject_id, e.subject_seq, e.kind, e.actor, e.at, e.fence, e.version, e.reason, e.details
            FROM baton.events e
          UNION ALL
          SELECT a.id, a.subject_kind, a.subject_id, a.subject_seq, a.kind, a.actor, a.at, a.fence, a.version, a.reason, a.details
            FROM baton.archived_events a) x
   WHERE id > p_after_id AND ((subject_kind = p_subject_kind AND subject_id = p_subject_id)
      OR (p_include_graph_tasks AND subject_kind = 'task'
          AND subject_id LIKE baton.task_id_pattern_of(p_subject_id)))
   ORDER BY id
$$;
GRANT EXECUTE ON FUNCTION baton.event_read TO baton_worker, baton_client, baton_reader;

-- The ledger rows of one task, or of every task of a graph when p_id has no '/', oldest first; an
-- archived graph's from the archive (U11).
CREATE FUNCTION baton.tool_call_read(p_id text) RETURNS SETOF baton.tool_calls LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT x.* FROM (
    SELECT * FROM baton.tool_calls
    UNION ALL
    SELECT c.* FROM baton.archives a, jsonb_populate_recordset(NULL::baton.tool_calls, a.tool_calls) c
     WHERE a.graph_id = split_part(p_id, '/', 1)
  ) x
   WHERE x.task_id = p_id OR (p_id NOT LIKE '%/%' AND x.task_id LIKE baton.task_id_pattern_of(p_id))
   ORDER BY x.created_at, x.task_id, x.step
$$;
GRANT EXECUTE ON FUNCTION baton.tool_call_read TO baton_worker, baton_client, baton_reader;

-- The most recent health checks, newest first.
CREATE FUNCTION baton.health_check_read(p_limit integer) RETURNS SETOF baton.health_checks LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT * FROM baton.health_checks ORDER BY id DESC LIMIT p_limit
$$;
GRANT EXECUTE ON FUNCTION baton.health_check_read TO baton_worker, baton_client, baton_reader;

-- Records one health check; a retried activity finds its earlier row instead of adding one.
CREATE FUNCTION baton.health_check_record(p_workflow_id text, p_message text) RETURNS SETOF baton.health_checks LANGUAGE sql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  INSERT INTO baton.health_checks (workflow_id, message) VALUES (p_workflow_id, p_message)
  ON CONFLICT (workflow_id) DO UPDATE SET workflow_id = EXCLUDED.workflow_id
  RETURNING *
$$;
GRANT EXECUTE ON FUNCTION baton.health_check_record TO baton_worker, baton_client;

-- A shared object's record after p_after_seq. Callers check view access first (object_show).
CREATE FUNCTION baton.object_read_events(p_key text, p_after_seq integer, p_limit integer)
RETURNS SETOF baton.event_view LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT id, subject_kind, subject_id, subject_seq, kind, actor, at, fence, version, reason, details FROM baton.events
   WHERE subject_kind = 'object' AND subject_id = p_key AND subject_seq > p_after_seq
   ORDER BY subject_seq LIMIT p_limit
$$;
GRANT EXECUTE ON FUNCTION baton.object_read_events TO baton_worker, baton_client;

-- What this database has applied: every migration (by id) and definition file, with its checksum,
-- so a component that may not migrate can tell whether the schema is current.
CREATE FUNCTION baton.read_schema_state() RETURNS TABLE (kind text, name text, checksum text) LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT 'migration', id::text, migrations.checksum FROM baton.migrations
  UNION ALL
  SELECT 'definition', file, definitions.checksum FROM baton.definitions
$$;
GRANT EXECUTE ON FUNCTION baton.read_schema_state TO baton_worker, baton_client, baton_reader, baton_agent;
