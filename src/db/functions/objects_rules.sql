-- Shared objects (SPEC O1-O6): the rules every baton.object_* function shares.
-- Every change goes through these baton.object_* functions: each locks the object's row,
-- enforces the rules and appends its events (subject_kind 'object') in the same transaction.
-- A refusal is not an exception: the function records a *_refused event and returns a row that
-- says why (ok = false), because raising would roll the event back. Input errors raise BT002
-- (unknown object), BT003 (bad argument) or BT020 (object exists).
--
-- Silence (O2) is decided here with the database clock only: a holder whose last heartbeat is
-- older than the object's silence timeout has lost the role. Every function that changes the
-- object checks that first under the row lock, and baton.object_sweep records it for objects
-- nobody touches; the outcome never depends on when a sweep ran. A Temporal timer would add a
-- second clock and a second writer racing the first. While an offer is open silence is not
-- checked: no timer ends an offer (O5), and whoever needs the object can still take it.

CREATE FUNCTION baton.object_invalid(p_message text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'BT003';
END $$;

-- A well-formed call the object's state refuses, with nothing to record (it is not a write of
-- the holder's that lost a race): the successor cannot write, the creator cannot lose its grant.
-- An illegal move (409), never invalid input: the request as such was right (SPEC S7).
CREATE FUNCTION baton.object_refuse_move(p_message text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'BT001';
END $$;

CREATE FUNCTION baton.object_check_actor(p_actor text, p_what text DEFAULT 'actor') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 200 THEN
    PERFORM baton.object_invalid(format('%s must be 1 to 200 characters', p_what));
  END IF;
END $$;

CREATE FUNCTION baton.object_ts(p_at timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

CREATE FUNCTION baton.object_lock(p_key text) RETURNS baton.objects LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects;
BEGIN
  -- NO KEY UPDATE serialises the object's writers (and so its event sequence) without blocking
  -- inserts that merely reference the key.
  SELECT * INTO o FROM baton.objects WHERE key = p_key FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no shared object %', coalesce(p_key, '(null)') USING ERRCODE = 'BT002';
  END IF;
  RETURN o;
END $$;

-- Helpers that read tables are VOLATILE (the default) on purpose: a STABLE function sees the
-- snapshot of the statement that calls it and would miss a change made earlier in that statement.
CREATE FUNCTION baton.object_open_offer(p_key text) RETURNS baton.object_offers LANGUAGE sql AS $$
  SELECT * FROM baton.object_offers WHERE object_key = p_key AND status = 'open'
$$;

CREATE FUNCTION baton.object_access_rank(p_access text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT array_position(ARRAY['none', 'view', 'suggest', 'write'], p_access) - 1
$$;

CREATE FUNCTION baton.object_access(o baton.objects, p_actor text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce((SELECT access FROM baton.object_permissions WHERE object_key = o.key AND actor = p_actor), o.default_access)
$$;

CREATE FUNCTION baton.object_may(o baton.objects, p_actor text, p_access text) RETURNS boolean LANGUAGE sql AS $$
  SELECT baton.object_access_rank(baton.object_access(o, p_actor)) >= baton.object_access_rank(p_access)
$$;

CREATE FUNCTION baton.object_is_silent(o baton.objects, p_offer_open boolean) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT o.holder IS NOT NULL AND NOT p_offer_open
    AND o.holder_heartbeat_at + make_interval(secs => o.silence_timeout_ms / 1000.0) < now()
$$;

CREATE FUNCTION baton.object_outcome_of(
  o baton.objects, p_ok boolean, p_refusal text DEFAULT NULL, p_reason text DEFAULT NULL,
  p_with_content boolean DEFAULT false, p_suggestion_id bigint DEFAULT NULL
) RETURNS baton.object_outcome LANGUAGE sql AS $$
  SELECT p_ok, p_refusal, p_reason, o.key, o.version, o.token, o.holder, o.holder_since, o.holder_heartbeat_at,
         baton.object_is_silent(o, f.id IS NOT NULL), o.silence_timeout_ms, f.successor, f.version, f.offered_at,
         CASE WHEN p_with_content THEN o.content END, CASE WHEN p_with_content THEN o.content_ref END,
         p_suggestion_id, now()
    FROM (SELECT 1) AS one LEFT JOIN baton.object_offers f ON f.object_key = o.key AND f.status = 'open'
$$;

-- Records a refusal as an event and returns it to the caller; nothing else changes.
CREATE FUNCTION baton.object_refuse(
  o baton.objects, p_actor text, p_kind text, p_refusal text, p_operation text, p_reason text,
  p_details jsonb DEFAULT '{}'::jsonb
) RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
BEGIN
  PERFORM baton.event_append('object', o.key, p_kind, p_actor, o.token, o.version, p_reason,
    jsonb_build_object('operation', p_operation, 'refusal', p_refusal) || p_details);
  RETURN baton.object_outcome_of(o, false, p_refusal, p_reason);
END $$;

CREATE FUNCTION baton.object_refuse_access(o baton.objects, p_actor text, p_needed text, p_operation text)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
BEGIN
  RETURN baton.object_refuse(o, p_actor, 'permission_refused', 'permission', p_operation,
    format('%s has %s access to %s; %s needs %s', p_actor, baton.object_access(o, p_actor), o.key, p_operation, p_needed),
    jsonb_build_object('needed', p_needed, 'has', baton.object_access(o, p_actor)));
END $$;

CREATE FUNCTION baton.object_refuse_offer_open(o baton.objects, p_actor text, p_operation text)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  f baton.object_offers := baton.object_open_offer(o.key);
BEGIN
  RETURN baton.object_refuse(o, p_actor, 'handoff_pending_refused', 'offer_open', p_operation,
    format('offer of %s to %s at version %s is open since %s: withdraw it or wait for %s to answer',
      o.key, f.successor, f.version, baton.object_ts(f.offered_at), f.successor),
    jsonb_build_object('offer_id', f.id, 'successor', f.successor));
END $$;

-- Why a fenced call naming p_token no longer holds the role. Tokens move by exactly 1 per change
-- of holder, so the event with fence p_token + 1 is the one that moved the role away.
CREATE FUNCTION baton.object_moved_reason(o baton.objects, p_actor text, p_token bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  e baton.events;
BEGIN
  IF p_token > o.token THEN
    RETURN format('token %s was never issued for %s; the current token is %s', p_token, o.key, o.token);
  ELSIF p_token = o.token THEN
    RETURN CASE WHEN o.holder IS NULL THEN format('nobody holds %s; take it first', o.key)
                ELSE format('%s holds %s with token %s, not %s', o.holder, o.key, o.token, p_actor) END;
  END IF;
  SELECT * INTO e FROM baton.events
   WHERE subject_kind = 'object' AND subject_id = o.key AND fence = p_token + 1
     AND kind IN ('taken', 'taken_over', 'reclaimed_after_silence', 'released', 'accepted')
   ORDER BY subject_seq LIMIT 1;
  RETURN format('role moved to %s at %s: %s', coalesce(e.details ->> 'to', 'nobody'), baton.object_ts(e.at),
      CASE e.kind WHEN 'accepted' THEN 'offer accepted' ELSE replace(e.kind, '_', ' ') END)
    || CASE WHEN e.fence = o.token THEN ''
            ELSE format('; now %s with token %s', coalesce('held by ' || o.holder, 'free'), o.token) END;
END $$;

-- Refuses a fenced call (write, heartbeat, release, offer, withdraw, approve) whose caller is not
-- the holder with the token it names; returns NULL when the caller does hold the role.
CREATE FUNCTION baton.object_refuse_unless_holder(o baton.objects, p_actor text, p_token bigint, p_operation text)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
BEGIN
  IF p_token IS NULL THEN PERFORM baton.object_invalid(format('%s names the fencing token', p_operation)); END IF;
  IF o.holder IS NOT DISTINCT FROM p_actor AND p_token = o.token THEN
    RETURN NULL;
  END IF;
  RETURN baton.object_refuse(o, p_actor, 'stale_write_refused',
    CASE WHEN p_token = o.token THEN 'not_holder' ELSE 'token_moved' END, p_operation,
    baton.object_moved_reason(o, p_actor, p_token),
    jsonb_build_object('token', p_token, 'holder', o.holder));
END $$;

CREATE FUNCTION baton.object_refuse_version(o baton.objects, p_actor text, p_version bigint, p_operation text)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
BEGIN
  RETURN baton.object_refuse(o, p_actor, 'stale_write_refused', 'version_moved', p_operation,
    format('version moved from %s to %s', p_version, o.version), jsonb_build_object('read_version', p_version));
END $$;

-- The one place the holder changes: bumps the token by 1 and records who took it from whom and why.
CREATE FUNCTION baton.object_move_role(
  o baton.objects, p_actor text, p_kind text, p_to text, p_reason text, p_details jsonb DEFAULT '{}'::jsonb
) RETURNS baton.objects LANGUAGE plpgsql AS $$
DECLARE
  v_from text := o.holder;
BEGIN
  UPDATE baton.objects
     SET holder = p_to, token = token + 1, updated_at = now(),
         holder_since = CASE WHEN p_to IS NULL THEN NULL ELSE now() END,
         holder_heartbeat_at = CASE WHEN p_to IS NULL THEN NULL ELSE now() END
   WHERE key = o.key
  RETURNING * INTO o;
  PERFORM baton.event_append('object', o.key, p_kind, p_actor, o.token, o.version, p_reason,
    jsonb_build_object('from', v_from, 'to', p_to) || p_details);
  RETURN o;
END $$;

CREATE FUNCTION baton.object_silence_reason(o baton.objects) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT format('%s silent since %s, past its %s ms silence timeout',
    o.holder, baton.object_ts(o.holder_heartbeat_at), o.silence_timeout_ms)
$$;

CREATE FUNCTION baton.object_silence_details(o baton.objects, p_operation text) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('last_heartbeat_at', o.holder_heartbeat_at, 'silence_timeout_ms', o.silence_timeout_ms,
    'detected_by', p_operation)
$$;

-- A holder silent past its timeout loses the role now, with that reason recorded (O2).
CREATE FUNCTION baton.object_expire_if_silent(o baton.objects, p_actor text, p_operation text)
RETURNS baton.objects LANGUAGE plpgsql AS $$
BEGIN
  IF baton.object_is_silent(o, (baton.object_open_offer(o.key)).id IS NOT NULL) THEN
    RETURN baton.object_move_role(o, p_actor, 'reclaimed_after_silence', NULL, baton.object_silence_reason(o),
      baton.object_silence_details(o, p_operation));
  END IF;
  RETURN o;
END $$;

CREATE FUNCTION baton.object_touch(o baton.objects) RETURNS baton.objects LANGUAGE sql AS $$
  UPDATE baton.objects SET holder_heartbeat_at = now() WHERE key = o.key RETURNING *
$$;

CREATE FUNCTION baton.object_record_view(o baton.objects, p_actor text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO baton.object_read_views (object_key, actor, version) VALUES (o.key, p_actor, o.version)
  ON CONFLICT (object_key, actor) DO UPDATE SET version = EXCLUDED.version, read_at = now()
$$;

CREATE FUNCTION baton.object_check_content(p_content text, p_content_ref text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF num_nonnulls(p_content, p_content_ref) <> 1 THEN
    PERFORM baton.object_invalid('give exactly one of content and content_ref');
  END IF;
END $$;
