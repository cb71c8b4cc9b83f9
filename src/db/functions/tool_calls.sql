-- The tool-call ledger (SPEC X1, X2); its tables and transitions are in migration 0005.
-- Every write is fenced on the task's claim (owner + claim version + status running), like the
-- task owner writes (owner_writes.sql); a stale owner gets a refusal row (accepted = false) and a
-- 'stale_write_refused' event rather than an exception, because raising would roll the event
-- back. Each change appends its 'tool_call_*' event (subject 'task', the task id) in the same
-- transaction, under the task's row lock.

CREATE FUNCTION baton.tool_call_check_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.status <> 'pending' OR NEW.attempts <> 0 THEN
      RAISE EXCEPTION 'tool call %: a new ledger row starts pending with no attempts', NEW.idempotency_key USING ERRCODE = 'BT001';
    END IF;
    RETURN NEW;
  END IF;
  IF NEW.task_id <> OLD.task_id OR NEW.step <> OLD.step OR NEW.tool <> OLD.tool OR NEW.params_hash <> OLD.params_hash THEN
    RAISE EXCEPTION 'tool call %: key, tool and parameters never change', OLD.idempotency_key USING ERRCODE = 'BT001';
  END IF;
  IF NEW.attempts < OLD.attempts THEN
    RAISE EXCEPTION 'tool call %: attempts may not go back', OLD.idempotency_key USING ERRCODE = 'BT001';
  END IF;
  IF NEW.status IS DISTINCT FROM OLD.status AND NOT EXISTS (
    SELECT 1 FROM baton.tool_call_transitions WHERE from_status = OLD.status AND to_status = NEW.status
  ) THEN
    RAISE EXCEPTION 'tool call %: % -> % is not an allowed transition', OLD.idempotency_key, OLD.status, NEW.status
      USING ERRCODE = 'BT001';
  END IF;
  NEW.updated_at := now();
  RETURN NEW;
END $$;

CREATE TRIGGER tool_calls_state_machine BEFORE INSERT OR UPDATE ON baton.tool_calls
  FOR EACH ROW EXECUTE FUNCTION baton.tool_call_check_change();

-- Locks the task (fencing and gapless event numbers) and checks the caller's claim: accepted, or
-- the refusal outcome, already logged as a 'stale_write_refused' event.
CREATE FUNCTION baton.tool_call_fence(p_task_id text, p_owner text, p_claim_version bigint, p_action text)
RETURNS baton.tool_call_outcome LANGUAGE plpgsql AS $$
DECLARE
  f baton.fenced_result;
  o baton.tool_call_outcome;
BEGIN
  IF baton.claim_fence(p_task_id, p_owner, p_claim_version) THEN
    o.accepted := true;
    RETURN o;
  END IF;
  f := baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, p_action);
  o.accepted := false;
  o.task_status := f.status;
  o.task_owner := f.owner;
  o.task_claim_version := f.claim_version;
  RETURN o;
END $$;

-- An accepted outcome: the caller holds the running task's claim, and the row as it stands.
CREATE FUNCTION baton.tool_call_row_outcome(c baton.tool_calls, p_owner text, p_claim_version bigint)
RETURNS baton.tool_call_outcome LANGUAGE sql AS $$
  SELECT ROW(true, 'running', p_owner, p_claim_version, c.idempotency_key, c.tool, c.params_hash, c.status, c.owner,
             c.claim_version, c.attempts, c.result, c.error, c.retryable, c.created_at, c.sent_at, c.updated_at)::baton.tool_call_outcome;
$$;

CREATE FUNCTION baton.tool_call_event(c baton.tool_calls, p_kind text, p_actor text, p_fence bigint, p_reason text, p_details jsonb)
RETURNS bigint LANGUAGE sql AS $$
  SELECT baton.event_append('task', c.task_id, p_kind, p_actor, p_fence, NULL, p_reason,
    jsonb_build_object('step', c.step, 'tool', c.tool, 'key', c.idempotency_key, 'status', c.status, 'attempts', c.attempts)
      || coalesce(p_details, '{}'::jsonb));
$$;

