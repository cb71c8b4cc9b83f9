-- Retention (U11): after a configured age, a finished graph's record leaves the live tables for the
-- archive (migration 0017): its events (graph and tasks) to baton.archived_events, kept as they
-- were; its tasks' notes and tool-call ledger to its row of baton.archives. The graph and its tasks
-- stay (their status, verifications and pins), the log reads on from the archive (event_read), and
-- one event, `archived`, records the move in the live log. Nothing else may delete from the record.

-- Every graph whose tasks are all finished (verified, failed, cancelled) and whose last event is
-- older than p_older_than, not archived yet, oldest first, at most p_limit: each with its last event.
CREATE FUNCTION baton.retention_candidates(p_older_than interval, p_limit integer)
RETURNS TABLE (graph_id text, finished_at timestamptz) LANGUAGE sql STABLE AS $$
  SELECT g.id, last.at
    FROM baton.graphs g
    CROSS JOIN LATERAL (
      SELECT max(e.at) AS at FROM baton.events e
       WHERE (e.subject_kind = 'graph' AND e.subject_id = g.id)
          OR (e.subject_kind = 'task' AND e.subject_id LIKE baton.task_id_pattern_of(g.id))
    ) last
   WHERE NOT EXISTS (SELECT 1 FROM baton.archives a WHERE a.graph_id = g.id)
     AND NOT EXISTS (SELECT 1 FROM baton.tasks t WHERE t.graph_id = g.id AND t.status NOT IN ('verified', 'failed', 'cancelled'))
     AND last.at < now() - p_older_than
   ORDER BY last.at, g.id
   LIMIT p_limit
$$;

-- Moves the record of every finished graph older than p_older_than (at most p_limit graphs) to the
-- archive, as p_actor, and returns what it moved of each; with p_dry_run, only what it would move.
-- A graph is locked (its tasks, in id order) and checked again before its record moves, so a rerun
-- that starts meanwhile keeps it live.
CREATE FUNCTION baton.retention_apply(p_older_than interval, p_actor text, p_dry_run boolean, p_limit integer)
RETURNS TABLE (graph_id text, finished_at timestamptz, events integer, notes integer, tool_calls integer) LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
#variable_conflict use_column
DECLARE
  c record;
  v_pattern text;
  v_events integer;
  v_notes jsonb;
  v_calls jsonb;
  v_seq integer;
BEGIN
  IF p_older_than IS NULL OR p_older_than < interval '0' THEN
    RAISE EXCEPTION 'retention: the age is 0 or more, not %', coalesce(p_older_than::text, 'none') USING ERRCODE = 'BT003';
  END IF;
  IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 10000 THEN
    RAISE EXCEPTION 'retention: archive 1 to 10000 graphs at a time, not %', coalesce(p_limit::text, 'none') USING ERRCODE = 'BT003';
  END IF;
  PERFORM baton.object_check_actor(p_actor, 'actor');
  FOR c IN SELECT * FROM baton.retention_candidates(p_older_than, p_limit) LOOP
    v_pattern := baton.task_id_pattern_of(c.graph_id);
    PERFORM 1 FROM baton.tasks t WHERE t.graph_id = c.graph_id ORDER BY t.id FOR UPDATE;
    CONTINUE WHEN EXISTS (SELECT 1 FROM baton.tasks t WHERE t.graph_id = c.graph_id AND t.status NOT IN ('verified', 'failed', 'cancelled'));
    SELECT count(*) INTO v_events FROM baton.events e
     WHERE (e.subject_kind = 'graph' AND e.subject_id = c.graph_id) OR (e.subject_kind = 'task' AND e.subject_id LIKE v_pattern);
    SELECT coalesce(jsonb_agg(to_jsonb(n) ORDER BY n.id), '[]'::jsonb) INTO v_notes
      FROM baton.task_notes n JOIN baton.tasks t ON t.id = n.task_id WHERE t.graph_id = c.graph_id;
    SELECT coalesce(jsonb_agg(to_jsonb(x) - 'idempotency_key' ORDER BY x.created_at, x.task_id, x.step), '[]'::jsonb) INTO v_calls
      FROM baton.tool_calls x JOIN baton.tasks t ON t.id = x.task_id WHERE t.graph_id = c.graph_id;
    graph_id := c.graph_id;
    finished_at := c.finished_at;
    events := v_events;
    notes := jsonb_array_length(v_notes);
    tool_calls := jsonb_array_length(v_calls);
    RETURN NEXT;
    CONTINUE WHEN p_dry_run;
    INSERT INTO baton.archives (graph_id, archived_by, finished_at, events, notes, tool_calls)
      VALUES (c.graph_id, p_actor, c.finished_at, v_events, v_notes, v_calls);
    INSERT INTO baton.archived_events (id, subject_kind, subject_id, subject_seq, kind, actor, at, fence, version, reason, details, graph_id)
      SELECT e.id, e.subject_kind, e.subject_id, e.subject_seq, e.kind, e.actor, e.at, e.fence, e.version, e.reason, e.details, c.graph_id
        FROM baton.events e
       WHERE (e.subject_kind = 'graph' AND e.subject_id = c.graph_id) OR (e.subject_kind = 'task' AND e.subject_id LIKE v_pattern);
    PERFORM set_config('baton.retention_moving', 'on', true);
    -- Exactly the events just copied.
    DELETE FROM baton.events e WHERE e.id IN (SELECT a.id FROM baton.archived_events a WHERE a.graph_id = c.graph_id);
    DELETE FROM baton.task_notes n USING baton.tasks t WHERE t.id = n.task_id AND t.graph_id = c.graph_id;
    DELETE FROM baton.tool_calls x USING baton.tasks t WHERE t.id = x.task_id AND t.graph_id = c.graph_id;
    PERFORM set_config('baton.retention_moving', 'off', true);
    -- The move itself is recorded live, numbered on from the graph's archived events.
    SELECT coalesce(max(a.subject_seq), 0) + 1 INTO v_seq FROM baton.archived_events a WHERE a.subject_kind = 'graph' AND a.subject_id = c.graph_id;
    INSERT INTO baton.events (subject_kind, subject_id, subject_seq, kind, actor, reason, details)
      VALUES ('graph', c.graph_id, v_seq, 'archived', p_actor,
        format('finished at %s, over %s ago: %s events, %s notes and %s tool calls moved to the archive',
          baton.object_ts(c.finished_at), p_older_than, v_events, jsonb_array_length(v_notes), jsonb_array_length(v_calls)),
        jsonb_build_object('events', v_events, 'notes', jsonb_array_length(v_notes), 'toolCalls', jsonb_array_length(v_calls)));
  END LOOP;
END $$;
GRANT EXECUTE ON FUNCTION baton.retention_apply TO baton_client;

-- The archive's row of graph p_graph_id (its notes and tool-call ledger), or none when it is live.
CREATE FUNCTION baton.archive_read(p_graph_id text) RETURNS SETOF baton.archives LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
  SELECT * FROM baton.archives WHERE graph_id = p_graph_id
$$;
GRANT EXECUTE ON FUNCTION baton.archive_read TO baton_client, baton_reader;
