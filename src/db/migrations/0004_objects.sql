-- Shared objects (SPEC O1-O6): files, configs, images and plans that several agents write.
-- Every change goes through the baton.object_* functions below: each locks the object's row,
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

CREATE TABLE baton.objects (
  key text PRIMARY KEY CHECK (key ~ '^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$'),
  -- The content inline, or a reference to it (a file, a URL with a digest); at most one.
  content text CHECK (octet_length(content) <= 1048576),
  content_ref text CHECK (length(content_ref) BETWEEN 1 AND 2000),
  version bigint NOT NULL DEFAULT 0 CHECK (version >= 0),
  -- The single-writer role. The fencing token is bumped by exactly 1 on every change of holder.
  holder text CHECK (length(holder) BETWEEN 1 AND 200),
  token bigint NOT NULL DEFAULT 0 CHECK (token >= 0),
  holder_since timestamptz,
  holder_heartbeat_at timestamptz,
  silence_timeout_ms integer NOT NULL CHECK (silence_timeout_ms BETWEEN 1 AND 604800000),
  -- Access for actors without their own row in baton.object_permissions.
  default_access text NOT NULL DEFAULT 'none' CHECK (default_access IN ('none', 'view', 'suggest', 'write')),
  created_by text NOT NULL CHECK (length(created_by) BETWEEN 1 AND 200),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (num_nonnulls(content, content_ref) <= 1),
  CHECK ((holder IS NULL) = (holder_heartbeat_at IS NULL) AND (holder IS NULL) = (holder_since IS NULL))
);

-- The sweep looks at held objects only.
CREATE INDEX objects_held ON baton.objects (holder_heartbeat_at) WHERE holder IS NOT NULL;

CREATE TABLE baton.object_permissions (
  object_key text NOT NULL REFERENCES baton.objects (key),
  actor text NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
  access text NOT NULL CHECK (access IN ('none', 'view', 'suggest', 'write')),
  granted_by text NOT NULL,
  granted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (object_key, actor)
);

-- The version each actor last read (O4); a write or an approval counts as reading what it made.
CREATE TABLE baton.object_read_views (
  object_key text NOT NULL REFERENCES baton.objects (key),
  actor text NOT NULL,
  version bigint NOT NULL,
  read_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (object_key, actor)
);

CREATE TABLE baton.object_offers (
  id bigserial PRIMARY KEY,
  object_key text NOT NULL REFERENCES baton.objects (key),
  giver text NOT NULL,
  successor text NOT NULL,
  version bigint NOT NULL,
  token bigint NOT NULL,
  offered_at timestamptz NOT NULL DEFAULT now(),
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'accepted', 'declined', 'withdrawn', 'overtaken')),
  closed_at timestamptz,
  closed_by text,
  CHECK ((status = 'open') = (closed_at IS NULL))
);

CREATE UNIQUE INDEX object_offers_one_open ON baton.object_offers (object_key) WHERE status = 'open';

CREATE TABLE baton.object_suggestions (
  id bigserial PRIMARY KEY,
  object_key text NOT NULL REFERENCES baton.objects (key),
  suggested_by text NOT NULL,
  base_version bigint NOT NULL,
  content text CHECK (octet_length(content) <= 1048576),
  content_ref text CHECK (length(content_ref) BETWEEN 1 AND 2000),
  note text CHECK (length(note) <= 2000),
  created_at timestamptz NOT NULL DEFAULT now(),
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'approved')),
  approved_by text,
  approved_at timestamptz,
  applied_version bigint,
  CHECK (num_nonnulls(content, content_ref) = 1)
);

-- What every object function returns: the object as it stands after the call, and for a refusal
-- (ok = false) a refusal code and the reason. Content is filled in by object_read only.
CREATE TYPE baton.object_outcome AS (
  ok boolean,
  refusal text,
  reason text,
  key text,
  version bigint,
  token bigint,
  holder text,
  holder_since timestamptz,
  holder_heartbeat_at timestamptz,
  holder_silent boolean,
  silence_timeout_ms integer,
  offer_to text,
  offer_version bigint,
  offered_at timestamptz,
  content text,
  content_ref text,
  suggestion_id bigint,
  at timestamptz
);