-- X1: writes the ledger row for (task, step) before anything is sent, or loads the existing one.
-- The same key with another tool or other parameters is refused (BT040) and nothing changes; so is
-- a new call whose preconditions (U11) do not hold (BT041), or one the task's spec does not allow
-- (BT042: a tool not in tools.allow, past tools.maxCalls, or once its calls cost tools.maxCost).
CREATE FUNCTION baton.tool_call_begin(p_task_id text, p_owner text, p_claim_version bigint, p_step text, p_tool text, p_params_hash text,
  p_preconditions jsonb DEFAULT NULL, p_actor text DEFAULT NULL)
RETURNS baton.tool_call_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.tool_call_outcome;
  c baton.tool_calls;
  v_tools jsonb;
  v_spent numeric;
BEGIN
  IF p_step IS NULL OR p_step !~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$' THEN
    RAISE EXCEPTION 'step %: 1 to 100 letters, digits, dots, dashes or underscores, starting with a letter or digit', p_step
      USING ERRCODE = 'BT003';
  END IF;
  IF p_tool IS NULL OR p_tool !~ '^[a-z0-9][a-z0-9_-]{0,62}$' THEN
    RAISE EXCEPTION 'tool name %: 1 to 63 lowercase letters, digits, dashes or underscores', p_tool USING ERRCODE = 'BT003';
  END IF;
  o := baton.tool_call_fence(p_task_id, p_owner, p_claim_version, 'tool_call');
  IF NOT o.accepted THEN
    RETURN o;
  END IF;
  SELECT * INTO c FROM baton.tool_calls WHERE task_id = p_task_id AND step = p_step FOR UPDATE;
  IF FOUND THEN
    IF c.tool <> p_tool OR c.params_hash <> p_params_hash THEN
      RAISE EXCEPTION 'tool call %: this key was first used for tool % with parameters %, not tool % with parameters %; a key names one call, so give a different call its own step name',
        c.idempotency_key, c.tool, c.params_hash, p_tool, p_params_hash USING ERRCODE = 'BT040';
    END IF;
    -- Its preconditions are checked when a send is due: a call that took effect returns its result.
    RETURN baton.tool_call_row_outcome(c, p_owner, p_claim_version);
  END IF;
  -- U11: the task's spec says which tools its agent may call, and how many calls it may make in all
  -- (its row is locked by the fence, so two calls cannot both take the last one).
  SELECT spec->'tools' INTO v_tools FROM baton.tasks WHERE id = p_task_id;
  IF jsonb_typeof(v_tools->'allow') = 'array' AND NOT (v_tools->'allow') ? p_tool THEN
    RAISE EXCEPTION 'tool call %:%: task % may call only the tools its spec allows (%), not %; nothing was written or sent',
      p_task_id, p_step, p_task_id, coalesce(nullif((SELECT string_agg(t, ', ') FROM jsonb_array_elements_text(v_tools->'allow') t), ''), 'none'),
      p_tool USING ERRCODE = 'BT042';
  END IF;
  IF jsonb_typeof(v_tools->'maxCalls') = 'number'
     AND (SELECT count(*) FROM baton.tool_calls WHERE task_id = p_task_id) >= (v_tools->>'maxCalls')::integer THEN
    RAISE EXCEPTION 'tool call %:%: task % has made the % tool calls its spec allows (tools.maxCalls); nothing was written or sent',
      p_task_id, p_step, p_task_id, v_tools->>'maxCalls' USING ERRCODE = 'BT042';
  END IF;
  -- ...and what its calls may cost in all: the sum of the costs its tools reported (a numeric
  -- `cost` in a call's result); a call in flight counts once it reports.
  IF jsonb_typeof(v_tools->'maxCost') = 'number' THEN
    SELECT coalesce(sum((result->>'cost')::numeric), 0) INTO v_spent
      FROM baton.tool_calls WHERE task_id = p_task_id AND jsonb_typeof(result->'cost') = 'number';
    IF v_spent >= (v_tools->>'maxCost')::numeric THEN
      RAISE EXCEPTION 'tool call %:%: task % has spent % of the % its spec allows its tool calls (tools.maxCost); nothing was written or sent',
        p_task_id, p_step, p_task_id, v_spent, v_tools->>'maxCost' USING ERRCODE = 'BT042';
    END IF;
  END IF;
  PERFORM baton.tool_call_check_preconditions(p_task_id || ':' || p_step, p_preconditions, coalesce(p_actor, p_owner));
  INSERT INTO baton.tool_calls (task_id, step, tool, params_hash, status, owner, claim_version)
    VALUES (p_task_id, p_step, p_tool, p_params_hash, 'pending', p_owner, p_claim_version)
    RETURNING * INTO c;
  PERFORM baton.tool_call_event(c, 'tool_call_recorded', p_owner, p_claim_version, NULL,
    jsonb_build_object('params_hash', p_params_hash));
  RETURN baton.tool_call_row_outcome(c, p_owner, p_claim_version);
END $$;
GRANT EXECUTE ON FUNCTION baton.tool_call_begin TO baton_worker;

-- U11: the objects a call depends on, at the versions its caller read (p_preconditions: a JSON list
-- of at most 20 {"object": key, "version": n}), checked as the ledger row is written or loaded and
-- again as the call is marked sent. Each is locked for share, so a write to it waits for that commit,
-- and the call is refused (BT041; nothing written, nothing sent) when one moved, or is not an object
-- p_actor may view (worded as missing, so a refusal tells nothing more).
CREATE FUNCTION baton.tool_call_check_preconditions(p_key text, p_preconditions jsonb, p_actor text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  p jsonb;
  o baton.objects;
  v_malformed boolean;
BEGIN
  IF p_preconditions IS NULL THEN
    RETURN;
  END IF;
  IF jsonb_typeof(p_preconditions) <> 'array' OR jsonb_array_length(p_preconditions) > 20 THEN
    RAISE EXCEPTION 'tool call %: preconditions are a list of at most 20 {object, version}', p_key USING ERRCODE = 'BT003';
  END IF;
  FOR p IN SELECT value FROM jsonb_array_elements(p_preconditions) LOOP
    v_malformed := CASE WHEN jsonb_typeof(p) <> 'object' THEN true
      ELSE p - 'object' - 'version' <> '{}'::jsonb OR jsonb_typeof(p->'object') IS DISTINCT FROM 'string'
        OR jsonb_typeof(p->'version') IS DISTINCT FROM 'number' OR (p->>'version') !~ '^[0-9]{1,15}$' END;
    IF v_malformed THEN
      RAISE EXCEPTION 'tool call %: a precondition is {"object": a key, "version": a whole number}, not %', p_key, left(p::text, 200)
        USING ERRCODE = 'BT003';
    END IF;
    SELECT * INTO o FROM baton.objects WHERE key = p->>'object' FOR SHARE;
    IF NOT FOUND OR NOT baton.object_may(o, p_actor, 'view') THEN
      RAISE EXCEPTION 'tool call %: its precondition names %, which is no object % may view; nothing was sent',
        p_key, left(p->>'object', 200), p_actor USING ERRCODE = 'BT041';
    END IF;
    IF o.version <> (p->>'version')::bigint THEN
      RAISE EXCEPTION 'tool call %: object % is at version %, not % as the call expected; nothing was sent',
        p_key, o.key, o.version, p->>'version' USING ERRCODE = 'BT041';
    END IF;
  END LOOP;
END $$;

-- X1, X2: marks the call sent, committed before the request leaves. Allowed from 'pending' (never
-- sent), 'reconciled_absent' (the tool said the effect did not happen), a retryable 'failed', and
-- 'unknown' only as a replay (p_replay) to a tool that dedupes by key. Anything 'sent' or
-- 'unknown' must be reconciled first: that refusal is the database's guard against a blind retry.
-- Preconditions (U11) are checked last, in the same transaction: see tool_call_check_preconditions.
CREATE FUNCTION baton.tool_call_send(p_task_id text, p_owner text, p_claim_version bigint, p_step text, p_replay boolean,
  p_preconditions jsonb DEFAULT NULL, p_actor text DEFAULT NULL, p_rate_per_minute integer DEFAULT NULL)
RETURNS baton.tool_call_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.tool_call_outcome;
  c baton.tool_calls;
  v_from text;
  v_sent bigint;
  v_oldest timestamptz;
BEGIN
  o := baton.tool_call_fence(p_task_id, p_owner, p_claim_version, 'tool_call_send');
  IF NOT o.accepted THEN
    RETURN o;
  END IF;
  SELECT * INTO c FROM baton.tool_calls WHERE task_id = p_task_id AND step = p_step FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'tool call %:% has no ledger row; begin it first', p_task_id, p_step USING ERRCODE = 'BT002';
  END IF;
  IF NOT (c.status IN ('pending', 'reconciled_absent')
          OR (c.status = 'failed' AND c.retryable)
          OR (c.status = 'unknown' AND coalesce(p_replay, false))) THEN
    RAISE EXCEPTION 'tool call % is % (attempt % by % at claim version %): %', c.idempotency_key, c.status, c.attempts, c.owner, c.claim_version,
      CASE WHEN c.status IN ('sent', 'unknown') THEN 'its outcome is uncertain, so it is reconciled (looked up at the tool) before it may be sent again'
           WHEN c.status = 'failed' THEN 'the tool refused it for good; use a new step name for a new call'
           ELSE 'it already took effect; its recorded result is the answer' END
      USING ERRCODE = 'BT001';
  END IF;
  PERFORM baton.tool_call_check_preconditions(c.idempotency_key, p_preconditions, coalesce(p_actor, p_owner));
  -- U11: the tool's rate limit (its worker's configuration), over every task: at most
  -- p_rate_per_minute calls sent in any minute, counted under a lock on the tool's name (BT043,
  -- DETAIL: the ms until a place frees). Nothing changes when it is refused.
  IF p_rate_per_minute IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext('baton.tool_rate'), hashtext(c.tool));
    SELECT count(*), min(x.sent_at) INTO v_sent, v_oldest FROM baton.tool_calls x
     WHERE x.tool = c.tool AND x.sent_at > now() - interval '1 minute';
    IF v_sent >= p_rate_per_minute THEN
      RAISE EXCEPTION 'tool call %: tool % sent % calls in the last minute, its rate limit; nothing was sent', c.idempotency_key, c.tool, v_sent
        USING ERRCODE = 'BT043', DETAIL = greatest(1, ceil(extract(epoch FROM v_oldest + interval '1 minute' - now()) * 1000))::bigint::text;
    END IF;
  END IF;
  v_from := c.status;
  UPDATE baton.tool_calls
     SET status = 'sent', attempts = attempts + 1, owner = p_owner, claim_version = p_claim_version,
         sent_at = now(), error = NULL, retryable = false
   WHERE task_id = p_task_id AND step = p_step
  RETURNING * INTO c;
  PERFORM baton.tool_call_event(c, 'tool_call_started', p_owner, p_claim_version,
    CASE WHEN v_from = 'unknown' THEN 'replayed under the same key: the tool dedupes by key' END,
    jsonb_build_object('from', v_from, 'replay', v_from = 'unknown'));
  RETURN baton.tool_call_row_outcome(c, p_owner, p_claim_version);
