-- Suggestions (SPEC O6): an actor with suggest access proposes content; it lands only when the
-- holder approves it, as a fenced write on the version it was made on.

-- A proposed new content (O6); it changes nothing until the holder approves it.
CREATE FUNCTION baton.object_suggest(
  p_key text, p_actor text, p_base_version bigint, p_content text DEFAULT NULL, p_content_ref text DEFAULT NULL,
  p_note text DEFAULT NULL
) RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  v_id bigint;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_content(p_content, p_content_ref);
  IF p_base_version IS NULL OR p_base_version NOT BETWEEN 0 AND o.version THEN
    PERFORM baton.object_refuse_move(format('a suggestion is based on a version of %s between 0 and %s', o.key, o.version));
  END IF;
  o := baton.object_expire_if_silent(o, p_actor, 'suggest');
  IF NOT baton.object_may(o, p_actor, 'suggest') THEN RETURN baton.object_refuse_access(o, p_actor, 'suggest', 'suggest'); END IF;
  INSERT INTO baton.object_suggestions (object_key, suggested_by, base_version, content, content_ref, note)
  VALUES (o.key, p_actor, p_base_version, p_content, p_content_ref, p_note) RETURNING id INTO v_id;
  PERFORM baton.event_append('object', o.key, 'suggested', p_actor, o.token, p_base_version, p_note,
    jsonb_build_object('suggestion_id', v_id, 'digest', md5(coalesce(p_content, p_content_ref))));
  RETURN baton.object_outcome_of(o, true, p_suggestion_id => v_id);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_suggest TO baton_worker, baton_client;

-- The holder applies a suggestion made on the current version, as a fenced write.
CREATE FUNCTION baton.object_approve(p_key text, p_actor text, p_token bigint, p_suggestion_id bigint)
RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  s baton.object_suggestions;
  refused baton.object_outcome;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  SELECT * INTO s FROM baton.object_suggestions WHERE id = p_suggestion_id AND object_key = o.key FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no suggestion % for shared object %', p_suggestion_id, o.key USING ERRCODE = 'BT002';
  END IF;
  o := baton.object_expire_if_silent(o, p_actor, 'approve');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'approve'); END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'approve');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  IF (baton.object_open_offer(o.key)).id IS NOT NULL THEN RETURN baton.object_refuse_offer_open(o, p_actor, 'approve'); END IF;
  IF s.status <> 'open' OR s.base_version <> o.version THEN
    RETURN baton.object_refuse(o, p_actor, 'stale_write_refused', 'suggestion_stale', 'approve',
      CASE WHEN s.status <> 'open'
           THEN format('suggestion %s was already approved by %s at version %s', s.id, s.approved_by, s.applied_version)
           ELSE format('suggestion %s was made on version %s; version moved from %s to %s', s.id, s.base_version, s.base_version, o.version) END,
      jsonb_build_object('suggestion_id', s.id));
  END IF;
  UPDATE baton.objects
     SET content = s.content, content_ref = s.content_ref, version = version + 1, holder_heartbeat_at = now(), updated_at = now()
   WHERE key = o.key
  RETURNING * INTO o;
  UPDATE baton.object_suggestions SET status = 'approved', approved_by = p_actor, approved_at = now(), applied_version = o.version
   WHERE id = s.id;
  PERFORM baton.object_record_view(o, p_actor);
  PERFORM baton.event_append('object', o.key, 'suggestion_approved', p_actor, o.token, o.version,
    format('approved suggestion %s by %s', s.id, s.suggested_by),
    jsonb_build_object('suggestion_id', s.id, 'suggested_by', s.suggested_by, 'from_version', s.base_version,
      'digest', md5(coalesce(s.content, s.content_ref))));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_approve TO baton_worker, baton_client;