CREATE FUNCTION baton.object_invalid(p_message text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'BT003';
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
  PERFORM baton.append_event('object', o.key, p_kind, p_actor, o.token, o.version, p_reason,
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
  PERFORM baton.append_event('object', o.key, p_kind, p_actor, o.token, o.version, p_reason,
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

CREATE FUNCTION baton.object_check_content(p_content text, p_content_ref text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF num_nonnulls(p_content, p_content_ref) <> 1 THEN
    PERFORM baton.object_invalid('give exactly one of content and content_ref');
  END IF;
END $$;

CREATE FUNCTION baton.object_create(
  p_key text, p_actor text, p_silence_timeout_ms integer, p_default_access text DEFAULT 'none',
  p_content text DEFAULT NULL, p_content_ref text DEFAULT NULL
) RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF p_key IS NULL OR p_key !~ '^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$' THEN
    PERFORM baton.object_invalid(format('object key %L must be 1 to 200 letters, digits or ._/:@+- and start with a letter or digit', p_key));
  END IF;
  IF p_silence_timeout_ms IS NULL OR p_silence_timeout_ms NOT BETWEEN 1 AND 604800000 THEN
    PERFORM baton.object_invalid('silence timeout must be 1 ms to 7 days');
  END IF;
  IF baton.object_access_rank(p_default_access) IS NULL THEN
    PERFORM baton.object_invalid(format('access must be none, view, suggest or write, not %L', p_default_access));
  END IF;
  IF num_nonnulls(p_content, p_content_ref) > 1 THEN PERFORM baton.object_invalid('give at most one of content and content_ref'); END IF;
  INSERT INTO baton.objects (key, content, content_ref, version, silence_timeout_ms, default_access, created_by)
  VALUES (p_key, p_content, p_content_ref, CASE WHEN num_nonnulls(p_content, p_content_ref) > 0 THEN 1 ELSE 0 END,
          p_silence_timeout_ms, p_default_access, p_actor)
  ON CONFLICT (key) DO NOTHING
  RETURNING * INTO o;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'shared object % already exists', p_key USING ERRCODE = 'BT020';
  END IF;
  INSERT INTO baton.object_permissions (object_key, actor, access, granted_by) VALUES (o.key, p_actor, 'write', p_actor);
  PERFORM baton.append_event('object', o.key, 'created', p_actor, o.token, o.version, NULL,
    jsonb_build_object('default_access', p_default_access, 'silence_timeout_ms', p_silence_timeout_ms));
  RETURN baton.object_outcome_of(o, true);
END $$;

-- Only the creator administers access; the creator's own write access cannot be taken away.
CREATE FUNCTION baton.object_grant(p_key text, p_actor text, p_grantee text, p_access text)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_actor(p_grantee, 'grantee');
  IF baton.object_access_rank(p_access) IS NULL THEN
    PERFORM baton.object_invalid(format('access must be none, view, suggest or write, not %L', p_access));
  END IF;
  IF p_grantee = o.created_by THEN
    PERFORM baton.object_invalid(format('%s created %s and keeps write access', p_grantee, o.key));
  END IF;
  IF p_actor <> o.created_by THEN
    RETURN baton.object_refuse(o, p_actor, 'permission_refused', 'permission', 'grant',
      format('only %s, who created %s, may grant access to it', o.created_by, o.key), '{}'::jsonb);
  END IF;
  INSERT INTO baton.object_permissions (object_key, actor, access, granted_by) VALUES (o.key, p_grantee, p_access, p_actor)
  ON CONFLICT (object_key, actor) DO UPDATE SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = now();
  PERFORM baton.append_event('object', o.key, 'granted', p_actor, o.token, o.version, NULL,
    jsonb_build_object('grantee', p_grantee, 'access', p_access));
  RETURN baton.object_outcome_of(o, true);
END $$;

-- The object as it stands, without recording a read; needs view access.
CREATE FUNCTION baton.object_show(p_key text, p_actor text) RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'view') THEN RETURN baton.object_refuse_access(o, p_actor, 'view', 'show'); END IF;
  RETURN baton.object_outcome_of(o, true);
END $$;

-- The content and its version, recording that p_actor has now read this version (O4).
CREATE FUNCTION baton.object_read(p_key text, p_actor text) RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'view') THEN RETURN baton.object_refuse_access(o, p_actor, 'view', 'read'); END IF;
  PERFORM baton.object_record_view(o, p_actor);
  RETURN baton.object_outcome_of(o, true, p_with_content => true);
END $$;

-- Takes the role now, whoever holds it (O2): never waits for the holder, bumps the token and
-- records from whom and why. An open offer is accepted when its successor takes, and is
-- overtaken when anyone else does (O5).
CREATE FUNCTION baton.object_take(p_key text, p_actor text, p_reason text DEFAULT NULL)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  f baton.object_offers := baton.object_open_offer(p_key);
  v_kind text;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'take'); END IF;
  IF f.successor = p_actor THEN
    RETURN baton.object_outcome_of(baton.object_accept_offer(o, f, p_actor, 'take'), true);
  ELSIF o.holder = p_actor AND f.id IS NOT NULL THEN
    RETURN baton.object_refuse_offer_open(o, p_actor, 'take');
  ELSIF o.holder = p_actor AND NOT baton.object_is_silent(o, false) THEN
    -- Taking what one holds changes nothing, so a retried take returns the same token.
    RETURN baton.object_outcome_of(baton.object_touch(o), true);
  END IF;
  IF f.id IS NOT NULL THEN
    UPDATE baton.object_offers SET status = 'overtaken', closed_at = now(), closed_by = p_actor WHERE id = f.id;
    PERFORM baton.append_event('object', o.key, 'overtaken', p_actor, o.token, f.version,
      format('offer from %s to %s at version %s overtaken by %s', f.giver, f.successor, f.version, p_actor),
      jsonb_build_object('offer_id', f.id, 'giver', f.giver, 'successor', f.successor, 'by', p_actor));
  END IF;
  v_kind := CASE WHEN o.holder IS NULL THEN 'taken'
                 WHEN baton.object_is_silent(o, f.id IS NOT NULL) THEN 'reclaimed_after_silence'
                 ELSE 'taken_over' END;
  o := baton.object_move_role(o, p_actor, v_kind, p_actor,
    CASE v_kind WHEN 'taken' THEN coalesce(p_reason, 'the role was free')
                WHEN 'reclaimed_after_silence' THEN baton.object_silence_reason(o)
                ELSE coalesce(p_reason, format('taken over from %s', o.holder)) END,
    CASE WHEN v_kind = 'reclaimed_after_silence'
         THEN baton.object_silence_details(o, 'take') || jsonb_build_object('requested_reason', p_reason)
         ELSE '{}'::jsonb END);
  RETURN baton.object_outcome_of(o, true);
END $$;

-- Compare-and-swap write (O3): names the version read and the fencing token. The named successor
-- of an open offer accepts it by writing with the token in force (O5).
CREATE FUNCTION baton.object_write(
  p_key text, p_actor text, p_version bigint, p_token bigint, p_content text DEFAULT NULL, p_content_ref text DEFAULT NULL
) RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  f baton.object_offers;
  refused baton.object_outcome;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_content(p_content, p_content_ref);
  IF p_version IS NULL OR p_token IS NULL THEN PERFORM baton.object_invalid('a write names the version read and the token'); END IF;
  o := baton.object_expire_if_silent(o, p_actor, 'write');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'write'); END IF;
  f := baton.object_open_offer(o.key);
  IF f.successor = p_actor AND p_token = o.token THEN
    IF p_version <> o.version THEN RETURN baton.object_refuse_version(o, p_actor, p_version, 'write'); END IF;
    o := baton.object_accept_offer(o, f, p_actor, 'write');
    p_token := o.token;
    f := NULL;
  END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'write');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  IF f.id IS NOT NULL THEN RETURN baton.object_refuse_offer_open(o, p_actor, 'write'); END IF;
  IF p_version <> o.version THEN RETURN baton.object_refuse_version(o, p_actor, p_version, 'write'); END IF;
  UPDATE baton.objects
     SET content = p_content, content_ref = p_content_ref, version = version + 1, holder_heartbeat_at = now(), updated_at = now()
   WHERE key = o.key
  RETURNING * INTO o;
  PERFORM baton.object_record_view(o, p_actor);
  PERFORM baton.append_event('object', o.key, 'written', p_actor, o.token, o.version, NULL,
    jsonb_build_object('from_version', p_version, 'digest', md5(coalesce(p_content, p_content_ref))));
  RETURN baton.object_outcome_of(o, true);