END $$;
GRANT EXECUTE ON FUNCTION baton.tool_call_send TO baton_worker;

-- X1: records what the tool answered to this claim's own send: 'succeeded', 'failed' (the tool
-- refused; p_retryable when it refused before acting) or 'unknown' (timeout, reset, 5xx).
CREATE FUNCTION baton.tool_call_record(p_task_id text, p_owner text, p_claim_version bigint, p_step text,
  p_status text, p_result jsonb, p_error text, p_retryable boolean)
RETURNS baton.tool_call_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.tool_call_outcome;
  c baton.tool_calls;
BEGIN
  IF p_status IS NULL OR p_status NOT IN ('succeeded', 'failed', 'unknown') THEN
    RAISE EXCEPTION 'a tool call outcome is succeeded, failed or unknown, not %', p_status USING ERRCODE = 'BT003';
  END IF;
  o := baton.tool_call_fence(p_task_id, p_owner, p_claim_version, 'tool_call_record');
  IF NOT o.accepted THEN
    RETURN o;
  END IF;
  SELECT * INTO c FROM baton.tool_calls WHERE task_id = p_task_id AND step = p_step FOR UPDATE;
  IF NOT FOUND OR c.status <> 'sent' OR c.owner <> p_owner OR c.claim_version <> p_claim_version THEN
    RAISE EXCEPTION 'tool call %:%: an outcome is recorded only for a send this claim made (row is %)', p_task_id, p_step,
      coalesce(c.status, 'missing') USING ERRCODE = 'BT001';
  END IF;
  UPDATE baton.tool_calls
     SET status = p_status, result = CASE WHEN p_status = 'succeeded' THEN p_result END,
         error = left(p_error, 2000), retryable = p_status = 'failed' AND coalesce(p_retryable, false)
   WHERE task_id = p_task_id AND step = p_step
  RETURNING * INTO c;
  PERFORM baton.tool_call_event(c,
    CASE p_status WHEN 'succeeded' THEN 'tool_call_succeeded' WHEN 'failed' THEN 'tool_call_failed' ELSE 'tool_call_uncertain' END,
    p_owner, p_claim_version, left(p_error, 2000), jsonb_build_object('retryable', c.retryable));
  RETURN baton.tool_call_row_outcome(c, p_owner, p_claim_version);
