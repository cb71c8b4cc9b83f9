-- Handoff of a shared object's role (SPEC O5): offer, accept, decline, withdraw. An offer
-- reserves nothing and no timer ends it; a take by a third agent overtakes it (objects.sql).

CREATE FUNCTION baton.object_accept_offer(o baton.objects, f baton.object_offers, p_actor text, p_via text)
RETURNS baton.objects LANGUAGE plpgsql AS $$
BEGIN
  UPDATE baton.object_offers SET status = 'accepted', closed_at = now(), closed_by = p_actor WHERE id = f.id;
  RETURN baton.object_move_role(o, p_actor, 'accepted', p_actor,
    format('accepted the offer from %s at version %s', f.giver, f.version),
    jsonb_build_object('offer_id', f.id, 'via', p_via));
END $$;

-- Why an actor has no open offer to answer: what became of the latest one, if any.
CREATE FUNCTION baton.object_refuse_no_offer(o baton.objects, p_actor text, p_successor text, p_operation text)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  f baton.object_offers;
BEGIN
  SELECT * INTO f FROM baton.object_offers
   WHERE object_key = o.key AND (p_successor IS NULL OR successor = p_successor) ORDER BY id DESC LIMIT 1;
  RETURN baton.object_refuse(o, p_actor, 'no_open_offer_refused', 'no_open_offer', p_operation,
    CASE WHEN f.id IS NULL THEN format('no offer of %s was made%s', o.key, ' to ' || p_successor)
         WHEN f.status = 'open' THEN format('the open offer of %s is to %s, not %s', o.key, f.successor, p_actor)
         ELSE format('the offer of %s to %s at version %s was %s by %s at %s', o.key, f.successor, f.version,
           f.status, f.closed_by, baton.object_ts(f.closed_at)) END,
    jsonb_build_object('offer_id', f.id));
END $$;

-- Offers the role to a named successor at the current version (O5). Reserves nothing; the
-- giver's writes are refused until the offer is accepted, declined, withdrawn or overtaken.
CREATE FUNCTION baton.object_offer(p_key text, p_actor text, p_token bigint, p_version bigint, p_successor text)
RETURNS baton.object_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  refused baton.object_outcome;
  v_offer_id bigint;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_actor(p_successor, 'successor');
  IF p_successor = p_actor THEN PERFORM baton.object_refuse_move('an offer names someone else as successor'); END IF;
  IF p_version IS NULL THEN PERFORM baton.object_invalid('an offer names the version handed over'); END IF;
  IF NOT baton.object_may(o, p_successor, 'write') THEN
    PERFORM baton.object_refuse_move(format('successor %s has no write access to %s', p_successor, o.key));
  END IF;
  o := baton.object_expire_if_silent(o, p_actor, 'offer');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'offer'); END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'offer');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  IF (baton.object_open_offer(o.key)).id IS NOT NULL THEN RETURN baton.object_refuse_offer_open(o, p_actor, 'offer'); END IF;
  IF p_version <> o.version THEN RETURN baton.object_refuse_version(o, p_actor, p_version, 'offer'); END IF;
  INSERT INTO baton.object_offers (object_key, giver, successor, version, token)
  VALUES (o.key, p_actor, p_successor, o.version, o.token) RETURNING id INTO v_offer_id;
  o := baton.object_touch(o);
  PERFORM baton.event_append('object', o.key, 'offered', p_actor, o.token, o.version,
    format('offered to %s at version %s', p_successor, o.version),
    jsonb_build_object('offer_id', v_offer_id, 'successor', p_successor));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_offer TO baton_worker, baton_client;

CREATE FUNCTION baton.object_accept(p_key text, p_actor text, p_version bigint) RETURNS baton.object_outcome
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  f baton.object_offers;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF p_version IS NULL THEN PERFORM baton.object_invalid('accepting names the version offered'); END IF;
  o := baton.object_expire_if_silent(o, p_actor, 'accept');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'accept'); END IF;
  f := baton.object_open_offer(o.key);
  IF f.successor IS DISTINCT FROM p_actor THEN RETURN baton.object_refuse_no_offer(o, p_actor, p_actor, 'accept'); END IF;
  IF p_version <> f.version THEN RETURN baton.object_refuse_version(o, p_actor, p_version, 'accept'); END IF;
  RETURN baton.object_outcome_of(baton.object_accept_offer(o, f, p_actor, 'accept'), true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_accept TO baton_worker, baton_client;

CREATE FUNCTION baton.object_decline(p_key text, p_actor text, p_reason text DEFAULT NULL) RETURNS baton.object_outcome
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  f baton.object_offers;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  o := baton.object_expire_if_silent(o, p_actor, 'decline');
  f := baton.object_open_offer(o.key);
  IF f.successor IS DISTINCT FROM p_actor THEN RETURN baton.object_refuse_no_offer(o, p_actor, p_actor, 'decline'); END IF;
  UPDATE baton.object_offers SET status = 'declined', closed_at = now(), closed_by = p_actor WHERE id = f.id;
  -- Silence was not checked while the offer was open; the giver's window starts again now.
  o := baton.object_touch(o);
  PERFORM baton.event_append('object', o.key, 'declined', p_actor, o.token, f.version,
    coalesce(p_reason, format('%s declined the offer from %s at version %s', p_actor, f.giver, f.version)),
    jsonb_build_object('offer_id', f.id, 'giver', f.giver, 'successor', f.successor));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_decline TO baton_worker, baton_client;

CREATE FUNCTION baton.object_withdraw(p_key text, p_actor text, p_token bigint) RETURNS baton.object_outcome
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  f baton.object_offers;
  refused baton.object_outcome;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  o := baton.object_expire_if_silent(o, p_actor, 'withdraw');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'withdraw'); END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'withdraw');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  f := baton.object_open_offer(o.key);
  IF f.id IS NULL THEN RETURN baton.object_refuse_no_offer(o, p_actor, NULL, 'withdraw'); END IF;
  UPDATE baton.object_offers SET status = 'withdrawn', closed_at = now(), closed_by = p_actor WHERE id = f.id;
  o := baton.object_touch(o);
  PERFORM baton.event_append('object', o.key, 'withdrawn', p_actor, o.token, f.version,
    format('%s withdrew the offer to %s at version %s', p_actor, f.successor, f.version),
    jsonb_build_object('offer_id', f.id, 'successor', f.successor));
  RETURN baton.object_outcome_of(o, true);
END $$;
GRANT EXECUTE ON FUNCTION baton.object_withdraw TO baton_worker, baton_client;