END $$;

-- Proves the holder is alive. Not an event: heartbeats are not changes, and the reclaim event
-- records the last one. Allowed while an offer is open (it changes nothing the successor gets).
CREATE FUNCTION baton.object_heartbeat(p_key text, p_actor text, p_token bigint) RETURNS baton.object_outcome
LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  refused baton.object_outcome;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  o := baton.object_expire_if_silent(o, p_actor, 'heartbeat');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'heartbeat'); END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'heartbeat');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  RETURN baton.object_outcome_of(baton.object_touch(o), true);
END $$;

CREATE FUNCTION baton.object_release(p_key text, p_actor text, p_token bigint, p_reason text DEFAULT NULL)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  refused baton.object_outcome;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  o := baton.object_expire_if_silent(o, p_actor, 'release');
  IF NOT baton.object_may(o, p_actor, 'write') THEN RETURN baton.object_refuse_access(o, p_actor, 'write', 'release'); END IF;
  refused := baton.object_refuse_unless_holder(o, p_actor, p_token, 'release');
  IF refused.ok IS NOT NULL THEN RETURN refused; END IF;
  IF (baton.object_open_offer(o.key)).id IS NOT NULL THEN RETURN baton.object_refuse_offer_open(o, p_actor, 'release'); END IF;
  o := baton.object_move_role(o, p_actor, 'released', NULL, coalesce(p_reason, format('released by %s', p_actor)));
  RETURN baton.object_outcome_of(o, true);