END $$;
GRANT EXECUTE ON FUNCTION baton.tool_call_record TO baton_worker;

-- X2: records what the tool's lookup said about a call left 'sent' or 'unknown' (by this claim or
-- an earlier one): 'found' (it happened: reconciled_succeeded with the result), 'absent' (it did
-- not: reconciled_absent, may be sent again) or 'unknown' (the tool could not tell: stays unknown).
CREATE FUNCTION baton.tool_call_reconcile(p_task_id text, p_owner text, p_claim_version bigint, p_step text,
  p_finding text, p_result jsonb, p_reason text)
RETURNS baton.tool_call_outcome LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, baton, pg_temp AS $$
DECLARE
  o baton.tool_call_outcome;
  c baton.tool_calls;
  v_details jsonb;
BEGIN
  IF p_finding IS NULL OR p_finding NOT IN ('found', 'absent', 'unknown') THEN
    RAISE EXCEPTION 'a lookup finds found, absent or unknown, not %', p_finding USING ERRCODE = 'BT003';
  END IF;
  o := baton.tool_call_fence(p_task_id, p_owner, p_claim_version, 'tool_call_reconcile');
  IF NOT o.accepted THEN
    RETURN o;
  END IF;
  SELECT * INTO c FROM baton.tool_calls WHERE task_id = p_task_id AND step = p_step FOR UPDATE;
  IF NOT FOUND OR c.status NOT IN ('sent', 'unknown') THEN
    RAISE EXCEPTION 'tool call %:% is %: only a sent or unknown call is reconciled', p_task_id, p_step, coalesce(c.status, 'missing')
      USING ERRCODE = 'BT001';
  END IF;
  v_details := jsonb_build_object('finding', p_finding, 'previous_status', c.status, 'previous_owner', c.owner,
    'previous_claim_version', c.claim_version, 'inherited', c.claim_version <> p_claim_version OR c.owner <> p_owner);
  UPDATE baton.tool_calls
     SET status = CASE p_finding WHEN 'found' THEN 'reconciled_succeeded' WHEN 'absent' THEN 'reconciled_absent' ELSE 'unknown' END,
         result = CASE WHEN p_finding = 'found' THEN p_result END,
         error = CASE WHEN p_finding = 'unknown' THEN left(p_reason, 2000) END,
         owner = p_owner, claim_version = p_claim_version
   WHERE task_id = p_task_id AND step = p_step
  RETURNING * INTO c;
  PERFORM baton.tool_call_event(c, CASE WHEN p_finding = 'unknown' THEN 'tool_call_unresolved' ELSE 'tool_call_reconciled' END,
    p_owner, p_claim_version, left(p_reason, 2000), v_details);
  RETURN baton.tool_call_row_outcome(c, p_owner, p_claim_version);
END $$;
GRANT EXECUTE ON FUNCTION baton.tool_call_reconcile TO baton_worker;