END $$;

-- Offers the role to a named successor at the current version (O5). Reserves nothing; the
-- giver's writes are refused until the offer is accepted, declined, withdrawn or overtaken.
CREATE FUNCTION baton.object_offer(p_key text, p_actor text, p_token bigint, p_version bigint, p_successor text)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  refused baton.object_outcome;
  v_offer_id bigint;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_actor(p_successor, 'successor');
  IF p_successor = p_actor THEN PERFORM baton.object_invalid('an offer names someone else as successor'); END IF;
  IF p_version IS NULL THEN PERFORM baton.object_invalid('an offer names the version handed over'); END IF;
  IF NOT baton.object_may(o, p_successor, 'write') THEN
    PERFORM baton.object_invalid(format('successor %s has no write access to %s', p_successor, o.key));
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
  PERFORM baton.append_event('object', o.key, 'offered', p_actor, o.token, o.version,
    format('offered to %s at version %s', p_successor, o.version),
    jsonb_build_object('offer_id', v_offer_id, 'successor', p_successor));
  RETURN baton.object_outcome_of(o, true);
END $$;

CREATE FUNCTION baton.object_accept(p_key text, p_actor text, p_version bigint) RETURNS baton.object_outcome
LANGUAGE plpgsql AS $$
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

CREATE FUNCTION baton.object_decline(p_key text, p_actor text, p_reason text DEFAULT NULL) RETURNS baton.object_outcome
LANGUAGE plpgsql AS $$
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
  PERFORM baton.append_event('object', o.key, 'declined', p_actor, o.token, f.version,
    coalesce(p_reason, format('%s declined the offer from %s at version %s', p_actor, f.giver, f.version)),
    jsonb_build_object('offer_id', f.id, 'giver', f.giver, 'successor', f.successor));
  RETURN baton.object_outcome_of(o, true);
END $$;

CREATE FUNCTION baton.object_withdraw(p_key text, p_actor text, p_token bigint) RETURNS baton.object_outcome
LANGUAGE plpgsql AS $$
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
  PERFORM baton.append_event('object', o.key, 'withdrawn', p_actor, o.token, f.version,
    format('%s withdrew the offer to %s at version %s', p_actor, f.successor, f.version),
    jsonb_build_object('offer_id', f.id, 'successor', f.successor));
  RETURN baton.object_outcome_of(o, true);
END $$;

-- A proposed new content (O6); it changes nothing until the holder approves it.
CREATE FUNCTION baton.object_suggest(
  p_key text, p_actor text, p_base_version bigint, p_content text DEFAULT NULL, p_content_ref text DEFAULT NULL,
  p_note text DEFAULT NULL
) RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  v_id bigint;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_content(p_content, p_content_ref);
  IF p_base_version IS NULL OR p_base_version NOT BETWEEN 0 AND o.version THEN
    PERFORM baton.object_invalid(format('a suggestion is based on a version of %s between 0 and %s', o.key, o.version));
  END IF;
  o := baton.object_expire_if_silent(o, p_actor, 'suggest');
  IF NOT baton.object_may(o, p_actor, 'suggest') THEN RETURN baton.object_refuse_access(o, p_actor, 'suggest', 'suggest'); END IF;
  INSERT INTO baton.object_suggestions (object_key, suggested_by, base_version, content, content_ref, note)
  VALUES (o.key, p_actor, p_base_version, p_content, p_content_ref, p_note) RETURNING id INTO v_id;
  PERFORM baton.append_event('object', o.key, 'suggested', p_actor, o.token, p_base_version, p_note,
    jsonb_build_object('suggestion_id', v_id, 'digest', md5(coalesce(p_content, p_content_ref))));
  RETURN baton.object_outcome_of(o, true, p_suggestion_id => v_id);
END $$;

-- The holder applies a suggestion made on the current version, as a fenced write.
CREATE FUNCTION baton.object_approve(p_key text, p_actor text, p_token bigint, p_suggestion_id bigint)
RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
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
  PERFORM baton.append_event('object', o.key, 'suggestion_approved', p_actor, o.token, o.version,
    format('approved suggestion %s by %s', s.id, s.suggested_by),
    jsonb_build_object('suggestion_id', s.id, 'suggested_by', s.suggested_by, 'from_version', s.base_version,
      'digest', md5(coalesce(s.content, s.content_ref))));
  RETURN baton.object_outcome_of(o, true);
END $$;

-- The check before an irreversible step (O4): refuses when p_actor's last read is not the
-- current version.
CREATE FUNCTION baton.object_check_view(p_key text, p_actor text) RETURNS baton.object_outcome LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  v_read bigint;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'view') THEN RETURN baton.object_refuse_access(o, p_actor, 'view', 'check_view'); END IF;
  SELECT version INTO v_read FROM baton.object_read_views WHERE object_key = o.key AND actor = p_actor;
  IF v_read IS NULL THEN
    RETURN baton.object_refuse(o, p_actor, 'stale_view_refused', 'stale_view', 'check_view',
      format('%s has not read %s', p_actor, o.key), '{}'::jsonb);
  ELSIF v_read <> o.version THEN
    RETURN baton.object_refuse(o, p_actor, 'stale_view_refused', 'stale_view', 'check_view',
      format('%s read version %s of %s; version moved from %s to %s', p_actor, v_read, o.key, v_read, o.version),
      jsonb_build_object('read_version', v_read));
  END IF;
  RETURN baton.object_outcome_of(o, true);
END $$;

-- Records the loss of every silent holder nobody has touched since; skips objects in use.
CREATE FUNCTION baton.object_sweep(p_actor text)
RETURNS TABLE (object_key text, silent_holder text, token bigint) LANGUAGE plpgsql AS $$
DECLARE
  o baton.objects;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  FOR o IN
    SELECT x.* FROM baton.objects x
     WHERE x.holder IS NOT NULL
       AND x.holder_heartbeat_at + make_interval(secs => x.silence_timeout_ms / 1000.0) < now()
       AND NOT EXISTS (SELECT 1 FROM baton.object_offers f WHERE f.object_key = x.key AND f.status = 'open')
     ORDER BY x.key
       FOR NO KEY UPDATE SKIP LOCKED
  LOOP
    object_key := o.key;
    silent_holder := o.holder;
    o := baton.object_expire_if_silent(o, p_actor, 'sweep');
    token := o.token;
    RETURN NEXT;
  END LOOP;
END $$;
