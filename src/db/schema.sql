-- The whole baton schema of a freshly migrated database, written by `npm run db:snapshot`.
-- Do not edit: change a migration or a file in src/db/functions and run the script again.

-- types

CREATE TYPE baton.claim AS (task_id text, graph_id text, key text, spec jsonb, claim_version bigint, lease_expires_at timestamp with time zone, attempts integer, upstream_revisions jsonb);

CREATE TYPE baton.event_view AS (id bigint, subject_kind text, subject_id text, subject_seq integer, kind text, actor text, at timestamp with time zone, fence bigint, version bigint, reason text, details jsonb);

CREATE TYPE baton.fenced_result AS (accepted boolean, status text, owner text, claim_version bigint, lease_expires_at timestamp with time zone);

CREATE TYPE baton.object_outcome AS (ok boolean, refusal text, reason text, key text, version bigint, token bigint, holder text, holder_since timestamp with time zone, holder_heartbeat_at timestamp with time zone, holder_silent boolean, silence_timeout_ms integer, offer_to text, offer_version bigint, offered_at timestamp with time zone, content text, content_ref text, suggestion_id bigint, at timestamp with time zone);

CREATE TYPE baton.task_view AS (id text, graph_id text, key text, spec jsonb, status text, owner text, claim_version bigint, claimed_at timestamp with time zone, lease_expires_at timestamp with time zone, attempts integer, progress jsonb, artifact jsonb, verified_revision text, upstream_revisions jsonb, lease_expired boolean, depends_on text[]);

CREATE TYPE baton.tool_call_outcome AS (accepted boolean, task_status text, task_owner text, task_claim_version bigint, idempotency_key text, tool text, params_hash text, status text, owner text, claim_version bigint, attempts integer, result jsonb, error text, retryable boolean, created_at timestamp with time zone, sent_at timestamp with time zone, updated_at timestamp with time zone);

-- tables

CREATE TABLE baton.agent_tokens (
  id text NOT NULL,
  identity text NOT NULL,
  scopes text[] NOT NULL,
  secret_sha256 bytea NOT NULL,
  created_by text NOT NULL,
  created_at timestamp with time zone DEFAULT now() NOT NULL,
  expires_at timestamp with time zone,
  revoked_at timestamp with time zone,
  revoked_by text,
  revoke_reason text,
  last_used_at timestamp with time zone,
  parent_token_id text,
  task_id text,
  claim_version bigint,
  note_graphs text[],
  note_tasks text[],
  pools text[],
  CONSTRAINT agent_tokens_check CHECK (((task_id IS NULL) = (claim_version IS NULL))),
  CONSTRAINT agent_tokens_id_check CHECK ((id ~ '^tok_[0-9a-f]{16}$'::text)),
  CONSTRAINT agent_tokens_identity_check CHECK (((length(identity) >= 1) AND (length(identity) <= 200))),
  CONSTRAINT agent_tokens_note_grants_check CHECK (((note_graphs IS NULL) = (note_tasks IS NULL))),
  CONSTRAINT agent_tokens_parent_token_id_fkey FOREIGN KEY (parent_token_id) REFERENCES baton.agent_tokens(id),
  CONSTRAINT agent_tokens_pkey PRIMARY KEY (id),
  CONSTRAINT agent_tokens_pools_check CHECK (((pools IS NULL) OR ((task_id IS NULL) AND ((cardinality(pools) >= 1) AND (cardinality(pools) <= 50))))),
  CONSTRAINT agent_tokens_run_grants_check CHECK (((task_id IS NULL) OR (note_graphs IS NULL))),
  CONSTRAINT agent_tokens_scopes_check CHECK ((scopes <@ ARRAY['read'::text, 'notes'::text, 'objects'::text, 'submit'::text, 'view'::text, 'approve'::text, 'admin'::text])),
  CONSTRAINT agent_tokens_secret_sha256_check CHECK ((length(secret_sha256) = 32)),
  CONSTRAINT agent_tokens_secret_sha256_key UNIQUE (secret_sha256),
  CONSTRAINT agent_tokens_task_id_fkey FOREIGN KEY (task_id) REFERENCES baton.tasks(id)
);

CREATE TABLE baton.approvals (
  id bigint DEFAULT nextval('baton.approvals_id_seq'::regclass) NOT NULL,
  task_id text NOT NULL,
  claim_version bigint NOT NULL,
  revision text NOT NULL,
  requested_by text NOT NULL,
  requested_at timestamp with time zone DEFAULT now() NOT NULL,
  due_at timestamp with time zone,
  on_timeout text NOT NULL,
  decision text,
  decided_by text,
  decided_at timestamp with time zone,
  reason text,
  CONSTRAINT approvals_check CHECK ((((decision IS NULL) = (decided_at IS NULL)) AND ((decision IS NULL) = (decided_by IS NULL)))),
  CONSTRAINT approvals_decision_check CHECK ((decision = ANY (ARRAY['approved'::text, 'rejected'::text, 'timed_out'::text, 'cancelled'::text]))),
  CONSTRAINT approvals_on_timeout_check CHECK ((on_timeout = ANY (ARRAY['reject'::text, 'fail'::text]))),
  CONSTRAINT approvals_pkey PRIMARY KEY (id),
  CONSTRAINT approvals_reason_check CHECK ((length(reason) <= 2000)),
  CONSTRAINT approvals_task_id_fkey FOREIGN KEY (task_id) REFERENCES baton.tasks(id)
);

CREATE TABLE baton.archived_events (
  id bigint NOT NULL,
  subject_kind text NOT NULL,
  subject_id text NOT NULL,
  subject_seq integer NOT NULL,
  kind text NOT NULL,
  actor text NOT NULL,
  at timestamp with time zone NOT NULL,
  fence bigint,
  version bigint,
  reason text,
  details jsonb NOT NULL,
  graph_id text NOT NULL,
  CONSTRAINT archived_events_graph_id_fkey FOREIGN KEY (graph_id) REFERENCES baton.archives(graph_id),
  CONSTRAINT archived_events_pkey PRIMARY KEY (id)
);

CREATE TABLE baton.archives (
  graph_id text NOT NULL,
  archived_at timestamp with time zone DEFAULT now() NOT NULL,
  archived_by text NOT NULL,
  finished_at timestamp with time zone NOT NULL,
  events integer NOT NULL,
  notes jsonb NOT NULL,
  tool_calls jsonb NOT NULL,
  CONSTRAINT archives_archived_by_check CHECK (((length(archived_by) >= 1) AND (length(archived_by) <= 200))),
  CONSTRAINT archives_graph_id_fkey FOREIGN KEY (graph_id) REFERENCES baton.graphs(id),
  CONSTRAINT archives_pkey PRIMARY KEY (graph_id)
);

CREATE TABLE baton.definitions (
  file text NOT NULL,
  checksum text NOT NULL,
  applied_at timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT definitions_pkey PRIMARY KEY (file)
);

CREATE TABLE baton.events (
  id bigint DEFAULT nextval('baton.events_id_seq'::regclass) NOT NULL,
  subject_kind text NOT NULL,
  subject_id text NOT NULL,
  subject_seq integer NOT NULL,
  kind text NOT NULL,
  actor text NOT NULL,
  at timestamp with time zone DEFAULT now() NOT NULL,
  fence bigint,
  version bigint,
  reason text,
  details jsonb DEFAULT '{}'::jsonb NOT NULL,
  CONSTRAINT events_actor_check CHECK (((length(actor) >= 1) AND (length(actor) <= 200))),
  CONSTRAINT events_kind_check CHECK ((kind ~ '^[a-z_]+$'::text)),
  CONSTRAINT events_pkey PRIMARY KEY (id),
  CONSTRAINT events_subject_kind_check CHECK ((subject_kind = ANY (ARRAY['task'::text, 'object'::text, 'graph'::text, 'agent'::text]))),
  CONSTRAINT events_subject_kind_subject_id_subject_seq_key UNIQUE (subject_kind, subject_id, subject_seq)
);

CREATE TABLE baton.graphs (
  id text NOT NULL,
  submitted_by text NOT NULL,
  submitted_at timestamp with time zone DEFAULT now() NOT NULL,
  spec jsonb NOT NULL,
  repo text GENERATED ALWAYS AS ((spec ->> 'repo'::text)) STORED,
  base text GENERATED ALWAYS AS ((spec ->> 'base'::text)) STORED,
  CONSTRAINT graphs_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text)),
  CONSTRAINT graphs_pkey PRIMARY KEY (id)
);

CREATE TABLE baton.health_checks (
  id bigint DEFAULT nextval('baton.health_checks_id_seq'::regclass) NOT NULL,
  workflow_id text NOT NULL,
  message text NOT NULL,
  recorded_at timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT health_checks_message_check CHECK (((length(message) >= 1) AND (length(message) <= 1000))),
  CONSTRAINT health_checks_pkey PRIMARY KEY (id),
  CONSTRAINT health_checks_workflow_id_key UNIQUE (workflow_id)
);

CREATE TABLE baton.migrations (
  id integer NOT NULL,
  name text NOT NULL,
  applied_at timestamp with time zone DEFAULT now() NOT NULL,
  checksum text,
  CONSTRAINT migrations_pkey PRIMARY KEY (id)
);

CREATE TABLE baton.object_offers (
  id bigint DEFAULT nextval('baton.object_offers_id_seq'::regclass) NOT NULL,
  object_key text NOT NULL,
  giver text NOT NULL,
  successor text NOT NULL,
  version bigint NOT NULL,
  token bigint NOT NULL,
  offered_at timestamp with time zone DEFAULT now() NOT NULL,
  status text DEFAULT 'open'::text NOT NULL,
  closed_at timestamp with time zone,
  closed_by text,
  CONSTRAINT object_offers_check CHECK (((status = 'open'::text) = (closed_at IS NULL))),
  CONSTRAINT object_offers_object_key_fkey FOREIGN KEY (object_key) REFERENCES baton.objects(key),
  CONSTRAINT object_offers_pkey PRIMARY KEY (id),
  CONSTRAINT object_offers_status_check CHECK ((status = ANY (ARRAY['open'::text, 'accepted'::text, 'declined'::text, 'withdrawn'::text, 'overtaken'::text])))
);

CREATE TABLE baton.object_permissions (
  object_key text NOT NULL,
  actor text NOT NULL,
  access text NOT NULL,
  granted_by text NOT NULL,
  granted_at timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT object_permissions_access_check CHECK ((access = ANY (ARRAY['none'::text, 'view'::text, 'suggest'::text, 'write'::text]))),
  CONSTRAINT object_permissions_actor_check CHECK (((length(actor) >= 1) AND (length(actor) <= 200))),
  CONSTRAINT object_permissions_object_key_fkey FOREIGN KEY (object_key) REFERENCES baton.objects(key),
  CONSTRAINT object_permissions_pkey PRIMARY KEY (object_key, actor)
);

CREATE TABLE baton.object_read_views (
  object_key text NOT NULL,
  actor text NOT NULL,
  version bigint NOT NULL,
  read_at timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT object_read_views_object_key_fkey FOREIGN KEY (object_key) REFERENCES baton.objects(key),
  CONSTRAINT object_read_views_pkey PRIMARY KEY (object_key, actor)
);

CREATE TABLE baton.object_suggestions (
  id bigint DEFAULT nextval('baton.object_suggestions_id_seq'::regclass) NOT NULL,
  object_key text NOT NULL,
  suggested_by text NOT NULL,
  base_version bigint NOT NULL,
  content text,
  content_ref text,
  note text,
  created_at timestamp with time zone DEFAULT now() NOT NULL,
  status text DEFAULT 'open'::text NOT NULL,
  approved_by text,
  approved_at timestamp with time zone,
  applied_version bigint,
  CONSTRAINT object_suggestions_check CHECK ((num_nonnulls(content, content_ref) = 1)),
  CONSTRAINT object_suggestions_content_check CHECK ((octet_length(content) <= 1048576)),
  CONSTRAINT object_suggestions_content_ref_check CHECK (((length(content_ref) >= 1) AND (length(content_ref) <= 2000))),
  CONSTRAINT object_suggestions_note_check CHECK ((length(note) <= 2000)),
  CONSTRAINT object_suggestions_object_key_fkey FOREIGN KEY (object_key) REFERENCES baton.objects(key),
  CONSTRAINT object_suggestions_pkey PRIMARY KEY (id),
  CONSTRAINT object_suggestions_status_check CHECK ((status = ANY (ARRAY['open'::text, 'approved'::text])))
);

CREATE TABLE baton.objects (
  key text NOT NULL,
  content text,
  content_ref text,
  version bigint DEFAULT 0 NOT NULL,
  holder text,
  token bigint DEFAULT 0 NOT NULL,
  holder_since timestamp with time zone,
  holder_heartbeat_at timestamp with time zone,
  silence_timeout_ms integer NOT NULL,
  default_access text DEFAULT 'none'::text NOT NULL,
  created_by text NOT NULL,
  created_at timestamp with time zone DEFAULT now() NOT NULL,
  updated_at timestamp with time zone DEFAULT now() NOT NULL,
  paths text[] DEFAULT '{}'::text[] NOT NULL,
  CONSTRAINT objects_check CHECK ((num_nonnulls(content, content_ref) <= 1)),
  CONSTRAINT objects_check1 CHECK ((((holder IS NULL) = (holder_heartbeat_at IS NULL)) AND ((holder IS NULL) = (holder_since IS NULL)))),
  CONSTRAINT objects_content_check CHECK ((octet_length(content) <= 1048576)),
  CONSTRAINT objects_content_ref_check CHECK (((length(content_ref) >= 1) AND (length(content_ref) <= 2000))),
  CONSTRAINT objects_created_by_check CHECK (((length(created_by) >= 1) AND (length(created_by) <= 200))),
  CONSTRAINT objects_default_access_check CHECK ((default_access = ANY (ARRAY['none'::text, 'view'::text, 'suggest'::text, 'write'::text]))),
  CONSTRAINT objects_holder_check CHECK (((length(holder) >= 1) AND (length(holder) <= 200))),
  CONSTRAINT objects_key_check CHECK ((key ~ '^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$'::text)),
  CONSTRAINT objects_paths_check CHECK ((cardinality(paths) <= 100)),
  CONSTRAINT objects_pkey PRIMARY KEY (key),
  CONSTRAINT objects_silence_timeout_ms_check CHECK (((silence_timeout_ms >= 1) AND (silence_timeout_ms <= 604800000))),
  CONSTRAINT objects_token_check CHECK ((token >= 0)),
  CONSTRAINT objects_version_check CHECK ((version >= 0))
);

CREATE TABLE baton.pool_limits (
  pool text NOT NULL,
  max_running integer NOT NULL,
  set_by text NOT NULL,
  set_at timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT pool_limits_max_running_check CHECK (((max_running >= 1) AND (max_running <= 10000))),
  CONSTRAINT pool_limits_pkey PRIMARY KEY (pool),
  CONSTRAINT pool_limits_pool_check CHECK ((pool ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text))
);

CREATE TABLE baton.pool_runs (
  task_id text NOT NULL,
  claim_version bigint NOT NULL,
  pool text NOT NULL,
  offered_by text NOT NULL,
  offered_at timestamp with time zone DEFAULT now() NOT NULL,
  agent text,
  taken_at timestamp with time zone,
  token_id text,
  beat_at timestamp with time zone,
  progress jsonb,
  revision text,
  submitted_at timestamp with time zone,
  CONSTRAINT pool_runs_check CHECK (((agent IS NULL) = (taken_at IS NULL))),
  CONSTRAINT pool_runs_check1 CHECK (((revision IS NULL) OR (agent IS NOT NULL))),
  CONSTRAINT pool_runs_pkey PRIMARY KEY (task_id, claim_version),
  CONSTRAINT pool_runs_pool_check CHECK ((pool ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text)),
  CONSTRAINT pool_runs_task_id_fkey FOREIGN KEY (task_id) REFERENCES baton.tasks(id),
  CONSTRAINT pool_runs_token_id_fkey FOREIGN KEY (token_id) REFERENCES baton.agent_tokens(id)
);

CREATE TABLE baton.proposals (
  id bigint DEFAULT nextval('baton.proposals_id_seq'::regclass) NOT NULL,
  graph_id text NOT NULL,
  task_id text NOT NULL,
  claim_version bigint NOT NULL,
  proposed_by text NOT NULL,
  proposed_at timestamp with time zone DEFAULT now() NOT NULL,
  tasks jsonb NOT NULL,
  status text NOT NULL,
  decided_by text,
  decided_at timestamp with time zone,
  reason text,
  CONSTRAINT proposals_check CHECK ((((status = 'pending'::text) = (decided_at IS NULL)) AND ((decided_at IS NULL) = (decided_by IS NULL)))),
  CONSTRAINT proposals_graph_id_fkey FOREIGN KEY (graph_id) REFERENCES baton.graphs(id),
  CONSTRAINT proposals_pkey PRIMARY KEY (id),
  CONSTRAINT proposals_reason_check CHECK ((length(reason) <= 2000)),
  CONSTRAINT proposals_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'accepted'::text, 'declined'::text]))),
  CONSTRAINT proposals_task_id_fkey FOREIGN KEY (task_id) REFERENCES baton.tasks(id),
  CONSTRAINT proposals_tasks_check CHECK (((jsonb_typeof(tasks) = 'array'::text) AND (jsonb_array_length(tasks) > 0)))
);

CREATE TABLE baton.task_dependencies (
  task_id text NOT NULL,
  depends_on text NOT NULL,
  CONSTRAINT task_dependencies_check CHECK ((task_id <> depends_on)),
  CONSTRAINT task_dependencies_depends_on_fkey FOREIGN KEY (depends_on) REFERENCES baton.tasks(id),
  CONSTRAINT task_dependencies_pkey PRIMARY KEY (task_id, depends_on),
  CONSTRAINT task_dependencies_task_id_fkey FOREIGN KEY (task_id) REFERENCES baton.tasks(id)
);

CREATE TABLE baton.task_notes (
  id bigint DEFAULT nextval('baton.task_notes_id_seq'::regclass) NOT NULL,
  task_id text NOT NULL,
  author text NOT NULL,
  claim_version bigint,
  body text NOT NULL,
  at timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT task_notes_body_check CHECK (((length(body) >= 1) AND (length(body) <= 10000))),
  CONSTRAINT task_notes_pkey PRIMARY KEY (id),
  CONSTRAINT task_notes_task_id_fkey FOREIGN KEY (task_id) REFERENCES baton.tasks(id)
);

CREATE TABLE baton.task_statuses (
  status text NOT NULL,
  CONSTRAINT task_statuses_pkey PRIMARY KEY (status)
);

CREATE TABLE baton.task_transitions (
  from_status text NOT NULL,
  to_status text NOT NULL,
  CONSTRAINT task_transitions_from_status_fkey FOREIGN KEY (from_status) REFERENCES baton.task_statuses(status),
  CONSTRAINT task_transitions_pkey PRIMARY KEY (from_status, to_status),
  CONSTRAINT task_transitions_to_status_fkey FOREIGN KEY (to_status) REFERENCES baton.task_statuses(status)
);

CREATE TABLE baton.tasks (
  id text NOT NULL,
  graph_id text NOT NULL,
  key text NOT NULL,
  spec jsonb NOT NULL,
  status text NOT NULL,
  owner text,
  claim_version bigint DEFAULT 0 NOT NULL,
  claimed_at timestamp with time zone,
  heartbeat_at timestamp with time zone,
  lease_expires_at timestamp with time zone,
  attempts integer DEFAULT 0 NOT NULL,
  progress jsonb,
  artifact jsonb,
  verified_revision text,
  verifier text,
  upstream_revisions jsonb DEFAULT '{}'::jsonb NOT NULL,
  created_at timestamp with time zone DEFAULT now() NOT NULL,
  updated_at timestamp with time zone DEFAULT now() NOT NULL,
  limits jsonb,
  store_claim boolean DEFAULT false NOT NULL,
  CONSTRAINT tasks_check CHECK (((status <> 'running'::text) OR ((owner IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
  CONSTRAINT tasks_check1 CHECK (((status <> ALL (ARRAY['submitted'::text, 'verifying'::text, 'awaiting_approval'::text, 'verified'::text, 'rejected'::text, 'stale'::text])) OR (artifact IS NOT NULL))),
  CONSTRAINT tasks_claim_version_check CHECK ((claim_version >= 0)),
  CONSTRAINT tasks_graph_id_fkey FOREIGN KEY (graph_id) REFERENCES baton.graphs(id),
  CONSTRAINT tasks_graph_id_key_key UNIQUE (graph_id, key),
  CONSTRAINT tasks_key_check CHECK ((key ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text)),
  CONSTRAINT tasks_pkey PRIMARY KEY (id)
);

CREATE TABLE baton.tool_call_statuses (
  status text NOT NULL,
  CONSTRAINT tool_call_statuses_pkey PRIMARY KEY (status)
);

CREATE TABLE baton.tool_call_transitions (
  from_status text NOT NULL,
  to_status text NOT NULL,
  CONSTRAINT tool_call_transitions_from_status_fkey FOREIGN KEY (from_status) REFERENCES baton.tool_call_statuses(status),
  CONSTRAINT tool_call_transitions_pkey PRIMARY KEY (from_status, to_status),
  CONSTRAINT tool_call_transitions_to_status_fkey FOREIGN KEY (to_status) REFERENCES baton.tool_call_statuses(status)
);

CREATE TABLE baton.tool_calls (
  task_id text NOT NULL,
  step text NOT NULL,
  idempotency_key text GENERATED ALWAYS AS (((task_id || ':'::text) || step)) STORED,
  tool text NOT NULL,
  params_hash text NOT NULL,
  status text NOT NULL,
  owner text NOT NULL,
  claim_version bigint NOT NULL,
  attempts integer DEFAULT 0 NOT NULL,
  result jsonb,
  error text,
  retryable boolean DEFAULT false NOT NULL,
  created_at timestamp with time zone DEFAULT now() NOT NULL,
  sent_at timestamp with time zone,
  updated_at timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT tool_calls_attempts_check CHECK ((attempts >= 0)),
  CONSTRAINT tool_calls_claim_version_check CHECK ((claim_version >= 1)),
  CONSTRAINT tool_calls_error_check CHECK ((length(error) <= 2000)),
  CONSTRAINT tool_calls_idempotency_key_key UNIQUE (idempotency_key),
  CONSTRAINT tool_calls_owner_check CHECK (((length(owner) >= 1) AND (length(owner) <= 200))),
  CONSTRAINT tool_calls_params_hash_check CHECK ((params_hash ~ '^sha256:[0-9a-f]{64}$'::text)),
  CONSTRAINT tool_calls_pkey PRIMARY KEY (task_id, step),
  CONSTRAINT tool_calls_result_check CHECK ((octet_length((result)::text) <= 16384)),
  CONSTRAINT tool_calls_status_fkey FOREIGN KEY (status) REFERENCES baton.tool_call_statuses(status),
  CONSTRAINT tool_calls_step_check CHECK ((step ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'::text)),
  CONSTRAINT tool_calls_task_id_fkey FOREIGN KEY (task_id) REFERENCES baton.tasks(id),
  CONSTRAINT tool_calls_tool_check CHECK ((tool ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text))
);

CREATE TABLE baton.verifications (
  id bigint DEFAULT nextval('baton.verifications_id_seq'::regclass) NOT NULL,
  task_id text NOT NULL,
  claim_version bigint NOT NULL,
  revision text NOT NULL,
  command text NOT NULL,
  exit_code integer NOT NULL,
  output_digest text NOT NULL,
  output_tail text DEFAULT ''::text NOT NULL,
  verifier text NOT NULL,
  passed boolean NOT NULL,
  at timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT verifications_pkey PRIMARY KEY (id),
  CONSTRAINT verifications_task_id_fkey FOREIGN KEY (task_id) REFERENCES baton.tasks(id)
);

-- indexes

CREATE INDEX agent_tokens_claim_idx ON baton.agent_tokens USING btree (task_id, claim_version) WHERE (task_id IS NOT NULL);

CREATE UNIQUE INDEX approvals_open_idx ON baton.approvals USING btree (task_id) WHERE (decision IS NULL);

CREATE INDEX approvals_task_idx ON baton.approvals USING btree (task_id, id);

CREATE INDEX archived_events_graph_idx ON baton.archived_events USING btree (graph_id, id);

CREATE INDEX archived_events_subject_idx ON baton.archived_events USING btree (subject_kind, subject_id, id);

CREATE UNIQUE INDEX object_offers_one_open ON baton.object_offers USING btree (object_key) WHERE (status = 'open'::text);

CREATE INDEX object_suggestions_open_idx ON baton.object_suggestions USING btree (object_key, id) WHERE (status = 'open'::text);

CREATE INDEX objects_held ON baton.objects USING btree (holder_heartbeat_at) WHERE (holder IS NOT NULL);

CREATE INDEX objects_held_idx ON baton.objects USING btree (key) WHERE (holder IS NOT NULL);

CREATE INDEX objects_reserving_idx ON baton.objects USING btree (key) WHERE (paths <> '{}'::text[]);

CREATE INDEX pool_runs_open_idx ON baton.pool_runs USING btree (pool, offered_at) WHERE (agent IS NULL);

CREATE INDEX pool_runs_taken_idx ON baton.pool_runs USING btree (pool) WHERE ((agent IS NOT NULL) AND (revision IS NULL));

CREATE INDEX proposals_pending_idx ON baton.proposals USING btree (proposed_at) WHERE (status = 'pending'::text);

CREATE INDEX proposals_task_idx ON baton.proposals USING btree (task_id);

CREATE INDEX task_dependencies_upstream_idx ON baton.task_dependencies USING btree (depends_on);

CREATE INDEX task_notes_task_idx ON baton.task_notes USING btree (task_id, id);

CREATE INDEX tasks_ready_idx ON baton.tasks USING btree (created_at, id) WHERE (status = 'ready'::text);

CREATE INDEX tasks_ready_in_graph_idx ON baton.tasks USING btree (graph_id, created_at, id) WHERE (status = 'ready'::text);

CREATE INDEX tasks_run_claims_idx ON baton.tasks USING btree (id) WHERE ((status = 'running'::text) AND (NOT store_claim));

CREATE INDEX tasks_running_idx ON baton.tasks USING btree (id) WHERE (status = 'running'::text);

CREATE INDEX tool_calls_tool_sent_idx ON baton.tool_calls USING btree (tool, sent_at);

CREATE INDEX verifications_task_idx ON baton.verifications USING btree (task_id, claim_version);

-- functions

CREATE OR REPLACE FUNCTION baton.agent_approval_decide(p_actor text, p_task_id text, p_decision text, p_reason text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  r record;
BEGIN
  SELECT * INTO STRICT r FROM baton.approval_decide(p_task_id, p_actor, p_decision, p_reason);
  RETURN jsonb_build_object('taskId', p_task_id, 'status', r.status, 'released', to_jsonb(r.released));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_authenticate(p_secret text, p_operation text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  k baton.agent_tokens := baton.agent_token_by_secret(p_secret);
BEGIN
  RETURN coalesce(baton.agent_token_refusal(k, p_operation), jsonb_build_object('ok', true, 'identity', k.identity));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_call(p_secret text, p_operation text, p_args jsonb DEFAULT '{}'::jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  v_scope text := baton.agent_operation_scope(p_operation);
  a jsonb := coalesce(p_args, '{}'::jsonb);
  k baton.agent_tokens := baton.agent_token_by_secret(p_secret);
  v_refusal jsonb;
  v_denial text;
  t baton.tasks;
  r baton.pool_runs;
  o baton.object_outcome;
  v_task text;
  v_secret_sha256 bytea;
  v_outcome jsonb;
BEGIN
  IF v_scope IS NULL THEN PERFORM baton.agent_invalid(format('unknown operation %L', p_operation)); END IF;
  IF jsonb_typeof(a) <> 'object' THEN PERFORM baton.agent_invalid('the arguments must be a JSON object'); END IF;
  v_refusal := baton.agent_token_refusal(k, p_operation);
  IF v_refusal IS NOT NULL THEN RETURN v_refusal; END IF;
  v_denial := baton.agent_scope_denial(k, p_operation, v_scope);
  -- Before a run token's claim is looked at (and locked): a view is no run's business.
  IF v_denial = 'limited' THEN
    RETURN baton.agent_refuse(k, p_operation, 'limited', format('%s shows the whole deployment; token %s of %s is limited to %s',
      p_operation, k.id, k.identity, CASE WHEN k.task_id IS NOT NULL THEN format('its run of task %s', k.task_id) ELSE 'the notes it was granted' END));
  END IF;
  IF k.task_id IS NOT NULL AND v_denial = 'not_a_run' THEN
    RETURN baton.agent_refuse(k, p_operation, 'not_a_run', format('a run token (%s) cannot take further runs: use the token that took this one', k.id));
  END IF;
  IF k.task_id IS NOT NULL THEN
    t := baton.task_lock(k.task_id);
    IF t.claim_version <> k.claim_version OR t.status <> 'running' THEN
      -- T4: the claim this run token was issued for has moved on; like any late owner write.
      PERFORM baton.claim_refuse_stale_write(k.task_id, k.identity, k.claim_version, p_operation);
      RETURN jsonb_build_object('ok', false, 'refusal', 'stale_claim', 'identity', k.identity, 'taskId', k.task_id, 'claimVersion', k.claim_version,
        'reason', format('%s with the run token of claim version %s of task %s refused: the task is %s at claim version %s',
          p_operation, k.claim_version, k.task_id, t.status, t.claim_version),
        'task', jsonb_build_object('status', t.status, 'owner', t.owner, 'claimVersion', t.claim_version));
    END IF;
  ELSIF v_denial = 'not_a_run' THEN
    RETURN baton.agent_refuse(k, p_operation, 'not_a_run',
      format('%s needs a run token (one a run gives its agent, or pool.claim returns); token %s of %s is not bound to a claim', p_operation, k.id, k.identity));
  END IF;
  IF v_denial = 'scope' THEN
    RETURN baton.agent_refuse(k, p_operation, 'scope',
      format('token %s of %s has scope %s; %s needs %s', k.id, k.identity, array_to_string(k.scopes, ', '), p_operation, v_scope));
  END IF;
  UPDATE baton.agent_tokens SET last_used_at = now() WHERE id = k.id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

  CASE p_operation
  WHEN 'whoami' THEN
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_token_view(k) - 'createdBy' - 'revokedAt' - 'revokedBy' - 'lastUsedAt');
  WHEN 'context' THEN
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_task_context(t, k));
  WHEN 'tool.call' THEN
    -- The worker running the claim performs the call (src/tools/toolGateway.ts); here only the token is checked.
    RETURN jsonb_build_object('ok', true, 'result', jsonb_build_object('taskId', t.id, 'claimVersion', t.claim_version, 'identity', k.identity));
  WHEN 'heartbeat' THEN
    UPDATE baton.pool_runs SET beat_at = now(), progress = coalesce(a->'progress', progress)
     WHERE task_id = t.id AND claim_version = t.claim_version;
    RETURN jsonb_build_object('ok', true, 'result', jsonb_build_object('taskId', t.id, 'claimVersion', t.claim_version, 'pooled', FOUND, 'at', baton.object_ts(now())));
  WHEN 'submit' THEN
    IF coalesce(a->>'revision', '') !~ '^[0-9a-f]{40}([0-9a-f]{24})?$' THEN
      PERFORM baton.agent_invalid(format('revision must be a full git commit id (40 or 64 hex digits), not %s', coalesce(a->>'revision', 'none')));
    END IF;
    SELECT * INTO r FROM baton.pool_runs WHERE task_id = t.id AND claim_version = t.claim_version FOR UPDATE;
    IF NOT FOUND THEN
      PERFORM baton.agent_invalid(format('task %s runs on a worker: its agent submits by committing and exiting; submit is for pooled runs', t.id));
    END IF;
    IF r.revision IS NOT NULL AND r.revision <> a->>'revision' THEN
      PERFORM baton.agent_invalid(format('claim version %s of task %s already submitted revision %s', t.claim_version, t.id, r.revision));
    END IF;
    IF r.revision IS NULL THEN
      UPDATE baton.pool_runs SET revision = a->>'revision', submitted_at = now(), beat_at = now()
       WHERE task_id = t.id AND claim_version = t.claim_version;
      PERFORM baton.event_append('task', t.id, 'agent_submitted', k.identity, t.claim_version, NULL, NULL,
        jsonb_build_object('revision', a->>'revision', 'pool', r.pool, 'token_id', k.id));
    END IF;
    RETURN jsonb_build_object('ok', true, 'result', jsonb_build_object('taskId', t.id, 'claimVersion', t.claim_version, 'revision', a->>'revision'));
  WHEN 'task.propose' THEN
    IF jsonb_typeof(a->'tasks') IS DISTINCT FROM 'array' THEN PERFORM baton.agent_invalid('tasks must be a list of subtasks'); END IF;
    v_outcome := baton.task_propose(t, k.identity, a->'tasks');
    IF v_outcome ? 'refusal' THEN RETURN baton.agent_refuse(k, p_operation, v_outcome->>'refusal', v_outcome->>'reason'); END IF;
    RETURN jsonb_build_object('ok', true, 'result', v_outcome);
  WHEN 'note.add', 'notes.list' THEN
    v_task := coalesce(a->>'taskId', k.task_id);
    -- Well-formed (taskId is optional, for run tokens): a token with no task of its own names no task (S7).
    IF v_task IS NULL THEN RAISE EXCEPTION 'token % has no task of its own: name one with taskId', k.id USING ERRCODE = 'BT002'; END IF;
    v_refusal := baton.agent_notes_refusal(k, p_operation, v_task);
    IF v_refusal IS NOT NULL THEN RETURN v_refusal; END IF;
    IF NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = v_task) THEN
      RAISE EXCEPTION 'task % does not exist', v_task USING ERRCODE = 'BT002';
    END IF;
    IF p_operation = 'notes.list' THEN RETURN jsonb_build_object('ok', true, 'result', baton.agent_notes(v_task)); END IF;
    IF length(coalesce(a->>'text', '')) NOT BETWEEN 1 AND 10000 THEN PERFORM baton.agent_invalid('text must be 1 to 10000 characters'); END IF;
    INSERT INTO baton.task_notes (task_id, author, claim_version, body) VALUES (v_task, k.identity, k.claim_version, a->>'text');
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_notes(v_task)->-1);
  WHEN 'pool.claim' THEN
    IF coalesce(a->>'pool', '') !~ '^[a-z0-9][a-z0-9_-]{0,62}$' THEN
      PERFORM baton.agent_invalid(format('pool must be 1 to 63 lowercase letters, digits, _ or -, not %s', coalesce(a->>'pool', 'none')));
    END IF;
    -- U11: a token limited to some pools takes work from those only; the refusal is recorded.
    IF k.pools IS NOT NULL AND NOT (a->>'pool' = ANY (k.pools)) THEN
      RETURN baton.agent_refuse(k, p_operation, 'not_granted',
        format('token %s of %s may take work from pool %s only, not from %s', k.id, k.identity, array_to_string(k.pools, ', '), a->>'pool'),
        jsonb_build_object('requested_pool', a->>'pool'));
    END IF;
    v_secret_sha256 := decode(coalesce(a->>'runSecretSha256', ''), 'hex');
    -- U11: the offer of the graph of the highest priority (policy.priority, 1 first); among graphs of one
    -- priority, of the graph with the fewest of this pool's runs taken and not submitted (graphs in
    -- turn, not first come first served); then the oldest.
    SELECT r2.* INTO r FROM baton.pool_runs r2 JOIN baton.tasks t2 ON t2.id = r2.task_id JOIN baton.graphs g2 ON g2.id = t2.graph_id
     WHERE r2.pool = a->>'pool' AND r2.agent IS NULL AND t2.status = 'running' AND t2.claim_version = r2.claim_version
     ORDER BY coalesce((g2.spec->'policy'->>'priority')::integer, 3),
              (SELECT count(*) FROM baton.pool_runs x JOIN baton.tasks y ON y.id = x.task_id
                WHERE x.pool = r2.pool AND x.agent IS NOT NULL AND x.revision IS NULL AND y.graph_id = t2.graph_id
                  AND y.status = 'running' AND y.claim_version = x.claim_version),
              r2.offered_at, r2.task_id
     FOR UPDATE OF r2 SKIP LOCKED LIMIT 1;
    IF NOT FOUND THEN RETURN jsonb_build_object('ok', true, 'result', NULL); END IF;
    t := baton.task_lock(r.task_id);
    -- Its claim may have moved since the offer was read (recovered and claimed again): no run then.
    IF t.status <> 'running' OR t.claim_version <> r.claim_version THEN RETURN jsonb_build_object('ok', true, 'result', NULL); END IF;
    -- The run token may read, write notes and use objects as its taker may (admin: all three), take no
    -- further runs, and lives no longer than the token that took it.
    k := baton.agent_token_insert(k.identity,
      ARRAY(SELECT s FROM unnest(CASE WHEN 'admin' = ANY (k.scopes) THEN ARRAY['read', 'notes', 'objects'] ELSE k.scopes || ARRAY['read'] END) s
             WHERE s IN ('read', 'notes', 'objects')),
      k.expires_at, v_secret_sha256, k.identity, t.id, r.claim_version, k.id);
    UPDATE baton.pool_runs SET agent = k.identity, taken_at = now(), beat_at = now(), token_id = k.id
     WHERE task_id = r.task_id AND claim_version = r.claim_version;
    PERFORM baton.event_append('task', t.id, 'taken_from_pool', k.identity, t.claim_version, NULL, NULL,
      jsonb_build_object('pool', r.pool, 'token_id', k.id, 'worker', r.offered_by));
    RETURN jsonb_build_object('ok', true, 'result', baton.agent_task_context(t, k) || jsonb_build_object('pool', r.pool, 'runTokenId', k.id));
  WHEN 'graphs.list', 'graph.show', 'task.show', 'events.list', 'objects.list', 'pools.list', 'tokens.list',
       'task.cancel', 'graph.cancel', 'task.rerun', 'graph.add', 'approvals.list', 'task.approve', 'task.reject', 'inbox.wait',
       'proposals.list', 'proposal.accept', 'proposal.decline' THEN
    RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'result', baton.agent_view(k, p_operation, a));
  WHEN 'object.log' THEN
    o := baton.object_show(a->>'key', k.identity);
    IF NOT o.ok THEN RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'object', to_jsonb(o)); END IF;
    RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'object', to_jsonb(o), 'result', coalesce((
      SELECT jsonb_agg(jsonb_build_object('seq', e.subject_seq, 'kind', e.kind, 'actor', e.actor, 'at', baton.object_ts(e.at),
               'fence', e.fence, 'version', e.version, 'reason', e.reason, 'details', e.details) ORDER BY e.subject_seq)
        FROM baton.object_read_events(a->>'key', coalesce((a->>'afterSeq')::integer, 0), coalesce((a->>'limit')::integer, 1000)) e), '[]'::jsonb));
  ELSE
    o := CASE p_operation
      WHEN 'object.create' THEN baton.object_create(a->>'key', k.identity, coalesce((a->>'silenceTimeoutMs')::integer, 30000),
                                  coalesce(a->>'defaultAccess', 'none'), a->>'content', a->>'contentRef')
      WHEN 'object.grant' THEN baton.object_grant(a->>'key', k.identity, a->>'grantee', a->>'access')
      WHEN 'object.reserve' THEN baton.object_reserve(a->>'key', k.identity, ARRAY(SELECT jsonb_array_elements_text(a->'paths')))
      WHEN 'object.show' THEN baton.object_show(a->>'key', k.identity)
      WHEN 'object.read' THEN baton.object_read(a->>'key', k.identity)
      WHEN 'object.check' THEN baton.object_check_view(a->>'key', k.identity)
      WHEN 'object.take' THEN baton.object_take(a->>'key', k.identity, a->>'reason')
      WHEN 'object.write' THEN baton.object_write(a->>'key', k.identity, (a->>'version')::bigint, (a->>'token')::bigint, a->>'content', a->>'contentRef')
      WHEN 'object.heartbeat' THEN baton.object_heartbeat(a->>'key', k.identity, (a->>'token')::bigint)
      WHEN 'object.release' THEN baton.object_release(a->>'key', k.identity, (a->>'token')::bigint, a->>'reason')
      WHEN 'object.offer' THEN baton.object_offer(a->>'key', k.identity, (a->>'token')::bigint, (a->>'version')::bigint, a->>'successor')
      WHEN 'object.accept' THEN baton.object_accept(a->>'key', k.identity, (a->>'version')::bigint)
      WHEN 'object.decline' THEN baton.object_decline(a->>'key', k.identity, a->>'reason')
      WHEN 'object.withdraw' THEN baton.object_withdraw(a->>'key', k.identity, (a->>'token')::bigint)
      WHEN 'object.suggest' THEN baton.object_suggest(a->>'key', k.identity, (a->>'baseVersion')::bigint, a->>'content', a->>'contentRef', a->>'note')
      WHEN 'object.approve' THEN baton.object_approve(a->>'key', k.identity, (a->>'token')::bigint, (a->>'suggestionId')::bigint)
    END;
    RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'object', to_jsonb(o));
  END CASE;
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_cancel(p_actor text, p_graph_id text, p_task_id text, p_reason text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_cancelled text[] := '{}';
  v_left jsonb := '[]'::jsonb;
  x record;
  v_task baton.tasks;
BEGIN
  IF p_graph_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = p_graph_id) THEN
    RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002';
  END IF;
  IF p_task_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id) THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  FOR x IN SELECT t.id FROM baton.tasks t WHERE t.id = p_task_id OR t.graph_id = p_graph_id ORDER BY t.id LOOP
    -- Locked, then read: a task finished meanwhile is left as it is.
    v_task := baton.task_lock(x.id);
    IF v_task.status IN ('verified', 'failed', 'cancelled') THEN
      v_left := v_left || jsonb_build_object('taskId', x.id, 'status', v_task.status);
    ELSE
      PERFORM baton.task_set_status(x.id, p_actor, 'cancelled', 'cancelled', p_reason);
      v_cancelled := v_cancelled || x.id;
    END IF;
  END LOOP;
  RETURN jsonb_build_object('cancelled', to_jsonb(v_cancelled), 'left', v_left);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_inbox(k baton.agent_tokens, a jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  v_after bigint := coalesce((a->>'afterId')::bigint, 0);
  v_limit integer := coalesce((a->>'limit')::integer, 100);
  v_items jsonb;
  v_count integer;
  v_last bigint;
BEGIN
  SELECT coalesce(jsonb_agg(baton.agent_view_events(ARRAY[x.e])->0 || jsonb_build_object('why', x.why) ORDER BY (x.e).id), '[]'::jsonb),
         count(*), max((x.e).id)
    INTO v_items, v_count, v_last
    FROM (SELECT r.e, r.why FROM (SELECT e, baton.inbox_reason(k, e) AS why FROM baton.events e WHERE e.id > v_after ORDER BY e.id OFFSET 0) r
           WHERE r.why IS NOT NULL LIMIT v_limit) x;
  IF v_count < v_limit THEN
    v_last := greatest(v_last, v_after,
      (SELECT max(e.id) FROM baton.events e WHERE e.id > v_after AND e.at < statement_timestamp() - interval '1 minute'));
  END IF;
  RETURN jsonb_build_object('items', v_items, 'lastId', coalesce(v_last, v_after));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_invalid(p_message text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'BT003';
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_notes(p_task_id text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object('id', n.id, 'author', n.author, 'claimVersion', n.claim_version,
           'body', n.body, 'at', baton.object_ts(n.at)) ORDER BY n.id), '[]'::jsonb)
    FROM baton.task_notes n WHERE n.task_id = p_task_id);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_notes_refusal(k baton.agent_tokens, p_operation text, p_task text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_writes boolean := p_operation = 'note.add';
  v_asked jsonb := jsonb_build_object('requested_task_id', p_task);
BEGIN
  IF k.task_id IS NOT NULL THEN
    IF p_task = k.task_id THEN RETURN NULL; END IF;
    IF v_writes THEN
      RETURN baton.agent_refuse(k, p_operation, 'not_granted',
        format('run token %s of %s writes notes of its own task %s only, not of task %s', k.id, k.identity, k.task_id, p_task), v_asked);
    END IF;
    IF EXISTS (SELECT 1 FROM baton.task_dependencies d WHERE d.task_id = k.task_id AND d.depends_on = p_task) THEN RETURN NULL; END IF;
    RETURN baton.agent_refuse(k, p_operation, 'not_granted',
      format('run token %s of %s reads the notes of its own task %s and of the upstream tasks it is pinned to only, not of task %s',
        k.id, k.identity, k.task_id, p_task), v_asked);
  END IF;
  IF k.note_graphs IS NULL THEN RETURN NULL; END IF;
  IF p_task = ANY (k.note_tasks) OR EXISTS (SELECT 1 FROM baton.tasks t WHERE t.id = p_task AND t.graph_id = ANY (k.note_graphs)) THEN
    RETURN NULL;
  END IF;
  RETURN baton.agent_refuse(k, p_operation, 'not_granted',
    format('token %s of %s may read and write the notes of %s only, not of task %s', k.id, k.identity,
      concat_ws(' and ', CASE WHEN cardinality(k.note_graphs) > 0 THEN 'graph ' || array_to_string(k.note_graphs, ', ') END,
                         CASE WHEN cardinality(k.note_tasks) > 0 THEN 'task ' || array_to_string(k.note_tasks, ', ') END), p_task), v_asked);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_operation_scope(p_operation text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT CASE
    WHEN p_operation IN ('whoami', 'notes.list', 'object.show', 'object.read', 'object.check', 'object.log', 'inbox.wait', 'objects.list') THEN 'read'
    WHEN p_operation = 'note.add' THEN 'notes'
    WHEN p_operation IN ('object.create', 'object.grant', 'object.reserve', 'object.take', 'object.write', 'object.heartbeat', 'object.release',
                         'object.offer', 'object.accept', 'object.decline', 'object.withdraw', 'object.suggest', 'object.approve') THEN 'objects'
    WHEN p_operation = 'pool.claim' THEN 'submit'
    WHEN p_operation IN ('context', 'heartbeat', 'submit', 'tool.call', 'task.propose') THEN 'run'
    WHEN p_operation IN ('graphs.list', 'graph.show', 'task.show', 'events.list', 'pools.list', 'proposals.list') THEN 'view'
    WHEN p_operation IN ('tokens.list', 'task.cancel', 'graph.cancel', 'task.rerun', 'graph.add', 'proposal.accept', 'proposal.decline') THEN 'admin'
    WHEN p_operation IN ('approvals.list', 'task.approve', 'task.reject') THEN 'approve'
  END
$function$
;

CREATE OR REPLACE FUNCTION baton.agent_operations(p_secret text, p_operations text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  k baton.agent_tokens := baton.agent_token_by_secret(p_secret);
  v_refusal jsonb := baton.agent_token_refusal(k, NULL);
BEGIN
  IF v_refusal IS NOT NULL THEN RETURN v_refusal; END IF;
  RETURN jsonb_build_object('ok', true, 'identity', k.identity, 'result', to_jsonb(ARRAY(
    SELECT o FROM unnest(p_operations) WITH ORDINALITY AS x (o, n)
     WHERE baton.agent_operation_scope(o) IS NOT NULL AND baton.agent_scope_denial(k, o, baton.agent_operation_scope(o)) IS NULL
     ORDER BY n)));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_refusals_summarise(p_address text, p_count integer, p_throttled integer, p_window_ms integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  IF length(coalesce(p_address, '')) NOT BETWEEN 1 AND 100 THEN PERFORM baton.agent_invalid('the address is 1 to 100 characters'); END IF;
  IF coalesce(p_count, 0) < 1 OR p_throttled IS NULL OR p_throttled NOT BETWEEN 0 AND p_count OR coalesce(p_window_ms, -1) < 0 THEN
    PERFORM baton.agent_invalid(format('a summary counts 1 or more calls, 0 to all of them throttled, over 0 ms or more (not %s, %s, %s)', p_count, p_throttled, p_window_ms));
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext('anonymous'));
  PERFORM baton.event_append('agent', 'anonymous', 'api_refused', 'anonymous', NULL, NULL,
    format('%s calls from %s refused within %s ms: %s with a token baton did not issue, %s throttled before the database',
      p_count, p_address, p_window_ms, p_count - p_throttled, p_throttled),
    jsonb_build_object('refusal', 'unauthenticated', 'address', p_address, 'count', p_count, 'throttled', p_throttled, 'windowMs', p_window_ms));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_refuse(p_token baton.agent_tokens, p_operation text, p_refusal text, p_reason text, p_details jsonb DEFAULT '{}'::jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_subject text := coalesce(p_token.identity, 'anonymous');
BEGIN
  -- Agent subjects have no row to lock; this keeps their event numbers gapless under concurrency.
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(v_subject));
  PERFORM baton.event_append('agent', v_subject, 'api_refused', v_subject, p_token.claim_version, NULL, p_reason,
    jsonb_build_object('operation', p_operation, 'refusal', p_refusal, 'token_id', p_token.id, 'task_id', p_token.task_id) || p_details);
  RETURN jsonb_build_object('ok', false, 'refusal', p_refusal, 'reason', p_reason);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_rerun(p_actor text, p_task_id text, p_reason text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM baton.task_set_status(p_task_id, p_actor, 'ready', 'rerun_requested', p_reason);
  RETURN jsonb_build_object('taskId', p_task_id, 'policy', (SELECT g.spec->'policy' FROM baton.tasks t JOIN baton.graphs g ON g.id = t.graph_id WHERE t.id = p_task_id));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_scope_denial(k baton.agent_tokens, p_operation text, p_scope text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT CASE
    WHEN p_scope = 'run' THEN CASE WHEN k.task_id IS NULL THEN 'not_a_run' END
    WHEN k.task_id IS NOT NULL AND p_operation = 'pool.claim' THEN 'not_a_run'
    WHEN (k.task_id IS NOT NULL OR k.note_graphs IS NOT NULL)
     AND p_operation IN ('graphs.list', 'graph.show', 'task.show', 'events.list', 'pools.list', 'tokens.list',
                         'task.cancel', 'graph.cancel', 'task.rerun', 'graph.add', 'approvals.list', 'task.approve', 'task.reject') THEN 'limited'
    -- admin has every scope; view includes read (who sees the whole deployment reads what an agent reads).
    WHEN NOT (p_scope = ANY (k.scopes) OR 'admin' = ANY (k.scopes) OR (p_scope = 'read' AND 'view' = ANY (k.scopes))) THEN 'scope'
  END
$function$
;

CREATE OR REPLACE FUNCTION baton.agent_session_serves_runs()
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  SELECT pg_has_role(session_user, 'baton_worker', 'MEMBER') OR pg_has_role(session_user, 'baton_owner', 'MEMBER')
$function$
;

CREATE OR REPLACE FUNCTION baton.agent_task_context(t baton.tasks, k baton.agent_tokens)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  SELECT jsonb_build_object(
    'identity', k.identity,
    'taskId', t.id, 'graphId', t.graph_id, 'key', t.key, 'claimVersion', k.claim_version,
    'description', t.spec->>'description', 'payload', t.spec->'payload', 'verify', t.spec->'verify',
    'repo', g.spec->>'repo', 'base', coalesce(g.spec->>'base', 'HEAD'),
    'upstream', coalesce((
      SELECT jsonb_agg(jsonb_build_object('key', u.key, 'taskId', u.id, 'revision', t.upstream_revisions->>u.key,
               'notes', baton.agent_notes(u.id)) ORDER BY u.key)
        FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on WHERE d.task_id = t.id), '[]'::jsonb),
    'notes', baton.agent_notes(t.id))
    FROM baton.graphs g WHERE g.id = t.graph_id
$function$
;

CREATE OR REPLACE FUNCTION baton.agent_token_by_secret(p_secret text)
 RETURNS baton.agent_tokens
 LANGUAGE sql
 STABLE
AS $function$
  SELECT * FROM baton.agent_tokens WHERE secret_sha256 = sha256(convert_to(coalesce(p_secret, ''), 'UTF8'))
$function$
;

CREATE OR REPLACE FUNCTION baton.agent_token_create(p_identity text, p_scopes text[], p_expires_in_ms bigint, p_secret_sha256 bytea, p_created_by text, p_note_graphs text[] DEFAULT NULL::text[], p_note_tasks text[] DEFAULT NULL::text[], p_pools text[] DEFAULT NULL::text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  k baton.agent_tokens;
  v_graphs text[];
  v_tasks text[];
  v_pools text[];
  v_missing text;
BEGIN
  IF p_expires_in_ms IS NOT NULL AND p_expires_in_ms < 1 THEN PERFORM baton.agent_invalid('a token lives at least 1 ms'); END IF;
  IF p_pools IS NOT NULL THEN
    v_pools := ARRAY(SELECT DISTINCT p FROM unnest(p_pools) p ORDER BY p);
    IF cardinality(v_pools) NOT BETWEEN 1 AND 50 OR EXISTS (SELECT 1 FROM unnest(v_pools) p WHERE p IS NULL OR p !~ '^[a-z0-9][a-z0-9_-]{0,62}$') THEN
      PERFORM baton.agent_invalid(format('pools are 1 to 50 names of 1 to 63 lowercase letters, digits, _ or -, not %s',
        coalesce(array_to_string(p_pools, ', ', 'NULL'), 'none')));
    END IF;
  END IF;
  PERFORM baton.object_check_actor(p_created_by, 'creator');
  IF p_note_graphs IS NOT NULL OR p_note_tasks IS NOT NULL THEN
    v_graphs := ARRAY(SELECT DISTINCT g FROM unnest(coalesce(p_note_graphs, '{}')) g ORDER BY g);
    v_tasks := ARRAY(SELECT DISTINCT t FROM unnest(coalesce(p_note_tasks, '{}')) t ORDER BY t);
    IF cardinality(v_graphs) + cardinality(v_tasks) = 0 THEN
      PERFORM baton.agent_invalid('a note grant names at least one graph or task (give none for a token that reaches every task''s notes)');
    END IF;
    -- A misspelt name would make a token that reaches nothing and says so to nobody.
    SELECT g INTO v_missing FROM unnest(v_graphs) g WHERE g IS NULL OR NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = g) LIMIT 1;
    IF FOUND THEN RAISE EXCEPTION 'graph % does not exist', coalesce(v_missing, 'NULL') USING ERRCODE = 'BT002'; END IF;
    SELECT t INTO v_missing FROM unnest(v_tasks) t WHERE t IS NULL OR NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = t) LIMIT 1;
    IF FOUND THEN RAISE EXCEPTION 'task % does not exist', coalesce(v_missing, 'NULL') USING ERRCODE = 'BT002'; END IF;
  END IF;
  k := baton.agent_token_insert(p_identity, p_scopes, now() + p_expires_in_ms * interval '1 millisecond', p_secret_sha256, p_created_by,
    p_note_graphs => v_graphs, p_note_tasks => v_tasks, p_pools => v_pools);
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(k.identity));
  PERFORM baton.event_append('agent', k.identity, 'token_created', p_created_by, NULL, NULL, NULL,
    jsonb_build_object('token_id', k.id, 'scopes', to_jsonb(k.scopes), 'expires_at', k.expires_at)
      || CASE WHEN v_graphs IS NOT NULL THEN jsonb_build_object('note_graphs', to_jsonb(v_graphs), 'note_tasks', to_jsonb(v_tasks)) ELSE '{}'::jsonb END
      || CASE WHEN v_pools IS NOT NULL THEN jsonb_build_object('pools', to_jsonb(v_pools)) ELSE '{}'::jsonb END);
  RETURN baton.agent_token_view(k);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_token_insert(p_identity text, p_scopes text[], p_expires_at timestamp with time zone, p_secret_sha256 bytea, p_created_by text, p_task_id text DEFAULT NULL::text, p_claim_version bigint DEFAULT NULL::bigint, p_parent_token_id text DEFAULT NULL::text, p_note_graphs text[] DEFAULT NULL::text[], p_note_tasks text[] DEFAULT NULL::text[], p_pools text[] DEFAULT NULL::text[])
 RETURNS baton.agent_tokens
 LANGUAGE plpgsql
AS $function$
DECLARE
  k baton.agent_tokens;
BEGIN
  PERFORM baton.object_check_actor(p_identity, 'identity');
  IF p_scopes IS NULL OR cardinality(p_scopes) = 0 OR NOT p_scopes <@ ARRAY['read', 'notes', 'objects', 'submit', 'view', 'approve', 'admin'] THEN
    PERFORM baton.agent_invalid(format('scopes must be some of read, notes, objects, submit, view, approve, admin, not %s', coalesce(array_to_string(p_scopes, ', '), 'none')));
  END IF;
  IF p_secret_sha256 IS NULL OR length(p_secret_sha256) <> 32 THEN PERFORM baton.agent_invalid('a token is stored as the 32-byte SHA-256 of its secret'); END IF;
  IF p_expires_at IS NOT NULL AND p_expires_at <= now() THEN
    PERFORM baton.agent_invalid(format('expiry %s is not in the future', baton.object_ts(p_expires_at)));
  END IF;
  INSERT INTO baton.agent_tokens (id, identity, scopes, secret_sha256, created_by, expires_at, task_id, claim_version, parent_token_id,
                                  note_graphs, note_tasks, pools)
  VALUES ('tok_' || substr(md5(random()::text || clock_timestamp()::text), 1, 16), p_identity,
          ARRAY(SELECT DISTINCT s FROM unnest(p_scopes) s ORDER BY s), p_secret_sha256, p_created_by, p_expires_at, p_task_id, p_claim_version,
          p_parent_token_id, p_note_graphs, p_note_tasks, p_pools)
  RETURNING * INTO k;
  RETURN k;
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_token_list()
 RETURNS SETOF jsonb
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT baton.agent_token_view(k) FROM baton.agent_tokens k WHERE k.task_id IS NULL ORDER BY k.created_at DESC, k.id
$function$
;

CREATE OR REPLACE FUNCTION baton.agent_token_refusal(k baton.agent_tokens, p_operation text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  parent baton.agent_tokens;
BEGIN
  IF k.id IS NULL THEN
    RETURN jsonb_build_object('ok', false, 'refusal', 'unauthenticated', 'reason', 'the token is not one baton issued');
  END IF;
  IF k.revoked_at IS NOT NULL THEN
    RETURN baton.agent_refuse(k, p_operation, 'revoked', format('token %s of %s was revoked at %s by %s%s',
      k.id, k.identity, baton.object_ts(k.revoked_at), k.revoked_by, coalesce(': ' || k.revoke_reason, '')));
  END IF;
  IF k.expires_at IS NOT NULL AND k.expires_at <= now() THEN
    RETURN baton.agent_refuse(k, p_operation, 'expired', format('token %s of %s expired at %s', k.id, k.identity, baton.object_ts(k.expires_at)));
  END IF;
  -- A pooled run's token is good only while the token that took the run is.
  SELECT * INTO parent FROM baton.agent_tokens WHERE id = k.parent_token_id;
  IF FOUND AND parent.revoked_at IS NOT NULL THEN
    RETURN baton.agent_refuse(k, p_operation, 'revoked', format('run token %s was taken with token %s of %s, revoked at %s by %s%s',
      k.id, parent.id, parent.identity, baton.object_ts(parent.revoked_at), parent.revoked_by, coalesce(': ' || parent.revoke_reason, '')));
  END IF;
  IF FOUND AND parent.expires_at IS NOT NULL AND parent.expires_at <= now() THEN
    RETURN baton.agent_refuse(k, p_operation, 'expired', format('run token %s was taken with token %s of %s, expired at %s',
      k.id, parent.id, parent.identity, baton.object_ts(parent.expires_at)));
  END IF;
  -- A command run's token (a run token no pool.claim made, so without a parent) is its worker's to
  -- serve; a pooled run's is meant for `baton serve` and is good there.
  IF k.task_id IS NOT NULL AND k.parent_token_id IS NULL AND NOT baton.agent_session_serves_runs() THEN
    RETURN baton.agent_refuse(k, p_operation, 'outside_run', format(
      'token %s is the run token of claim version %s of task %s: it works only on its run''s own endpoint ($BATON_URL inside the run), not on this server',
      k.id, k.claim_version, k.task_id));
  END IF;
  RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_token_revoke(p_id text, p_actor text, p_reason text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  k baton.agent_tokens;
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  UPDATE baton.agent_tokens SET revoked_at = now(), revoked_by = p_actor, revoke_reason = p_reason
   WHERE id = p_id AND revoked_at IS NULL RETURNING * INTO k;
  IF NOT FOUND THEN
    SELECT * INTO k FROM baton.agent_tokens WHERE id = p_id;
    IF NOT FOUND THEN RAISE EXCEPTION 'token % does not exist', p_id USING ERRCODE = 'BT002'; END IF;
    RETURN baton.agent_token_view(k); -- already revoked: nothing changes
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('baton.agent_events'), hashtext(k.identity));
  PERFORM baton.event_append('agent', k.identity, 'token_revoked', p_actor, NULL, NULL, p_reason, jsonb_build_object('token_id', k.id));
  RETURN baton.agent_token_view(k);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_token_view(k baton.agent_tokens)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT jsonb_build_object('id', k.id, 'identity', k.identity, 'scopes', to_jsonb(k.scopes), 'createdBy', k.created_by,
    'createdAt', baton.object_ts(k.created_at), 'expiresAt', baton.object_ts(k.expires_at),
    'revokedAt', baton.object_ts(k.revoked_at), 'revokedBy', k.revoked_by, 'lastUsedAt', baton.object_ts(k.last_used_at),
    'taskId', k.task_id, 'claimVersion', k.claim_version)
    -- A run token's notes are its run's (agent_notes_refusal); only tokens people made have grants.
    || CASE WHEN k.task_id IS NULL THEN jsonb_build_object('noteGrants', CASE WHEN k.note_graphs IS NOT NULL
         THEN jsonb_build_object('graphs', to_jsonb(k.note_graphs), 'tasks', to_jsonb(k.note_tasks)) END,
         'pools', to_jsonb(k.pools)) ELSE '{}'::jsonb END
$function$
;

CREATE OR REPLACE FUNCTION baton.agent_view(k baton.agent_tokens, p_operation text, a jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_reason text := a->>'reason';
BEGIN
  IF p_operation IN ('task.cancel', 'graph.cancel', 'task.rerun') AND length(coalesce(v_reason, '')) NOT BETWEEN 1 AND 2000 THEN
    PERFORM baton.agent_invalid(format('%s needs a reason of 1 to 2000 characters (it is recorded with the change)', p_operation));
  END IF;
  RETURN CASE p_operation
    WHEN 'graphs.list' THEN baton.agent_view_graphs(a)
    WHEN 'graph.show' THEN baton.agent_view_graph(a->>'graphId')
    WHEN 'task.show' THEN baton.agent_view_task(a->>'taskId')
    WHEN 'events.list' THEN baton.agent_view_event_log(k, a)
    WHEN 'objects.list' THEN baton.agent_view_objects(k, a)
    WHEN 'pools.list' THEN baton.agent_view_pools()
    WHEN 'tokens.list' THEN baton.agent_view_tokens()
    WHEN 'task.cancel' THEN baton.agent_cancel(k.identity, NULL, a->>'taskId', v_reason)
    WHEN 'graph.cancel' THEN baton.agent_cancel(k.identity, a->>'graphId', NULL, v_reason)
    WHEN 'task.rerun' THEN baton.agent_rerun(k.identity, a->>'taskId', v_reason)
    -- The tasks come validated with the graph's own by the API (src/api/dispatch.ts), as {key, spec, dependsOn}.
    WHEN 'graph.add' THEN jsonb_build_object('added', baton.graph_add_tasks_json(a->>'graphId', k.identity, a->'tasks'),
                            'policy', (SELECT g.spec->'policy' FROM baton.graphs g WHERE g.id = a->>'graphId'))
    WHEN 'approvals.list' THEN baton.approval_list()
    WHEN 'inbox.wait' THEN baton.agent_inbox(k, a)
    WHEN 'task.approve' THEN baton.agent_approval_decide(k.identity, a->>'taskId', 'approved', v_reason)
    WHEN 'task.reject' THEN baton.agent_approval_decide(k.identity, a->>'taskId', 'rejected', v_reason)
    WHEN 'proposals.list' THEN baton.proposal_list(a->>'graphId', coalesce((a->>'all')::boolean, false))
    WHEN 'proposal.accept' THEN baton.proposal_decide((a->>'proposalId')::bigint, k.identity, true, v_reason)
    WHEN 'proposal.decline' THEN baton.proposal_decide((a->>'proposalId')::bigint, k.identity, false, v_reason)
  END;
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_event_log(k baton.agent_tokens, a jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  v_graph text := a->>'graphId';
  v_limit integer := coalesce((a->>'limit')::integer, 500);
  v_events baton.events[];
BEGIN
  -- An unknown graph is said at once, not waited on.
  IF v_graph IS NOT NULL AND NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = v_graph) THEN
    RAISE EXCEPTION 'graph % does not exist', v_graph USING ERRCODE = 'BT002';
  END IF;
  IF a->'afterId' IS NULL OR jsonb_typeof(a->'afterId') = 'null' THEN
    RETURN jsonb_build_object('events', '[]'::jsonb, 'lastId', (SELECT coalesce(max(id), 0) FROM baton.events));
  END IF;
  v_events := ARRAY(SELECT e FROM baton.events e WHERE e.id > (a->>'afterId')::bigint
    AND (v_graph IS NULL OR (e.subject_kind = 'graph' AND e.subject_id = v_graph)
         OR (e.subject_kind = 'task' AND e.subject_id LIKE baton.task_id_pattern_of(v_graph)))
    AND CASE e.subject_kind
          WHEN 'object' THEN 'admin' = ANY (k.scopes)
            OR EXISTS (SELECT 1 FROM baton.objects o WHERE o.key = e.subject_id AND baton.object_may(o, k.identity, 'view'))
          WHEN 'agent' THEN 'admin' = ANY (k.scopes)
          ELSE true END
    ORDER BY e.id LIMIT v_limit);
  RETURN jsonb_build_object('events', baton.agent_view_events(v_events),
    'lastId', coalesce((SELECT max(x.id) FROM unnest(v_events) x), (a->>'afterId')::bigint));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_events(p_events baton.events[])
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object('id', e.id, 'subjectKind', e.subject_kind, 'subjectId', e.subject_id,
           'seq', e.subject_seq, 'kind', e.kind, 'actor', e.actor, 'at', baton.object_ts(e.at), 'fence', e.fence,
           'version', e.version, 'reason', e.reason, 'details', e.details) ORDER BY e.id), '[]'::jsonb)
    FROM unnest(p_events) e);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_graph(p_graph_id text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  g baton.graphs;
BEGIN
  SELECT * INTO g FROM baton.graphs WHERE id = p_graph_id;
  IF NOT FOUND THEN RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002'; END IF;
  RETURN jsonb_build_object('id', g.id, 'submittedBy', g.submitted_by, 'submittedAt', baton.object_ts(g.submitted_at),
    'repo', g.repo, 'base', g.base, 'policy', g.spec->'policy',
    'tasks', (SELECT coalesce(jsonb_agg(baton.agent_view_task_summary(v) ORDER BY v.key), '[]'::jsonb)
                FROM baton.tasks t, baton.task_view(t) v WHERE t.graph_id = p_graph_id));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_graphs(a jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object('id', g.id, 'submittedBy', g.submitted_by, 'submittedAt', baton.object_ts(g.submitted_at),
           'tasks', g.tasks, 'counts', g.counts, 'state', g.state) ORDER BY g.submitted_at DESC, g.id DESC), '[]'::jsonb)
    FROM baton.graph_list(a->>'state', make_interval(secs => (a->>'submittedWithinSeconds')::double precision),
                          coalesce((a->>'limit')::integer, 100), nullif(a->>'search', '')) g);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_objects(k baton.agent_tokens, a jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  v_key text := a->>'key';
  v_objects jsonb;
BEGIN
  SELECT coalesce(jsonb_agg(jsonb_build_object('key', o.key, 'version', o.version, 'token', o.token, 'holder', o.holder,
           'holderSince', baton.object_ts(o.holder_since), 'heartbeatAt', baton.object_ts(o.holder_heartbeat_at),
           'silenceTimeoutMs', o.silence_timeout_ms, 'silent', baton.object_is_silent(o, f.id IS NOT NULL),
           'defaultAccess', o.default_access, 'createdBy', o.created_by, 'updatedAt', baton.object_ts(o.updated_at), 'paths', to_jsonb(o.paths),
           'offer', CASE WHEN f.id IS NOT NULL THEN jsonb_build_object('id', f.id, 'giver', f.giver, 'successor', f.successor,
                      'version', f.version, 'token', f.token, 'offeredAt', baton.object_ts(f.offered_at)) END,
           'suggestions', (SELECT coalesce(jsonb_agg(jsonb_build_object('id', s.id, 'suggestedBy', s.suggested_by, 'baseVersion', s.base_version,
                             'note', s.note, 'createdAt', baton.object_ts(s.created_at)) ORDER BY s.id), '[]'::jsonb)
                             FROM baton.object_suggestions s WHERE s.object_key = o.key AND s.status = 'open'))
           ORDER BY o.key), '[]'::jsonb)
    INTO v_objects
    FROM baton.objects o LEFT JOIN baton.object_offers f ON f.object_key = o.key AND f.status = 'open'
   WHERE (v_key IS NULL OR o.key = v_key) AND ('admin' = ANY (k.scopes) OR baton.object_may(o, k.identity, 'view'));
  IF v_key IS NULL THEN RETURN jsonb_build_object('objects', v_objects); END IF;
  -- One the token may not view answers as one that does not exist: it learns nothing of it.
  IF jsonb_array_length(v_objects) = 0 THEN RAISE EXCEPTION 'object % does not exist', v_key USING ERRCODE = 'BT002'; END IF;
  RETURN jsonb_build_object('objects', v_objects, 'log', baton.agent_view_events(ARRAY(
    SELECT e FROM baton.events e WHERE e.subject_kind = 'object' AND e.subject_id = v_key ORDER BY e.id)));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_pools()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(p ORDER BY p->>'pool'), '[]'::jsonb) FROM (
    SELECT jsonb_build_object('pool', r.pool,
      'maxRunning', (SELECT l.max_running FROM baton.pool_limits l WHERE l.pool = r.pool),
      'waiting', (SELECT coalesce(jsonb_agg(jsonb_build_object('taskId', w.task_id, 'claimVersion', w.claim_version,
                    'offeredBy', w.offered_by, 'offeredAt', baton.object_ts(w.offered_at)) ORDER BY w.offered_at), '[]'::jsonb)
                    FROM baton.pool_runs w JOIN baton.tasks t ON t.id = w.task_id
                   WHERE w.pool = r.pool AND w.agent IS NULL AND t.status = 'running' AND t.claim_version = w.claim_version),
      'running', (SELECT coalesce(jsonb_agg(jsonb_build_object('taskId', w.task_id, 'claimVersion', w.claim_version, 'agent', w.agent,
                    'tokenId', w.token_id, 'takenAt', baton.object_ts(w.taken_at), 'beatAt', baton.object_ts(w.beat_at),
                    'submitted', w.revision IS NOT NULL) ORDER BY w.taken_at), '[]'::jsonb)
                    FROM baton.pool_runs w JOIN baton.tasks t ON t.id = w.task_id
                   WHERE w.pool = r.pool AND w.agent IS NOT NULL AND t.status = 'running' AND t.claim_version = w.claim_version),
      'takers', (SELECT coalesce(jsonb_agg(jsonb_build_object('agent', x.agent, 'runs', x.runs, 'lastTakenAt', baton.object_ts(x.last)) ORDER BY x.last DESC), '[]'::jsonb)
                   FROM (SELECT w.agent, count(*)::integer AS runs, max(w.taken_at) AS last FROM baton.pool_runs w
                          WHERE w.pool = r.pool AND w.taken_at > now() - interval '1 day' GROUP BY w.agent) x)) AS p
      FROM (SELECT pool FROM baton.pool_runs UNION SELECT pool FROM baton.pool_limits) r) pools);
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_task(p_task_id text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  v baton.task_view;
BEGIN
  SELECT x.* INTO v FROM baton.tasks t, baton.task_view(t) x WHERE t.id = p_task_id;
  IF NOT FOUND THEN RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002'; END IF;
  RETURN baton.agent_view_task_summary(v) || jsonb_build_object('graphId', v.graph_id, 'spec', v.spec,
    'claimedAt', baton.object_ts(v.claimed_at), 'leaseExpiresAt', baton.object_ts(v.lease_expires_at), 'progress', v.progress,
    'artifact', v.artifact, 'verifiedRevision', v.verified_revision, 'upstreamRevisions', v.upstream_revisions,
    'verifications', (SELECT coalesce(jsonb_agg(jsonb_build_object('id', x.id, 'claimVersion', x.claim_version, 'revision', x.revision,
         'command', x.command, 'exitCode', x.exit_code, 'passed', x.passed, 'verifier', x.verifier, 'at', baton.object_ts(x.at),
         'outputDigest', x.output_digest, 'outputTail', right(x.output_tail, 4000)) ORDER BY x.id), '[]'::jsonb)
       FROM baton.verifications x WHERE x.task_id = p_task_id),
    'notes', baton.agent_notes(p_task_id),
    'events', baton.agent_view_events(ARRAY(SELECT e FROM baton.events e WHERE e.subject_kind = 'task' AND e.subject_id = p_task_id ORDER BY e.id)),
    'toolCalls', (SELECT coalesce(jsonb_agg(jsonb_build_object('step', c.step, 'tool', c.tool, 'status', c.status,
         'reconciled', c.status LIKE 'reconciled_%', 'owner', c.owner, 'claimVersion', c.claim_version, 'attempts', c.attempts,
         'result', c.result, 'error', c.error, 'createdAt', baton.object_ts(c.created_at), 'updatedAt', baton.object_ts(c.updated_at))
         ORDER BY c.created_at, c.step), '[]'::jsonb)
       FROM baton.tool_calls c WHERE c.task_id = p_task_id),
    'poolRuns', (SELECT coalesce(jsonb_agg(jsonb_build_object('claimVersion', r.claim_version, 'pool', r.pool, 'offeredBy', r.offered_by,
         'offeredAt', baton.object_ts(r.offered_at), 'agent', r.agent, 'takenAt', baton.object_ts(r.taken_at),
         'beatAt', baton.object_ts(r.beat_at), 'revision', r.revision) ORDER BY r.claim_version), '[]'::jsonb)
       FROM baton.pool_runs r WHERE r.task_id = p_task_id),
    'approvals', (SELECT coalesce(jsonb_agg(baton.approval_view(a) ORDER BY a.id), '[]'::jsonb) FROM baton.approvals a WHERE a.task_id = p_task_id));
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_task_summary(t baton.task_view)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN jsonb_build_object('id', t.id, 'key', t.key, 'status', t.status, 'owner', t.owner, 'claimVersion', t.claim_version,
    'attempts', t.attempts, 'dependsOn', to_jsonb(t.depends_on), 'leaseExpired', t.lease_expired,
    'description', t.spec->>'description', 'pool', t.spec->'run'->>'pool');
END $function$
;

CREATE OR REPLACE FUNCTION baton.agent_view_tokens()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN jsonb_build_object(
    'tokens', (SELECT coalesce(jsonb_agg(baton.agent_token_view(k) ORDER BY k.created_at, k.id), '[]'::jsonb)
                 FROM baton.agent_tokens k WHERE k.task_id IS NULL),
    'liveRunTokens', (SELECT count(*) FROM baton.agent_tokens k JOIN baton.tasks t ON t.id = k.task_id
                       WHERE k.revoked_at IS NULL AND t.status = 'running' AND t.claim_version = k.claim_version));
END $function$
;

CREATE OR REPLACE FUNCTION baton.approval_decide(p_task_id text, p_actor text, p_decision text, p_reason text)
 RETURNS TABLE(status text, released text[], staled text[])
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  t baton.tasks := baton.task_lock(p_task_id);
  a baton.approvals;
  v_reason text := nullif(btrim(coalesce(p_reason, '')), '');
  v_kind text;
  r record;
BEGIN
  IF p_decision IS NULL OR p_decision NOT IN ('approved', 'rejected', 'timed_out') THEN
    RAISE EXCEPTION 'a decision is approved, rejected or timed_out, not %', coalesce(p_decision, 'none') USING ERRCODE = 'BT003';
  END IF;
  IF length(v_reason) > 2000 OR (p_decision = 'rejected' AND v_reason IS NULL) THEN
    RAISE EXCEPTION 'a % needs a reason of 1 to 2000 characters (it is recorded, and the agent reads it)',
      CASE WHEN p_decision = 'rejected' THEN 'rejection' ELSE 'decision' END USING ERRCODE = 'BT003';
  END IF;
  SELECT * INTO a FROM baton.approvals x WHERE x.task_id = p_task_id AND x.decision IS NULL FOR UPDATE;
  IF t.status <> 'awaiting_approval' OR a.id IS NULL THEN
    RAISE EXCEPTION 'task % is not awaiting approval: it is %', p_task_id, t.status USING ERRCODE = 'BT001';
  END IF;
  IF p_decision = 'timed_out' AND (a.due_at IS NULL OR a.due_at > now()) THEN
    RAISE EXCEPTION 'task %: its approval is not due yet (due %)', p_task_id, coalesce(a.due_at::text, 'never') USING ERRCODE = 'BT001';
  END IF;
  -- Its owner, the agent its spec names, and whoever took its run from a pool (task_agent_identity).
  IF p_decision <> 'timed_out' AND p_actor IN (t.owner, coalesce(t.spec->'run'->>'agent', t.id), baton.task_agent_identity(t)) THEN
    RAISE EXCEPTION 'task %: % produced the artifact and may not approve or reject it', p_task_id, p_actor USING ERRCODE = 'BT003';
  END IF;
  IF p_decision = 'timed_out' THEN
    v_reason := format('nobody decided by %s: the approval policy says %s', baton.object_ts(a.due_at),
      a.on_timeout);
  END IF;
  UPDATE baton.approvals SET decision = p_decision, decided_by = p_actor, decided_at = now(), reason = v_reason WHERE id = a.id;
  v_kind := CASE p_decision WHEN 'approved' THEN 'approved' WHEN 'rejected' THEN 'approval_refused' ELSE 'approval_timed_out' END;
  PERFORM baton.event_append('task', p_task_id, v_kind, p_actor, t.claim_version, NULL, v_reason,
    jsonb_build_object('revision', a.revision, 'approvalId', a.id));
  UPDATE baton.tasks SET status = 'verifying', verifier = p_actor WHERE id = p_task_id;
  SELECT * INTO r FROM baton.verification_record(p_task_id, p_actor, t.claim_version, a.revision,
    CASE WHEN p_decision = 'timed_out' THEN 'baton: approval wait' ELSE format('baton: approval by %s', p_actor) END,
    CASE WHEN p_decision = 'approved' THEN 0 ELSE 1 END,
    'sha256:' || encode(sha256(convert_to(coalesce(v_reason, ''), 'UTF8')), 'hex'), v_reason);
  IF p_decision = 'timed_out' AND a.on_timeout = 'fail' THEN
    PERFORM baton.task_set_status(p_task_id, p_actor, 'failed', 'failed', v_reason);
    r.status := 'failed';
  END IF;
  RETURN QUERY SELECT r.status, r.released, r.staled;
END $function$
;

CREATE OR REPLACE FUNCTION baton.approval_due_in_ms(p_task_id text)
 RETURNS bigint
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  RETURN (SELECT floor(extract(epoch FROM a.due_at - now()) * 1000)::bigint FROM baton.approvals a
           WHERE a.task_id = p_task_id AND a.decision IS NULL);
END $function$
;

CREATE OR REPLACE FUNCTION baton.approval_list()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(baton.approval_view(a)
                   || jsonb_build_object('graphId', t.graph_id, 'key', t.key, 'description', t.spec->>'description')
                   ORDER BY a.requested_at, a.id), '[]'::jsonb)
            FROM baton.approvals a JOIN baton.tasks t ON t.id = a.task_id WHERE a.decision IS NULL);
END $function$
;

CREATE OR REPLACE FUNCTION baton.approval_request(p_task_id text, p_verifier text, p_claim_version bigint, p_revision text, p_command text, p_output_digest text, p_output_tail text)
 RETURNS TABLE(status text, released text[], staled text[])
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  t baton.tasks := baton.verification_lock(p_task_id, p_verifier, p_claim_version, p_revision);
  v_approval jsonb := t.spec->'verify'->'approval';
  v_due timestamptz;
  v_on_timeout text;
BEGIN
  IF jsonb_typeof(v_approval) IS DISTINCT FROM 'object' THEN
    RAISE EXCEPTION 'task %: its verify names no approval', p_task_id USING ERRCODE = 'BT003';
  END IF;
  IF EXISTS (SELECT 1 FROM baton.task_list_superseded_pins(p_task_id)) THEN
    RETURN QUERY SELECT * FROM baton.verification_record(p_task_id, p_verifier, p_claim_version, p_revision,
      coalesce(p_command, 'baton: artifact check'), 0, p_output_digest, p_output_tail);
    RETURN;
  END IF;
  IF p_command IS NOT NULL THEN
    INSERT INTO baton.verifications (task_id, claim_version, revision, command, exit_code, output_digest, output_tail, verifier, passed)
      VALUES (p_task_id, p_claim_version, p_revision, p_command, 0, p_output_digest, coalesce(p_output_tail, ''), p_verifier, true);
  END IF;
  v_due := now() + (v_approval->>'timeoutMs')::bigint * interval '1 millisecond';
  v_on_timeout := coalesce(v_approval->>'onTimeout', 'reject');
  INSERT INTO baton.approvals (task_id, claim_version, revision, requested_by, due_at, on_timeout)
    VALUES (p_task_id, p_claim_version, p_revision, p_verifier, v_due, v_on_timeout);
  UPDATE baton.tasks SET status = 'awaiting_approval' WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, 'approval_requested', p_verifier, p_claim_version, NULL,
    format('%s passed: waiting for a person with the approve scope%s', coalesce(p_command, 'the artifact check'),
      coalesce(format(' until %s, then %s', baton.object_ts(v_due), v_on_timeout), '')),
    jsonb_build_object('revision', p_revision, 'dueAt', v_due, 'onTimeout', v_on_timeout));
  RETURN QUERY SELECT 'awaiting_approval'::text, '{}'::text[], '{}'::text[];
END $function$
;

CREATE OR REPLACE FUNCTION baton.approval_view(a baton.approvals)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN jsonb_build_object('id', a.id, 'taskId', a.task_id, 'claimVersion', a.claim_version, 'revision', a.revision,
    'requestedBy', a.requested_by, 'requestedAt', baton.object_ts(a.requested_at), 'dueAt', baton.object_ts(a.due_at),
    'onTimeout', a.on_timeout, 'decision', a.decision, 'decidedBy', a.decided_by, 'decidedAt', baton.object_ts(a.decided_at),
    'reason', a.reason);
END $function$
;

CREATE OR REPLACE FUNCTION baton.archive_read(p_graph_id text)
 RETURNS SETOF baton.archives
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT * FROM baton.archives WHERE graph_id = p_graph_id
$function$
;

CREATE OR REPLACE FUNCTION baton.claim_accept_write(p_task_id text)
 RETURNS baton.fenced_result
 LANGUAGE sql
AS $function$
  SELECT true, status, owner, claim_version, lease_expires_at FROM baton.tasks WHERE id = p_task_id
$function$
;

CREATE OR REPLACE FUNCTION baton.claim_check_lease(p_lease_ms integer)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF p_lease_ms IS NULL OR p_lease_ms < 1 THEN
    RAISE EXCEPTION 'lease must be a positive number of milliseconds, not %', p_lease_ms USING ERRCODE = 'BT003';
  END IF;
END $function$
;

CREATE OR REPLACE FUNCTION baton.claim_fence(p_task_id text, p_owner text, p_claim_version bigint)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM 1 FROM baton.tasks t WHERE t.id = p_task_id AND baton.claim_holds(t, p_owner, p_claim_version) FOR UPDATE OF t;
  RETURN FOUND;
END $function$
;

CREATE OR REPLACE FUNCTION baton.claim_holds(t baton.tasks, p_owner text, p_claim_version bigint)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT t.owner = p_owner AND t.claim_version = p_claim_version AND t.status = 'running'
$function$
;

CREATE OR REPLACE FUNCTION baton.claim_refuse_stale_write(p_task_id text, p_owner text, p_claim_version bigint, p_action text)
 RETURNS baton.fenced_result
 LANGUAGE plpgsql
AS $function$
DECLARE
  t baton.tasks;
BEGIN
  t := baton.task_lock(p_task_id);
  -- The event's fence is the stale claim version the write carried; the current one is in the reason.
  PERFORM baton.event_append('task', p_task_id, 'stale_write_refused', p_owner, p_claim_version, NULL,
    format('%s by %s at claim version %s refused: task is %s, owner %s, claim version %s',
           p_action, p_owner, p_claim_version, t.status, coalesce(t.owner, 'none'), t.claim_version),
    jsonb_build_object('action', p_action, 'current_claim_version', t.claim_version));
  RETURN ROW(false, t.status, t.owner, t.claim_version, t.lease_expires_at)::baton.fenced_result;
END $function$
;

CREATE OR REPLACE FUNCTION baton.claim_release(p_task_id text, p_claim_version bigint, p_actor text, p_kind text, p_reason text, p_details jsonb)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.claim_take(p_task_id text, p_owner text, p_lease_ms integer, p_store_claim boolean)
 RETURNS baton.claim
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.claim_within_limits(p_task_id text, p_limits jsonb)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.claims_silent(p_limit integer, p_within_ms integer)
 RETURNS TABLE(task_id text, owner text, claim_version bigint, lease_ms integer)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT t.id, t.owner, t.claim_version,
         (extract(epoch FROM t.lease_expires_at - t.heartbeat_at) * 1000)::integer
    FROM baton.tasks t
   WHERE t.status = 'running' AND NOT t.store_claim AND t.lease_expires_at < now()
     AND t.lease_expires_at > now() - p_within_ms * interval '1 millisecond'
   ORDER BY t.lease_expires_at DESC, t.id
   LIMIT p_limit
$function$
;

CREATE OR REPLACE FUNCTION baton.event_append(p_subject_kind text, p_subject_id text, p_kind text, p_actor text, p_fence bigint DEFAULT NULL::bigint, p_version bigint DEFAULT NULL::bigint, p_reason text DEFAULT NULL::text, p_details jsonb DEFAULT '{}'::jsonb)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_seq integer;
  v_id bigint;
BEGIN
  -- The transaction takes its id before the event takes its number, so a reader of the log that
  -- sees a snapshot without this transaction knows its events are yet to come (src/observability/eventLogReader.ts).
  PERFORM pg_current_xact_id();
  SELECT coalesce(max(subject_seq), 0) + 1 INTO v_seq
    FROM baton.events WHERE subject_kind = p_subject_kind AND subject_id = p_subject_id;
  INSERT INTO baton.events (subject_kind, subject_id, subject_seq, kind, actor, fence, version, reason, details)
    VALUES (p_subject_kind, p_subject_id, v_seq, p_kind, p_actor, p_fence, p_version, p_reason, coalesce(p_details, '{}'::jsonb))
    RETURNING id INTO v_id;
  RETURN v_id;
END $function$
;

CREATE OR REPLACE FUNCTION baton.event_read(p_subject_kind text, p_subject_id text, p_after_id bigint, p_include_graph_tasks boolean)
 RETURNS SETOF baton.event_view
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
$function$
;

CREATE OR REPLACE FUNCTION baton.event_refuse_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_OP = 'DELETE' AND baton.retention_moving() THEN RETURN NULL; END IF;
  RAISE EXCEPTION 'baton.events is append-only: % refused', TG_OP USING ERRCODE = 'BT004';
END $function$
;

CREATE OR REPLACE FUNCTION baton.graph_add_tasks(p_graph_id text, p_actor text, p_tasks jsonb, p_details jsonb DEFAULT '{}'::jsonb)
 RETURNS TABLE(task_id text, status text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
  v_policy jsonb;
  v_keys text[];
  v_problem text;
  v_id text;
  v_pins jsonb;
BEGIN
  SELECT g.spec->'policy' INTO v_policy FROM baton.graphs g WHERE g.id = p_graph_id FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002'; END IF;
  IF EXISTS (SELECT 1 FROM baton.archives a WHERE a.graph_id = p_graph_id) THEN
    RAISE EXCEPTION 'graph % was archived: nothing is added to it', p_graph_id USING ERRCODE = 'BT001';
  END IF;
  v_keys := ARRAY(SELECT t->>'key' FROM jsonb_array_elements(p_tasks) t);
  v_problem := baton.graph_addition_problem(p_graph_id, p_tasks);
  IF v_problem IS NOT NULL THEN RAISE EXCEPTION '%: nothing was added', v_problem USING ERRCODE = 'BT003'; END IF;
  PERFORM baton.graph_insert_tasks(p_graph_id, p_actor, v_policy, p_tasks, jsonb_build_object('added', true) || p_details);
  -- Those whose dependencies are all verified already are released now, as a verification would.
  FOR v_id IN SELECT baton.task_id_of(p_graph_id, k) FROM unnest(v_keys) k ORDER BY 1 LOOP
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM baton.task_dependencies x WHERE x.task_id = v_id)
      OR EXISTS (SELECT 1 FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on
                  WHERE x.task_id = v_id AND u.status <> 'verified');
    SELECT jsonb_object_agg(u.key, u.verified_revision) INTO v_pins
      FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = v_id;
    UPDATE baton.tasks SET status = 'ready', upstream_revisions = v_pins WHERE id = v_id;
    PERFORM baton.event_append('task', v_id, 'released', p_actor, 0, NULL, 'added with all dependencies verified',
      jsonb_build_object('upstream_revisions', v_pins));
  END LOOP;
  PERFORM baton.event_append('graph', p_graph_id, 'tasks_added', p_actor, NULL, NULL,
    format('%s task(s) added: %s', cardinality(v_keys), array_to_string(v_keys, ', ')), jsonb_build_object('keys', to_jsonb(v_keys)) || p_details);
  RETURN QUERY SELECT t.id, t.status FROM baton.tasks t WHERE t.id IN (SELECT baton.task_id_of(p_graph_id, k) FROM unnest(v_keys) k) ORDER BY t.id;
END $function$
;

CREATE OR REPLACE FUNCTION baton.graph_add_tasks_json(p_graph_id text, p_actor text, p_tasks jsonb, p_details jsonb DEFAULT '{}'::jsonb)
 RETURNS jsonb
 LANGUAGE sql
AS $function$
  SELECT coalesce(jsonb_agg(jsonb_build_object('taskId', x.task_id, 'status', x.status) ORDER BY x.task_id), '[]'::jsonb)
    FROM baton.graph_add_tasks(p_graph_id, p_actor, p_tasks, p_details) x
$function$
;

CREATE OR REPLACE FUNCTION baton.graph_addition_problem(p_graph_id text, p_tasks jsonb)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
  v_keys text[] := ARRAY(SELECT t->>'key' FROM jsonb_array_elements(p_tasks) t);
  v_found text;
BEGIN
  IF cardinality(v_keys) = 0 THEN RETURN 'no tasks to add'; END IF;
  SELECT string_agg(k, ', ') INTO v_found FROM unnest(v_keys) k WHERE EXISTS (SELECT 1 FROM baton.tasks t WHERE t.id = baton.task_id_of(p_graph_id, k));
  IF v_found IS NOT NULL THEN RETURN format('graph %s already has task(s) %s', p_graph_id, v_found); END IF;
  SELECT string_agg(DISTINCT d, ', ') INTO v_found
    FROM jsonb_array_elements(p_tasks) t, jsonb_array_elements_text(t->'dependsOn') d
   WHERE NOT d = ANY (v_keys) AND NOT EXISTS (SELECT 1 FROM baton.tasks x WHERE x.id = baton.task_id_of(p_graph_id, d));
  IF v_found IS NOT NULL THEN RETURN format('graph %s has no task(s) %s to depend on', p_graph_id, v_found); END IF;
  RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION baton.graph_insert_tasks(p_graph_id text, p_actor text, p_policy jsonb, p_tasks jsonb, p_details jsonb)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_task jsonb;
  v_dep text;
  v_count integer := 0;
BEGIN
  FOR v_task IN SELECT * FROM jsonb_array_elements(p_tasks) LOOP
    INSERT INTO baton.tasks (id, graph_id, key, spec, status, limits)
      VALUES (baton.task_id_of(p_graph_id, v_task->>'key'), p_graph_id, v_task->>'key', v_task->'spec',
              CASE WHEN jsonb_array_length(v_task->'dependsOn') = 0 THEN 'ready' ELSE 'blocked' END,
              -- U11: the concurrency limits its claims are taken under (migration 0019).
              nullif(jsonb_strip_nulls(jsonb_build_object('graph', p_policy->'maxRunning',
                'key', v_task->'spec'->'concurrency'->'key', 'keyLimit', v_task->'spec'->'concurrency'->'limit',
                'pool', v_task->'spec'->'run'->'pool')), '{}'::jsonb));
    v_count := v_count + 1;
  END LOOP;
  FOR v_task IN SELECT * FROM jsonb_array_elements(p_tasks) LOOP
    FOR v_dep IN SELECT * FROM jsonb_array_elements_text(v_task->'dependsOn') LOOP
      INSERT INTO baton.task_dependencies (task_id, depends_on)
        VALUES (baton.task_id_of(p_graph_id, v_task->>'key'), baton.task_id_of(p_graph_id, v_dep));
    END LOOP;
    PERFORM baton.event_append('task', baton.task_id_of(p_graph_id, v_task->>'key'), 'created', p_actor, 0, NULL, NULL,
      jsonb_build_object('depends_on', v_task->'dependsOn') || p_details);
  END LOOP;
  RETURN v_count;
END $function$
;

CREATE OR REPLACE FUNCTION baton.graph_list(p_state text, p_submitted_within interval, p_limit integer, p_search text DEFAULT NULL::text)
 RETURNS TABLE(id text, submitted_by text, submitted_at timestamp with time zone, tasks integer, counts jsonb, state text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.graph_progress(p_graph_id text)
 RETURNS TABLE(state text, task_ids jsonb)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = p_graph_id) THEN
    RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002';
  END IF;
  RETURN QUERY
  SELECT baton.graph_state_of(coalesce(array_agg(s.status), '{}')), coalesce(jsonb_object_agg(s.status, s.ids), '{}')
    FROM (SELECT t.status, jsonb_agg(t.id ORDER BY t.key) AS ids FROM baton.tasks t WHERE t.graph_id = p_graph_id GROUP BY t.status) s;
END $function$
;

CREATE OR REPLACE FUNCTION baton.graph_read(p_graph_id text)
 RETURNS TABLE(spec jsonb, submitted_by text, submitted_at timestamp with time zone, repo text, base text)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  RETURN QUERY SELECT g.spec, g.submitted_by, g.submitted_at, g.repo, g.base FROM baton.graphs g WHERE g.id = p_graph_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002';
  END IF;
END $function$
;

CREATE OR REPLACE FUNCTION baton.graph_read_tasks(p_graph_id text)
 RETURNS SETOF baton.task_view
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM baton.graphs WHERE id = p_graph_id) THEN
    RAISE EXCEPTION 'graph % does not exist', p_graph_id USING ERRCODE = 'BT002';
  END IF;
  RETURN QUERY SELECT v.* FROM baton.tasks t, baton.task_view(t) v WHERE t.graph_id = p_graph_id ORDER BY t.key;
END $function$
;

CREATE OR REPLACE FUNCTION baton.graph_state_of(p_present text[])
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT CASE WHEN p_present <@ ARRAY['verified'] THEN 'verified'
              WHEN p_present && ARRAY['ready', 'running', 'submitted', 'verifying', 'rejected'] THEN 'running'
              WHEN 'awaiting_approval' = ANY (p_present) THEN 'awaiting_approval'
              WHEN 'failed' = ANY (p_present) THEN 'failed'
              WHEN 'cancelled' = ANY (p_present) THEN 'cancelled'
              WHEN 'stale' = ANY (p_present) THEN 'stale'
              ELSE 'blocked' END
$function$
;

CREATE OR REPLACE FUNCTION baton.graph_submit(p_graph_id text, p_actor text, p_spec jsonb, p_tasks jsonb)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  v_count integer;
BEGIN
  BEGIN
    INSERT INTO baton.graphs (id, submitted_by, spec) VALUES (p_graph_id, p_actor, p_spec);
  EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'graph % already exists', p_graph_id USING ERRCODE = 'BT003';
  END;
  PERFORM baton.event_append('graph', p_graph_id, 'submitted', p_actor, NULL, NULL, NULL,
    jsonb_build_object('tasks', jsonb_array_length(p_tasks)));
  v_count := baton.graph_insert_tasks(p_graph_id, p_actor, p_spec->'policy', p_tasks, '{}'::jsonb);
  RETURN v_count;
END $function$
;

CREATE OR REPLACE FUNCTION baton.health_check_read(p_limit integer)
 RETURNS SETOF baton.health_checks
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT * FROM baton.health_checks ORDER BY id DESC LIMIT p_limit
$function$
;

CREATE OR REPLACE FUNCTION baton.health_check_record(p_workflow_id text, p_message text)
 RETURNS SETOF baton.health_checks
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  INSERT INTO baton.health_checks (workflow_id, message) VALUES (p_workflow_id, p_message)
  ON CONFLICT (workflow_id) DO UPDATE SET workflow_id = EXCLUDED.workflow_id
  RETURNING *
$function$
;

CREATE OR REPLACE FUNCTION baton.inbox_reason(k baton.agent_tokens, e baton.events)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN CASE
    WHEN e.kind = 'offered' AND e.details->>'successor' = k.identity THEN 'offer'
    WHEN e.kind = 'withdrawn' AND e.details->>'successor' = k.identity THEN 'offer_answered'
    WHEN e.kind IN ('declined', 'accepted') AND e.subject_kind = 'object'
     AND coalesce(e.details->>'giver', e.details->>'from') = k.identity THEN 'offer_answered'
    WHEN e.kind IN ('taken_over', 'reclaimed_after_silence') AND e.subject_kind = 'object'
     AND e.details->>'from' = k.identity AND e.actor <> k.identity THEN 'role_lost'
    WHEN e.kind = 'granted' AND e.details->>'grantee' = k.identity THEN 'granted'
    WHEN e.kind = 'suggested' AND e.actor <> k.identity
     AND EXISTS (SELECT 1 FROM baton.objects o WHERE o.key = e.subject_id AND o.holder = k.identity) THEN 'suggestion'
    WHEN e.actor = k.identity AND e.kind LIKE '%\_refused' THEN 'refused'
    WHEN e.kind = 'api_refused' AND e.subject_kind = 'agent' AND e.subject_id = k.identity THEN 'refused'
    WHEN e.kind = 'approval_requested' AND ('approve' = ANY (k.scopes) OR 'admin' = ANY (k.scopes)) THEN 'approval'
    WHEN e.kind = 'subtasks_proposed' AND e.details->>'policy' = 'review' AND 'admin' = ANY (k.scopes) THEN 'proposal'
    WHEN e.kind = 'proposal_decided' AND e.details->>'proposedBy' = k.identity THEN 'proposal_answered'
  END;
END $function$
;

CREATE OR REPLACE FUNCTION baton.metrics_events(p_after bigint, p_limit integer)
 RETURNS TABLE(id bigint, subject_kind text, kind text, labels jsonb, amount bigint, seconds double precision)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
$function$
;

CREATE OR REPLACE FUNCTION baton.metrics_gauges()
 RETURNS TABLE(name text, labels jsonb, value bigint)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT 'tasks', jsonb_build_object('status', t.status), count(*) FROM baton.tasks t GROUP BY t.status
  UNION ALL
  SELECT 'pool_offers_waiting', jsonb_build_object('pool', w.pool), count(*)
    FROM baton.pool_runs w JOIN baton.tasks t ON t.id = w.task_id
   WHERE w.agent IS NULL AND t.status = 'running' AND t.claim_version = w.claim_version
   GROUP BY w.pool
$function$
;

CREATE OR REPLACE FUNCTION baton.object_accept(p_key text, p_actor text, p_version bigint)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_accept_offer(o baton.objects, f baton.object_offers, p_actor text, p_via text)
 RETURNS baton.objects
 LANGUAGE plpgsql
AS $function$
BEGIN
  UPDATE baton.object_offers SET status = 'accepted', closed_at = now(), closed_by = p_actor WHERE id = f.id;
  RETURN baton.object_move_role(o, p_actor, 'accepted', p_actor,
    format('accepted the offer from %s at version %s', f.giver, f.version),
    jsonb_build_object('offer_id', f.id, 'via', p_via));
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_access(o baton.objects, p_actor text)
 RETURNS text
 LANGUAGE sql
AS $function$
  SELECT coalesce((SELECT access FROM baton.object_permissions WHERE object_key = o.key AND actor = p_actor), o.default_access)
$function$
;

CREATE OR REPLACE FUNCTION baton.object_access_rank(p_access text)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT array_position(ARRAY['none', 'view', 'suggest', 'write'], p_access) - 1
$function$
;

CREATE OR REPLACE FUNCTION baton.object_approve(p_key text, p_actor text, p_token bigint, p_suggestion_id bigint)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_check_actor(p_actor text, p_what text DEFAULT 'actor'::text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 200 THEN
    PERFORM baton.object_invalid(format('%s must be 1 to 200 characters', p_what));
  END IF;
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_check_content(p_content text, p_content_ref text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF num_nonnulls(p_content, p_content_ref) <> 1 THEN
    PERFORM baton.object_invalid('give exactly one of content and content_ref');
  END IF;
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_check_view(p_key text, p_actor text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_create(p_key text, p_actor text, p_silence_timeout_ms integer, p_default_access text DEFAULT 'none'::text, p_content text DEFAULT NULL::text, p_content_ref text DEFAULT NULL::text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
  PERFORM baton.event_append('object', o.key, 'created', p_actor, o.token, o.version, NULL,
    jsonb_build_object('default_access', p_default_access, 'silence_timeout_ms', p_silence_timeout_ms));
  RETURN baton.object_outcome_of(o, true);
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_decline(p_key text, p_actor text, p_reason text DEFAULT NULL::text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_expire_if_silent(o baton.objects, p_actor text, p_operation text)
 RETURNS baton.objects
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF baton.object_is_silent(o, (baton.object_open_offer(o.key)).id IS NOT NULL) THEN
    RETURN baton.object_move_role(o, p_actor, 'reclaimed_after_silence', NULL, baton.object_silence_reason(o),
      baton.object_silence_details(o, p_operation));
  END IF;
  RETURN o;
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_grant(p_key text, p_actor text, p_grantee text, p_access text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  PERFORM baton.object_check_actor(p_grantee, 'grantee');
  IF baton.object_access_rank(p_access) IS NULL THEN
    PERFORM baton.object_invalid(format('access must be none, view, suggest or write, not %L', p_access));
  END IF;
  IF p_grantee = o.created_by THEN
    PERFORM baton.object_refuse_move(format('%s created %s and keeps write access', p_grantee, o.key));
  END IF;
  IF p_actor <> o.created_by THEN
    RETURN baton.object_refuse(o, p_actor, 'permission_refused', 'permission', 'grant',
      format('only %s, who created %s, may grant access to it', o.created_by, o.key), '{}'::jsonb);
  END IF;
  INSERT INTO baton.object_permissions (object_key, actor, access, granted_by) VALUES (o.key, p_grantee, p_access, p_actor)
  ON CONFLICT (object_key, actor) DO UPDATE SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = now();
  PERFORM baton.event_append('object', o.key, 'granted', p_actor, o.token, o.version, NULL,
    jsonb_build_object('grantee', p_grantee, 'access', p_access));
  RETURN baton.object_outcome_of(o, true);
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_heartbeat(p_key text, p_actor text, p_token bigint)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_invalid(p_message text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'BT003';
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_is_silent(o baton.objects, p_offer_open boolean)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  SELECT o.holder IS NOT NULL AND NOT p_offer_open
    AND o.holder_heartbeat_at + make_interval(secs => o.silence_timeout_ms / 1000.0) < now()
$function$
;

CREATE OR REPLACE FUNCTION baton.object_lock(p_key text)
 RETURNS baton.objects
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_may(o baton.objects, p_actor text, p_access text)
 RETURNS boolean
 LANGUAGE sql
AS $function$
  SELECT baton.object_access_rank(baton.object_access(o, p_actor)) >= baton.object_access_rank(p_access)
$function$
;

CREATE OR REPLACE FUNCTION baton.object_move_role(o baton.objects, p_actor text, p_kind text, p_to text, p_reason text, p_details jsonb DEFAULT '{}'::jsonb)
 RETURNS baton.objects
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_moved_reason(o baton.objects, p_actor text, p_token bigint)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_offer(p_key text, p_actor text, p_token bigint, p_version bigint, p_successor text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_open_offer(p_key text)
 RETURNS baton.object_offers
 LANGUAGE sql
AS $function$
  SELECT * FROM baton.object_offers WHERE object_key = p_key AND status = 'open'
$function$
;

CREATE OR REPLACE FUNCTION baton.object_outcome_of(o baton.objects, p_ok boolean, p_refusal text DEFAULT NULL::text, p_reason text DEFAULT NULL::text, p_with_content boolean DEFAULT false, p_suggestion_id bigint DEFAULT NULL::bigint)
 RETURNS baton.object_outcome
 LANGUAGE sql
AS $function$
  SELECT p_ok, p_refusal, p_reason, o.key, o.version, o.token, o.holder, o.holder_since, o.holder_heartbeat_at,
         baton.object_is_silent(o, f.id IS NOT NULL), o.silence_timeout_ms, f.successor, f.version, f.offered_at,
         CASE WHEN p_with_content THEN o.content END, CASE WHEN p_with_content THEN o.content_ref END,
         p_suggestion_id, now()
    FROM (SELECT 1) AS one LEFT JOIN baton.object_offers f ON f.object_key = o.key AND f.status = 'open'
$function$
;

CREATE OR REPLACE FUNCTION baton.object_paths_refused(p_key text, p_task_id text, p_claim_version bigint, p_paths text[])
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  o baton.objects := baton.object_lock(p_key);
  t baton.tasks;
  v_agent text;
  v_reason text;
BEGIN
  SELECT * INTO STRICT t FROM baton.tasks WHERE id = p_task_id;
  v_agent := baton.task_agent_identity(t);
  v_reason := format('the commit of %s (claim version %s) changes %s, reserved by %s, which %s',
    p_task_id, p_claim_version, array_to_string(p_paths[1:5], ', ') || CASE WHEN cardinality(p_paths) > 5
      THEN format(' and %s more', cardinality(p_paths) - 5) ELSE '' END,
    o.key, CASE WHEN o.holder IS NULL THEN 'nobody holds: take it first' ELSE format('%s holds, not %s', o.holder, v_agent) END);
  PERFORM baton.event_append('object', o.key, 'reserved_path_refused', v_agent, o.token, o.version, v_reason,
    jsonb_build_object('taskId', p_task_id, 'claimVersion', p_claim_version, 'paths', to_jsonb(p_paths), 'holder', o.holder));
  RETURN v_reason;
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_read(p_key text, p_actor text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'view') THEN RETURN baton.object_refuse_access(o, p_actor, 'view', 'read'); END IF;
  PERFORM baton.object_record_view(o, p_actor);
  RETURN baton.object_outcome_of(o, true, p_with_content => true);
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_read_events(p_key text, p_after_seq integer, p_limit integer)
 RETURNS SETOF baton.event_view
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT id, subject_kind, subject_id, subject_seq, kind, actor, at, fence, version, reason, details FROM baton.events
   WHERE subject_kind = 'object' AND subject_id = p_key AND subject_seq > p_after_seq
   ORDER BY subject_seq LIMIT p_limit
$function$
;

CREATE OR REPLACE FUNCTION baton.object_record_view(o baton.objects, p_actor text)
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO baton.object_read_views (object_key, actor, version) VALUES (o.key, p_actor, o.version)
  ON CONFLICT (object_key, actor) DO UPDATE SET version = EXCLUDED.version, read_at = now()
$function$
;

CREATE OR REPLACE FUNCTION baton.object_refuse(o baton.objects, p_actor text, p_kind text, p_refusal text, p_operation text, p_reason text, p_details jsonb DEFAULT '{}'::jsonb)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM baton.event_append('object', o.key, p_kind, p_actor, o.token, o.version, p_reason,
    jsonb_build_object('operation', p_operation, 'refusal', p_refusal) || p_details);
  RETURN baton.object_outcome_of(o, false, p_refusal, p_reason);
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_refuse_access(o baton.objects, p_actor text, p_needed text, p_operation text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
AS $function$
BEGIN
  RETURN baton.object_refuse(o, p_actor, 'permission_refused', 'permission', p_operation,
    format('%s has %s access to %s; %s needs %s', p_actor, baton.object_access(o, p_actor), o.key, p_operation, p_needed),
    jsonb_build_object('needed', p_needed, 'has', baton.object_access(o, p_actor)));
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_refuse_move(p_message text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'BT001';
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_refuse_no_offer(o baton.objects, p_actor text, p_successor text, p_operation text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_refuse_offer_open(o baton.objects, p_actor text, p_operation text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
AS $function$
DECLARE
  f baton.object_offers := baton.object_open_offer(o.key);
BEGIN
  RETURN baton.object_refuse(o, p_actor, 'handoff_pending_refused', 'offer_open', p_operation,
    format('offer of %s to %s at version %s is open since %s: withdraw it or wait for %s to answer',
      o.key, f.successor, f.version, baton.object_ts(f.offered_at), f.successor),
    jsonb_build_object('offer_id', f.id, 'successor', f.successor));
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_refuse_unless_holder(o baton.objects, p_actor text, p_token bigint, p_operation text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF p_token IS NULL THEN PERFORM baton.object_invalid(format('%s names the fencing token', p_operation)); END IF;
  IF o.holder IS NOT DISTINCT FROM p_actor AND p_token = o.token THEN
    RETURN NULL;
  END IF;
  RETURN baton.object_refuse(o, p_actor, 'stale_write_refused',
    CASE WHEN p_token = o.token THEN 'not_holder' ELSE 'token_moved' END, p_operation,
    baton.object_moved_reason(o, p_actor, p_token),
    jsonb_build_object('token', p_token, 'holder', o.holder));
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_refuse_version(o baton.objects, p_actor text, p_version bigint, p_operation text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
AS $function$
BEGIN
  RETURN baton.object_refuse(o, p_actor, 'stale_write_refused', 'version_moved', p_operation,
    format('version moved from %s to %s', p_version, o.version), jsonb_build_object('read_version', p_version));
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_release(p_key text, p_actor text, p_token bigint, p_reason text DEFAULT NULL::text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_reservations_for(p_task_id text, p_claim_version bigint)
 RETURNS TABLE(key text, holder text, paths text[])
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  t baton.tasks;
BEGIN
  SELECT * INTO t FROM baton.tasks WHERE id = p_task_id AND claim_version = p_claim_version;
  IF NOT FOUND THEN RETURN; END IF;
  RETURN QUERY SELECT o.key, o.holder, o.paths FROM baton.objects o
    WHERE o.paths <> '{}' AND o.holder IS DISTINCT FROM baton.task_agent_identity(t) ORDER BY o.key;
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_reserve(p_key text, p_actor text, p_paths text[])
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF p_paths IS NULL OR cardinality(p_paths) > 100 OR EXISTS (
       SELECT 1 FROM unnest(p_paths) x(p)
        WHERE p IS NULL OR length(p) NOT BETWEEN 1 AND 4096 OR p ~ '^[/:]' OR ('/' || p || '/') ~ '/\.\.?/' OR p ~ '//') THEN
    PERFORM baton.object_invalid('paths: at most 100, each relative to the repository''s top, with no ''..'', ''.'' or empty part');
  END IF;
  IF p_actor <> o.created_by THEN
    RETURN baton.object_refuse(o, p_actor, 'permission_refused', 'permission', 'reserve',
      format('only %s, who created %s, may reserve paths with it', o.created_by, o.key), '{}'::jsonb);
  END IF;
  UPDATE baton.objects SET paths = ARRAY(SELECT DISTINCT unnest(p_paths) ORDER BY 1) WHERE key = o.key RETURNING * INTO o;
  PERFORM baton.event_append('object', o.key, 'paths_reserved', p_actor, o.token, o.version,
    CASE WHEN cardinality(o.paths) = 0 THEN 'reserves no paths' ELSE 'reserves ' || array_to_string(o.paths, ', ') END,
    jsonb_build_object('paths', to_jsonb(o.paths)));
  RETURN baton.object_outcome_of(o, true);
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_show(p_key text, p_actor text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  o baton.objects := baton.object_lock(p_key);
BEGIN
  PERFORM baton.object_check_actor(p_actor);
  IF NOT baton.object_may(o, p_actor, 'view') THEN RETURN baton.object_refuse_access(o, p_actor, 'view', 'show'); END IF;
  RETURN baton.object_outcome_of(o, true);
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_silence_details(o baton.objects, p_operation text)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  SELECT jsonb_build_object('last_heartbeat_at', o.holder_heartbeat_at, 'silence_timeout_ms', o.silence_timeout_ms,
    'detected_by', p_operation)
$function$
;

CREATE OR REPLACE FUNCTION baton.object_silence_reason(o baton.objects)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  SELECT format('%s silent since %s, past its %s ms silence timeout',
    o.holder, baton.object_ts(o.holder_heartbeat_at), o.silence_timeout_ms)
$function$
;

CREATE OR REPLACE FUNCTION baton.object_suggest(p_key text, p_actor text, p_base_version bigint, p_content text DEFAULT NULL::text, p_content_ref text DEFAULT NULL::text, p_note text DEFAULT NULL::text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_sweep(p_actor text)
 RETURNS TABLE(object_key text, silent_holder text, token bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_take(p_key text, p_actor text, p_reason text DEFAULT NULL::text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
    PERFORM baton.event_append('object', o.key, 'overtaken', p_actor, o.token, f.version,
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_touch(o baton.objects)
 RETURNS baton.objects
 LANGUAGE sql
AS $function$
  UPDATE baton.objects SET holder_heartbeat_at = now() WHERE key = o.key RETURNING *
$function$
;

CREATE OR REPLACE FUNCTION baton.object_ts(p_at timestamp with time zone)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$function$
;

CREATE OR REPLACE FUNCTION baton.object_withdraw(p_key text, p_actor text, p_token bigint)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.object_write(p_key text, p_actor text, p_version bigint, p_token bigint, p_content text DEFAULT NULL::text, p_content_ref text DEFAULT NULL::text)
 RETURNS baton.object_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
  PERFORM baton.event_append('object', o.key, 'written', p_actor, o.token, o.version, NULL,
    jsonb_build_object('from_version', p_version, 'digest', md5(coalesce(p_content, p_content_ref))));
  RETURN baton.object_outcome_of(o, true);
END $function$
;

CREATE OR REPLACE FUNCTION baton.pool_limit_set(p_pool text, p_max_running integer, p_actor text)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.pool_offer(p_task_id text, p_owner text, p_claim_version bigint, p_pool text)
 RETURNS baton.fenced_result
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.pool_run_state(p_task_id text, p_claim_version bigint)
 RETURNS TABLE(agent text, beat_at timestamp with time zone, silent_ms bigint, progress jsonb, revision text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT r.agent, r.beat_at, (extract(epoch FROM now() - r.beat_at) * 1000)::bigint, r.progress, r.revision
    FROM baton.pool_runs r WHERE r.task_id = p_task_id AND r.claim_version = p_claim_version
$function$
;

CREATE OR REPLACE FUNCTION baton.proposal_decide(p_id bigint, p_actor text, p_accept boolean, p_reason text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  p baton.proposals;
  v_reason text := nullif(btrim(coalesce(p_reason, '')), '');
  v_added jsonb := '[]'::jsonb;
BEGIN
  IF length(v_reason) > 2000 OR (NOT p_accept AND v_reason IS NULL) THEN
    RAISE EXCEPTION 'declining a proposal needs a reason of 1 to 2000 characters (it is recorded, and its agent reads it)' USING ERRCODE = 'BT003';
  END IF;
  SELECT * INTO p FROM baton.proposals x WHERE x.id = p_id FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'proposal % does not exist', p_id USING ERRCODE = 'BT002'; END IF;
  IF p.status <> 'pending' THEN
    RAISE EXCEPTION 'proposal % was % by % already', p_id, p.status, p.decided_by USING ERRCODE = 'BT001';
  END IF;
  IF p_actor = p.proposed_by THEN
    RAISE EXCEPTION 'proposal %: % proposed it and may not decide it', p_id, p_actor USING ERRCODE = 'BT003';
  END IF;
  -- The proposing task's row lock keeps its event numbers gapless beside its own writes.
  PERFORM baton.task_lock(p.task_id);
  UPDATE baton.proposals SET status = CASE WHEN p_accept THEN 'accepted' ELSE 'declined' END,
         decided_by = p_actor, decided_at = now(), reason = v_reason
   WHERE id = p_id RETURNING * INTO p;
  PERFORM baton.event_append('task', p.task_id, 'proposal_decided', p_actor, NULL, NULL, v_reason,
    jsonb_build_object('proposal', p.id, 'decision', p.status, 'proposedBy', p.proposed_by,
      'keys', (SELECT jsonb_agg(x->'key') FROM jsonb_array_elements(p.tasks) x)));
  IF p_accept THEN
    v_added := baton.graph_add_tasks_json(p.graph_id, p_actor, p.tasks, jsonb_build_object('proposal', p.id, 'proposer', p.task_id));
  END IF;
  RETURN baton.proposal_view(p) || jsonb_build_object('added', v_added)
    || CASE WHEN p_accept THEN jsonb_build_object('policy', (SELECT g.spec->'policy' FROM baton.graphs g WHERE g.id = p.graph_id))
            ELSE '{}'::jsonb END;
END $function$
;

CREATE OR REPLACE FUNCTION baton.proposal_list(p_graph_id text DEFAULT NULL::text, p_all boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(baton.proposal_view(p) ORDER BY p.proposed_at, p.id), '[]'::jsonb)
            FROM baton.proposals p WHERE (p_all OR p.status = 'pending') AND (p_graph_id IS NULL OR p.graph_id = p_graph_id));
END $function$
;

CREATE OR REPLACE FUNCTION baton.proposal_view(p baton.proposals)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  RETURN jsonb_build_object('id', p.id, 'graphId', p.graph_id, 'taskId', p.task_id, 'claimVersion', p.claim_version,
    'proposedBy', p.proposed_by, 'proposedAt', baton.object_ts(p.proposed_at), 'status', p.status,
    'tasks', (SELECT jsonb_agg(jsonb_build_object('key', x->>'key', 'description', x->'spec'->>'description',
                'payload', x->'spec'->'payload', 'dependsOn', x->'dependsOn') ORDER BY n)
                FROM jsonb_array_elements(p.tasks) WITH ORDINALITY e(x, n)),
    'decidedBy', p.decided_by, 'decidedAt', baton.object_ts(p.decided_at), 'reason', p.reason);
END $function$
;

CREATE OR REPLACE FUNCTION baton.read_schema_state()
 RETURNS TABLE(kind text, name text, checksum text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT 'migration', id::text, migrations.checksum FROM baton.migrations
  UNION ALL
  SELECT 'definition', file, definitions.checksum FROM baton.definitions
$function$
;

CREATE OR REPLACE FUNCTION baton.record_refuse_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_OP = 'DELETE' AND baton.retention_moving() THEN RETURN NULL; END IF;
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'BT004';
END $function$
;

CREATE OR REPLACE FUNCTION baton.retention_apply(p_older_than interval, p_actor text, p_dry_run boolean, p_limit integer)
 RETURNS TABLE(graph_id text, finished_at timestamp with time zone, events integer, notes integer, tool_calls integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.retention_candidates(p_older_than interval, p_limit integer)
 RETURNS TABLE(graph_id text, finished_at timestamp with time zone)
 LANGUAGE sql
 STABLE
AS $function$
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
$function$
;

CREATE OR REPLACE FUNCTION baton.retention_moving()
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  SELECT coalesce(current_setting('baton.retention_moving', true), '') = 'on'
$function$
;

CREATE OR REPLACE FUNCTION baton.run_token_issue(p_task_id text, p_owner text, p_claim_version bigint, p_identity text, p_secret_sha256 bytea)
 RETURNS baton.fenced_result
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  IF NOT baton.claim_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'run token');
  END IF;
  PERFORM baton.agent_token_insert(p_identity, ARRAY['read', 'notes', 'objects'], NULL, p_secret_sha256, p_owner, p_task_id, p_claim_version);
  RETURN baton.claim_accept_write(p_task_id);
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_agent_identity(t baton.tasks)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  SELECT coalesce(
    (SELECT w.agent FROM baton.pool_runs w WHERE w.task_id = t.id AND w.claim_version = t.claim_version),
    t.spec->'run'->>'agent', t.id)
$function$
;

CREATE OR REPLACE FUNCTION baton.task_check_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.status NOT IN ('blocked', 'ready') OR NEW.claim_version <> 0 THEN
      RAISE EXCEPTION 'task %: a new task starts blocked or ready with claim version 0, not %', NEW.id, NEW.status
        USING ERRCODE = 'BT001';
    END IF;
    RETURN NEW;
  END IF;
  IF NEW.claim_version < OLD.claim_version THEN
    RAISE EXCEPTION 'task %: claim version may not go back from % to %', NEW.id, OLD.claim_version, NEW.claim_version
      USING ERRCODE = 'BT001';
  END IF;
  IF NEW.claim_version <> OLD.claim_version AND NOT (OLD.status = 'ready' AND NEW.status = 'running') THEN
    RAISE EXCEPTION 'task %: the claim version changes only when a ready task is claimed', NEW.id USING ERRCODE = 'BT001';
  END IF;
  IF NEW.status IS DISTINCT FROM OLD.status AND NOT EXISTS (
    SELECT 1 FROM baton.task_transitions WHERE from_status = OLD.status AND to_status = NEW.status
  ) THEN
    RAISE EXCEPTION 'task %: % -> % is not an allowed transition', NEW.id, OLD.status, NEW.status USING ERRCODE = 'BT001';
  END IF;
  IF NEW.status = 'verified' AND OLD.status <> 'verified' AND NOT EXISTS (
    SELECT 1 FROM baton.verifications v
     WHERE v.task_id = NEW.id AND v.passed AND v.claim_version = NEW.claim_version AND v.revision = NEW.artifact->>'revision'
  ) THEN
    RAISE EXCEPTION 'task %: verified needs a passed verification of revision % at claim version %',
      NEW.id, NEW.artifact->>'revision', NEW.claim_version USING ERRCODE = 'BT001';
  END IF;
  NEW.updated_at := now();
  RETURN NEW;
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_check_release()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_unverified text;
BEGIN
  SELECT string_agg(u.key || ' (' || u.status || ')', ', ' ORDER BY u.key) INTO v_unverified
    FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on
   WHERE d.task_id = NEW.id AND u.status <> 'verified';
  IF v_unverified IS NOT NULL THEN
    RAISE EXCEPTION 'task %: cannot become ready before its dependencies are verified: %', NEW.id, v_unverified
      USING ERRCODE = 'BT001';
  END IF;
  RETURN NEW;
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_claim(p_task_id text, p_owner text, p_lease_ms integer, p_max_attempts integer DEFAULT NULL::integer)
 RETURNS TABLE(task_id text, graph_id text, key text, spec jsonb, claim_version bigint, lease_expires_at timestamp with time zone, attempts integer, upstream_revisions jsonb, repo text, base text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_claim_next(p_owner text, p_lease_ms integer, p_graph_id text DEFAULT NULL::text)
 RETURNS SETOF baton.claim
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_fail_attempt(p_task_id text, p_owner text, p_claim_version bigint, p_reason text, p_retry boolean)
 RETURNS baton.fenced_result
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  IF NOT baton.claim_fence(p_task_id, p_owner, p_claim_version) THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'fail');
  END IF;
  UPDATE baton.tasks
     SET status = CASE WHEN p_retry THEN baton.task_ready_or_blocked(p_task_id) ELSE 'failed' END,
         owner = CASE WHEN p_retry THEN NULL ELSE owner END, lease_expires_at = NULL
   WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, CASE WHEN p_retry THEN 'attempt_failed' ELSE 'failed' END,
    p_owner, p_claim_version, NULL, p_reason);
  RETURN baton.claim_accept_write(p_task_id);
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_heartbeat(p_task_id text, p_owner text, p_claim_version bigint, p_lease_ms integer, p_progress jsonb)
 RETURNS baton.fenced_result
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  r baton.fenced_result;
BEGIN
  UPDATE baton.tasks t
     SET heartbeat_at = now(), lease_expires_at = now() + p_lease_ms * interval '1 millisecond',
         progress = coalesce(p_progress, t.progress)
   WHERE t.id = p_task_id AND baton.claim_holds(t, p_owner, p_claim_version)
  RETURNING true, t.status, t.owner, t.claim_version, t.lease_expires_at INTO r;
  IF NOT FOUND THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'heartbeat');
  END IF;
  RETURN r;
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_id_of(p_graph_id text, p_key text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT p_graph_id || '/' || p_key
$function$
;

CREATE OR REPLACE FUNCTION baton.task_id_pattern_of(p_graph_id text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT replace(replace(p_graph_id, '%', '\%'), '_', '\_') || '/%'
$function$
;

CREATE OR REPLACE FUNCTION baton.task_list_superseded_pins(p_task_id text)
 RETURNS TABLE(upstream text, pinned text, verified text, upstream_status text)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT u.key, t.upstream_revisions->>u.key, u.verified_revision, u.status
    FROM baton.tasks t JOIN baton.task_dependencies d ON d.task_id = t.id JOIN baton.tasks u ON u.id = d.depends_on
   WHERE t.id = p_task_id AND (u.status = 'stale' OR (t.upstream_revisions->>u.key) IS DISTINCT FROM u.verified_revision)
   ORDER BY u.key
$function$
;

CREATE OR REPLACE FUNCTION baton.task_lock(p_task_id text)
 RETURNS baton.tasks
 LANGUAGE plpgsql
AS $function$
DECLARE
  t baton.tasks;
BEGIN
  SELECT * INTO t FROM baton.tasks WHERE id = p_task_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  RETURN t;
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_note_add(p_task_id text, p_author text, p_claim_version bigint, p_body text)
 RETURNS baton.fenced_result
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id) THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
  IF p_claim_version IS NOT NULL AND NOT baton.claim_fence(p_task_id, p_author, p_claim_version) THEN
    RETURN baton.claim_refuse_stale_write(p_task_id, p_author, p_claim_version, 'note');
  END IF;
  INSERT INTO baton.task_notes (task_id, author, claim_version, body) VALUES (p_task_id, p_author, p_claim_version, p_body);
  RETURN baton.claim_accept_write(p_task_id);
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_propagate_stale(p_task_id text, p_actor text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_key text;
  v_reason text;
  d record;
BEGIN
  SELECT key INTO STRICT v_key FROM baton.tasks WHERE id = p_task_id;
  v_reason := format('it depends on %s, which is stale', v_key);
  FOR d IN
    WITH RECURSIVE downstream(id) AS (
      SELECT task_id FROM baton.task_dependencies WHERE depends_on = p_task_id
      UNION
      SELECT dep.task_id FROM downstream s JOIN baton.task_dependencies dep ON dep.depends_on = s.id
    )
    SELECT t.id, t.status, t.claim_version FROM baton.tasks t WHERE t.id IN (SELECT id FROM downstream)
     ORDER BY t.id FOR UPDATE OF t
  LOOP
    IF d.status = 'verified' THEN
      UPDATE baton.tasks SET status = 'stale' WHERE id = d.id;
      PERFORM baton.event_append('task', d.id, 'marked_stale', p_actor, d.claim_version, NULL, v_reason,
        jsonb_build_object('stale_upstream', v_key));
    ELSIF d.status = 'ready' THEN
      UPDATE baton.tasks SET status = 'blocked', upstream_revisions = '{}'::jsonb WHERE id = d.id;
      PERFORM baton.event_append('task', d.id, 'reblocked', p_actor, d.claim_version, NULL, v_reason,
        jsonb_build_object('stale_upstream', v_key));
    END IF;
  END LOOP;
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_propose(t baton.tasks, p_actor text, p_tasks jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_policy jsonb := (SELECT g.spec->'policy' FROM baton.graphs g WHERE g.id = t.graph_id);
  v_mode text := coalesce(v_policy->>'subtasks', 'review');
  v_before integer;
  v_tasks jsonb;
  v_keys text[];
  v_problem text;
  v_id bigint;
  v_added jsonb := '[]'::jsonb;
BEGIN
  IF v_mode = 'refuse' THEN
    RETURN jsonb_build_object('refusal', 'subtasks_refused',
      'reason', format('graph %s takes no subtasks from its agents (policy.subtasks: refuse)', t.graph_id));
  END IF;
  SELECT coalesce(sum(jsonb_array_length(p.tasks)), 0) INTO v_before FROM baton.proposals p WHERE p.task_id = t.id AND p.status <> 'declined';
  IF v_before + jsonb_array_length(p_tasks) > 50 THEN
    RETURN jsonb_build_object('refusal', 'limit',
      'reason', format('task %s has proposed %s subtask(s); %s more would pass the limit of 50 per task (MAX_SUBTASKS_PER_TASK)', t.id, v_before, jsonb_array_length(p_tasks)));
  END IF;
  -- Subtasks run the proposer's agent, which may propose again: the graph's size bounds the nesting.
  IF (SELECT count(*) FROM baton.tasks x WHERE x.graph_id = t.graph_id) + jsonb_array_length(p_tasks) > 50000 THEN
    RETURN jsonb_build_object('refusal', 'limit',
      'reason', format('graph %s would pass 50000 tasks (MAX_TASKS_PER_GRAPH) with %s more', t.graph_id, jsonb_array_length(p_tasks)));
  END IF;
  v_tasks := (SELECT jsonb_agg(jsonb_build_object('key', x->>'key', 'dependsOn', coalesce(x->'dependsOn', '[]'::jsonb),
                'spec', (t.spec - 'description' - 'payload') || jsonb_build_object('description', coalesce(x->>'description', x->>'key'))
                        || CASE WHEN x ? 'payload' THEN jsonb_build_object('payload', x->'payload') ELSE '{}'::jsonb END) ORDER BY n)
                FROM jsonb_array_elements(p_tasks) WITH ORDINALITY e(x, n));
  v_keys := ARRAY(SELECT x->>'key' FROM jsonb_array_elements(v_tasks) x);
  v_problem := baton.graph_addition_problem(t.graph_id, v_tasks);
  IF v_problem IS NOT NULL THEN PERFORM baton.agent_invalid(v_problem || ': nothing was proposed'); END IF;
  INSERT INTO baton.proposals (graph_id, task_id, claim_version, proposed_by, tasks, status, decided_by, decided_at)
    VALUES (t.graph_id, t.id, t.claim_version, p_actor, v_tasks, CASE v_mode WHEN 'accept' THEN 'accepted' ELSE 'pending' END,
            CASE v_mode WHEN 'accept' THEN 'policy.subtasks' END, CASE v_mode WHEN 'accept' THEN now() END)
    RETURNING id INTO v_id;
  PERFORM baton.event_append('task', t.id, 'subtasks_proposed', p_actor, t.claim_version, NULL,
    format('%s subtask(s) proposed: %s; %s', cardinality(v_keys), array_to_string(v_keys, ', '),
      CASE v_mode WHEN 'accept' THEN 'added at once (policy.subtasks: accept)' ELSE 'waiting for an operator (policy.subtasks: review)' END),
    jsonb_build_object('proposal', v_id, 'keys', to_jsonb(v_keys), 'policy', v_mode));
  IF v_mode = 'accept' THEN
    v_added := baton.graph_add_tasks_json(t.graph_id, p_actor, v_tasks, jsonb_build_object('proposal', v_id, 'proposer', t.id));
  END IF;
  RETURN jsonb_build_object('proposalId', v_id, 'status', CASE v_mode WHEN 'accept' THEN 'accepted' ELSE 'pending' END,
    'added', v_added, 'policy', v_policy);
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_read(p_task_id text)
 RETURNS SETOF baton.task_view
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
BEGIN
  RETURN QUERY SELECT v.* FROM baton.tasks t, baton.task_view(t) v WHERE t.id = p_task_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'task % does not exist', p_task_id USING ERRCODE = 'BT002';
  END IF;
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_ready_or_blocked(p_task_id text)
 RETURNS text
 LANGUAGE sql
AS $function$
  SELECT CASE WHEN EXISTS (
    SELECT 1 FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on
     WHERE d.task_id = p_task_id AND u.status <> 'verified'
  ) THEN 'blocked' ELSE 'ready' END
$function$
;

CREATE OR REPLACE FUNCTION baton.task_rerun_stale(p_task_id text, p_actor text, p_reason text)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  t baton.tasks;
  v_policy text;
BEGIN
  t := baton.task_lock(p_task_id);
  SELECT coalesce(g.spec->'policy'->>'onUpstreamChange', 'rerun') INTO STRICT v_policy FROM baton.graphs g WHERE g.id = t.graph_id;
  -- Upstream tasks are read after this task's lock: a verification of one that is under way waits
  -- for the lock, then finds this task stale and names it.
  IF t.status <> 'stale' OR v_policy <> 'rerun' OR baton.task_ready_or_blocked(p_task_id) = 'blocked' THEN
    RETURN t.status;
  END IF;
  PERFORM baton.task_set_status(p_task_id, p_actor, 'ready', 'rerun_after_stale', p_reason);
  RETURN 'ready';
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_set_status(p_task_id text, p_actor text, p_to text, p_kind text, p_reason text)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  t baton.tasks;
  v_count bigint;
BEGIN
  t := baton.task_lock(p_task_id);
  IF NOT EXISTS (SELECT 1 FROM baton.task_statuses WHERE status = p_to) THEN
    RAISE EXCEPTION 'unknown task status %', p_to USING ERRCODE = 'BT003';
  END IF;
  IF p_to = t.status THEN
    RETURN t.status; -- already there (e.g. a retried activity): no change, no event
  END IF;
  -- U11: an archived graph's record lives in the archive; nothing of it runs again.
  IF EXISTS (SELECT 1 FROM baton.archives a WHERE a.graph_id = t.graph_id) THEN
    RAISE EXCEPTION 'task %: its graph % was archived: its record is read-only', p_task_id, t.graph_id USING ERRCODE = 'BT001';
  END IF;
  -- Only policy and operator moves; claims, submits and verifications have their own functions.
  IF NOT ((t.status, p_to) IN (('rejected', 'ready'), ('rejected', 'failed'), ('ready', 'failed'), ('verified', 'ready'),
                               ('stale', 'ready'), ('failed', 'ready'))
          OR (p_to = 'cancelled' AND t.status IN ('blocked', 'ready', 'running', 'submitted', 'verifying', 'awaiting_approval', 'rejected', 'stale'))) THEN
    RAISE EXCEPTION 'task %: % -> % goes through a claim, its owner or a verifier, not a status change', p_task_id, t.status, p_to
      USING ERRCODE = 'BT001';
  END IF;
  -- The event says what decided the move; it can never pass for a claim, a release or a verification.
  IF p_kind IS NULL OR p_kind NOT IN ('rerun_requested', 'rerun_after_rejection', 'rerun_after_stale', 'cancelled', 'failed') THEN
    RAISE EXCEPTION 'unknown status change kind %', p_kind USING ERRCODE = 'BT003';
  END IF;
  UPDATE baton.tasks SET status = p_to,
         owner = CASE WHEN p_to = 'ready' THEN NULL ELSE owner END,
         -- policy.maxAttempts bounds the runs on one set of inputs: a task sent round again by an
         -- operator or for an upstream change starts afresh (a rejected one retried does not).
         attempts = CASE WHEN p_kind IN ('rerun_requested', 'rerun_after_stale') THEN 0 ELSE attempts END,
         lease_expires_at = NULL,
         -- A task sent round again is built on its dependencies' current verified revisions.
         upstream_revisions = CASE WHEN p_to = 'ready' THEN coalesce((
           SELECT jsonb_object_agg(u.key, u.verified_revision)
             FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = p_task_id
         ), '{}'::jsonb) ELSE upstream_revisions END
   WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, p_kind, p_actor, t.claim_version, NULL, p_reason,
    jsonb_build_object('from', t.status, 'to', p_to));
  IF t.status = 'awaiting_approval' THEN
    -- U11: nobody decides on a cancelled task any more.
    UPDATE baton.approvals SET decision = 'cancelled', decided_by = p_actor, decided_at = now(), reason = left(p_reason, 2000)
     WHERE task_id = p_task_id AND decision IS NULL;
  END IF;
  IF t.status = 'verified' THEN
    -- Dependents released against the old revision but not yet started wait for the new one.
    WITH reblocked AS (
      UPDATE baton.tasks dt SET status = 'blocked', upstream_revisions = '{}'::jsonb
        FROM baton.task_dependencies dep
       WHERE dep.depends_on = p_task_id AND dt.id = dep.task_id AND dt.status = 'ready'
      RETURNING dt.id, dt.claim_version
    )
    SELECT count(*) INTO STRICT v_count FROM (
      SELECT baton.event_append('task', r.id, 'reblocked', p_actor, r.claim_version, NULL,
        format('upstream %s is being re-run', t.key)) FROM reblocked r
    ) appended;
  END IF;
  RETURN t.status;
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_submit(p_task_id text, p_owner text, p_claim_version bigint, p_artifact jsonb)
 RETURNS baton.fenced_result
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  r baton.fenced_result;
BEGIN
  IF p_artifact IS NULL OR coalesce(p_artifact->>'revision', '') = '' THEN
    RAISE EXCEPTION 'task %: an artifact must name its revision', p_task_id USING ERRCODE = 'BT003';
  END IF;
  UPDATE baton.tasks t SET status = 'submitted', artifact = p_artifact, lease_expires_at = NULL
   WHERE t.id = p_task_id AND baton.claim_holds(t, p_owner, p_claim_version)
  RETURNING true, t.status, t.owner, t.claim_version, t.lease_expires_at INTO r;
  IF NOT FOUND THEN
    -- The same submit again (its first answer was lost): accepted, and nothing changes.
    IF EXISTS (SELECT 1 FROM baton.tasks WHERE id = p_task_id AND owner = p_owner AND claim_version = p_claim_version
                AND artifact->>'revision' = p_artifact->>'revision' AND status <> 'running') THEN
      RETURN baton.claim_accept_write(p_task_id);
    END IF;
    RETURN baton.claim_refuse_stale_write(p_task_id, p_owner, p_claim_version, 'submit');
  END IF;
  PERFORM baton.event_append('task', p_task_id, 'submitted', p_owner, p_claim_version, NULL, NULL,
    jsonb_build_object('revision', p_artifact->>'revision'));
  RETURN r;
END $function$
;

CREATE OR REPLACE FUNCTION baton.task_view(t baton.tasks)
 RETURNS SETOF baton.task_view
 LANGUAGE sql
 STABLE
AS $function$
  SELECT t.id, t.graph_id, t.key, t.spec, t.status, t.owner, t.claim_version, t.claimed_at, t.lease_expires_at,
         t.attempts, t.progress, t.artifact, t.verified_revision, t.upstream_revisions,
         coalesce(t.lease_expires_at < now(), false),
         coalesce((SELECT array_agg(u.key ORDER BY u.key) FROM baton.task_dependencies d JOIN baton.tasks u ON u.id = d.depends_on
                    WHERE d.task_id = t.id), '{}')
$function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_begin(p_task_id text, p_owner text, p_claim_version bigint, p_step text, p_tool text, p_params_hash text, p_preconditions jsonb DEFAULT NULL::jsonb, p_actor text DEFAULT NULL::text)
 RETURNS baton.tool_call_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_check_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_check_preconditions(p_key text, p_preconditions jsonb, p_actor text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_event(c baton.tool_calls, p_kind text, p_actor text, p_fence bigint, p_reason text, p_details jsonb)
 RETURNS bigint
 LANGUAGE sql
AS $function$
  SELECT baton.event_append('task', c.task_id, p_kind, p_actor, p_fence, NULL, p_reason,
    jsonb_build_object('step', c.step, 'tool', c.tool, 'key', c.idempotency_key, 'status', c.status, 'attempts', c.attempts)
      || coalesce(p_details, '{}'::jsonb));
$function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_fence(p_task_id text, p_owner text, p_claim_version bigint, p_action text)
 RETURNS baton.tool_call_outcome
 LANGUAGE plpgsql
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_read(p_id text)
 RETURNS SETOF baton.tool_calls
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
  SELECT x.* FROM (
    SELECT * FROM baton.tool_calls
    UNION ALL
    SELECT c.* FROM baton.archives a, jsonb_populate_recordset(NULL::baton.tool_calls, a.tool_calls) c
     WHERE a.graph_id = split_part(p_id, '/', 1)
  ) x
   WHERE x.task_id = p_id OR (p_id NOT LIKE '%/%' AND x.task_id LIKE baton.task_id_pattern_of(p_id))
   ORDER BY x.created_at, x.task_id, x.step
$function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_reconcile(p_task_id text, p_owner text, p_claim_version bigint, p_step text, p_finding text, p_result jsonb, p_reason text)
 RETURNS baton.tool_call_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_record(p_task_id text, p_owner text, p_claim_version bigint, p_step text, p_status text, p_result jsonb, p_error text, p_retryable boolean)
 RETURNS baton.tool_call_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_row_outcome(c baton.tool_calls, p_owner text, p_claim_version bigint)
 RETURNS baton.tool_call_outcome
 LANGUAGE sql
AS $function$
  SELECT ROW(true, 'running', p_owner, p_claim_version, c.idempotency_key, c.tool, c.params_hash, c.status, c.owner,
             c.claim_version, c.attempts, c.result, c.error, c.retryable, c.created_at, c.sent_at, c.updated_at)::baton.tool_call_outcome;
$function$
;

CREATE OR REPLACE FUNCTION baton.tool_call_send(p_task_id text, p_owner text, p_claim_version bigint, p_step text, p_replay boolean, p_preconditions jsonb DEFAULT NULL::jsonb, p_actor text DEFAULT NULL::text, p_rate_per_minute integer DEFAULT NULL::integer)
 RETURNS baton.tool_call_outcome
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
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
END $function$
;

CREATE OR REPLACE FUNCTION baton.verification_lock(p_task_id text, p_verifier text, p_claim_version bigint, p_revision text)
 RETURNS baton.tasks
 LANGUAGE plpgsql
AS $function$
DECLARE
  t baton.tasks := baton.task_lock(p_task_id);
BEGIN
  IF t.verifier IS DISTINCT FROM p_verifier OR p_verifier = t.owner THEN
    RAISE EXCEPTION 'task %: % did not start this verification (% did)', p_task_id, p_verifier, coalesce(t.verifier, 'nobody')
      USING ERRCODE = 'BT001';
  END IF;
  IF t.status <> 'verifying' OR t.claim_version <> p_claim_version OR t.artifact->>'revision' <> p_revision THEN
    RAISE EXCEPTION 'task %: verification of revision % at claim version % does not match the task (status %, revision %, claim version %)',
      p_task_id, p_revision, p_claim_version, t.status, t.artifact->>'revision', t.claim_version USING ERRCODE = 'BT001';
  END IF;
  RETURN t;
END $function$
;

CREATE OR REPLACE FUNCTION baton.verification_record(p_task_id text, p_verifier text, p_claim_version bigint, p_revision text, p_command text, p_exit_code integer, p_output_digest text, p_output_tail text)
 RETURNS TABLE(status text, released text[], staled text[])
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  t baton.tasks;
  v_passed boolean := p_exit_code = 0;
  v_released text[] := '{}';
  v_staled text[] := '{}';
  v_superseded jsonb;
  v_why text;
  v_id text;
  d baton.tasks;
  v_all_verified boolean;
  v_pins jsonb;
BEGIN
  t := baton.verification_lock(p_task_id, p_verifier, p_claim_version, p_revision);
  INSERT INTO baton.verifications (task_id, claim_version, revision, command, exit_code, output_digest, output_tail, verifier, passed)
    VALUES (p_task_id, p_claim_version, p_revision, p_command, p_exit_code, p_output_digest, coalesce(p_output_tail, ''), p_verifier, v_passed);

  IF NOT v_passed THEN
    UPDATE baton.tasks SET status = 'rejected' WHERE id = p_task_id;
    PERFORM baton.event_append('task', p_task_id, 'rejected', p_verifier, p_claim_version, NULL,
      -- The reason ends with the output's last line: for a refused artifact (T12), the refusal itself.
      format('%s exited %s', p_command, p_exit_code) || coalesce(': ' || left(nullif(btrim(
        (regexp_match(coalesce(p_output_tail, ''), '([^\n]*)\n*$'))[1]), ''), 500), ''),
      jsonb_build_object('revision', p_revision, 'output_digest', p_output_digest));
    RETURN QUERY SELECT 'rejected'::text, v_released, v_staled;
    RETURN;
  END IF;

  -- T8: the artifact was built on its pins; if an upstream task has moved on since, it is outdated.
  -- (An upstream verification running now waits for this task's lock, and then finds it verified.)
  SELECT jsonb_agg(jsonb_build_object('upstream', s.upstream, 'pinned', s.pinned, 'verified', s.verified, 'status', s.upstream_status)),
         string_agg(CASE WHEN s.upstream_status = 'stale' THEN format('%s is stale', s.upstream)
                         ELSE format('%s is verified at %s, not %s', s.upstream, s.verified, coalesce(s.pinned, 'the pinned revision')) END, '; ')
    INTO v_superseded, v_why
    FROM baton.task_list_superseded_pins(p_task_id) s;
  IF v_superseded IS NOT NULL THEN
    UPDATE baton.tasks SET status = 'stale' WHERE id = p_task_id;
    PERFORM baton.event_append('task', p_task_id, 'marked_stale', p_verifier, p_claim_version, NULL,
      format('revision %s passed on superseded pins: %s', p_revision, v_why),
      jsonb_build_object('revision', p_revision, 'superseded', v_superseded));
    PERFORM baton.task_propagate_stale(p_task_id, p_verifier);
    RETURN QUERY SELECT 'stale'::text, v_released, v_staled;
    RETURN;
  END IF;

  -- Pins stay what the artifact was built on (set at release); they are never rewritten here.
  UPDATE baton.tasks SET status = 'verified', verified_revision = p_revision WHERE id = p_task_id;
  PERFORM baton.event_append('task', p_task_id, 'verified', p_verifier, p_claim_version, NULL, NULL,
    jsonb_build_object('revision', p_revision, 'command', p_command, 'output_digest', p_output_digest));

  -- Dependents are locked in id order first; each is read again below, as marking one stale may
  -- already have made another (that depends on it) stale.
  PERFORM 1 FROM baton.task_dependencies dep JOIN baton.tasks dt ON dt.id = dep.task_id
    WHERE dep.depends_on = p_task_id ORDER BY dt.id FOR UPDATE OF dt;
  FOR v_id IN SELECT dep.task_id FROM baton.task_dependencies dep WHERE dep.depends_on = p_task_id ORDER BY dep.task_id LOOP
    SELECT * INTO STRICT d FROM baton.tasks WHERE id = v_id;
    v_all_verified := NOT EXISTS (
      SELECT 1 FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = d.id AND u.status <> 'verified'
    );
    IF d.status = 'blocked' AND v_all_verified THEN
      SELECT jsonb_object_agg(u.key, u.verified_revision) INTO v_pins
        FROM baton.task_dependencies x JOIN baton.tasks u ON u.id = x.depends_on WHERE x.task_id = d.id;
      UPDATE baton.tasks SET status = 'ready', upstream_revisions = v_pins WHERE id = d.id;
      PERFORM baton.event_append('task', d.id, 'released', p_verifier, d.claim_version, NULL,
        'all dependencies verified', jsonb_build_object('upstream_revisions', v_pins));
      v_released := v_released || d.id;
    ELSIF d.status = 'verified' AND (d.upstream_revisions->>t.key) IS DISTINCT FROM p_revision THEN
      UPDATE baton.tasks SET status = 'stale' WHERE id = d.id;
      PERFORM baton.event_append('task', d.id, 'marked_stale', p_verifier, d.claim_version, NULL,
        format('%s was verified at %s; this task was verified against %s', t.key, p_revision, d.upstream_revisions->>t.key),
        jsonb_build_object('upstream', t.key, 'old_revision', d.upstream_revisions->>t.key, 'new_revision', p_revision));
      PERFORM baton.task_propagate_stale(d.id, p_verifier);
      d.status := 'stale';
    END IF;
    -- A stale dependent whose dependencies are now all verified (marked just now, or before through
    -- this task or another) can be re-run: this verification is the one that wakes it.
    IF d.status = 'stale' AND v_all_verified THEN
      v_staled := v_staled || d.id;
    END IF;
  END LOOP;
  RETURN QUERY SELECT 'verified'::text, v_released, v_staled;
END $function$
;

CREATE OR REPLACE FUNCTION baton.verification_start(p_task_id text, p_verifier text)
 RETURNS TABLE(status text, claim_version bigint, artifact jsonb, spec jsonb, graph_id text, key text, upstream_revisions jsonb, repo text, base text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'baton', 'pg_temp'
AS $function$
DECLARE
  t baton.tasks;
BEGIN
  t := baton.task_lock(p_task_id);
  IF t.status NOT IN ('verified', 'rejected', 'stale', 'awaiting_approval') THEN
    IF t.owner = p_verifier THEN
      RAISE EXCEPTION 'task %: % produced the artifact and may not verify it', p_task_id, p_verifier USING ERRCODE = 'BT003';
    END IF;
    IF t.status = 'verifying' THEN
      -- An earlier verifier was lost before recording a result: this one starts over.
      UPDATE baton.tasks SET status = 'submitted' WHERE id = p_task_id;
      PERFORM baton.event_append('task', p_task_id, 'verification_restarted', p_verifier, t.claim_version, NULL,
        format('verifier %s did not record a result', t.verifier), jsonb_build_object('lost_verifier', t.verifier));
    END IF;
    UPDATE baton.tasks SET status = 'verifying', verifier = p_verifier WHERE id = p_task_id;
    PERFORM baton.event_append('task', p_task_id, 'verification_started', p_verifier, t.claim_version, NULL, NULL,
      jsonb_build_object('revision', t.artifact->>'revision'));
    t.status := 'verifying';
  END IF;
  RETURN QUERY SELECT t.status, t.claim_version, t.artifact, t.spec, t.graph_id, t.key, t.upstream_revisions, g.repo, g.base
    FROM baton.graphs g WHERE g.id = t.graph_id;
END $function$
;

-- triggers

CREATE TRIGGER events_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON baton.events FOR EACH STATEMENT EXECUTE FUNCTION baton.event_refuse_change();

CREATE TRIGGER task_notes_append_only BEFORE DELETE OR UPDATE ON baton.task_notes FOR EACH STATEMENT EXECUTE FUNCTION baton.record_refuse_change();

CREATE TRIGGER tasks_release_guard BEFORE UPDATE OF status ON baton.tasks FOR EACH ROW WHEN (((old.status <> 'ready'::text) AND (new.status = 'ready'::text))) EXECUTE FUNCTION baton.task_check_release();

CREATE TRIGGER tasks_state_machine BEFORE INSERT OR UPDATE ON baton.tasks FOR EACH ROW EXECUTE FUNCTION baton.task_check_change();

CREATE TRIGGER tool_calls_keep_rows BEFORE DELETE OR TRUNCATE ON baton.tool_calls FOR EACH STATEMENT EXECUTE FUNCTION baton.record_refuse_change();

CREATE TRIGGER tool_calls_state_machine BEFORE INSERT OR UPDATE ON baton.tool_calls FOR EACH ROW EXECUTE FUNCTION baton.tool_call_check_change();

CREATE TRIGGER verifications_append_only BEFORE DELETE OR UPDATE ON baton.verifications FOR EACH STATEMENT EXECUTE FUNCTION baton.record_refuse_change();

-- views


-- privileges

function baton.agent_approval_decide(text,text,text,text): {baton_owner=X/baton_owner}

function baton.agent_authenticate(text,text): {baton_owner=X/baton_owner,baton_agent=X/baton_owner,baton_worker=X/baton_owner}

function baton.agent_call(text,text,jsonb): {baton_owner=X/baton_owner,baton_agent=X/baton_owner,baton_worker=X/baton_owner}

function baton.agent_cancel(text,text,text,text): {baton_owner=X/baton_owner}

function baton.agent_inbox(baton.agent_tokens,jsonb): {baton_owner=X/baton_owner}

function baton.agent_invalid(text): {baton_owner=X/baton_owner}

function baton.agent_notes(text): {baton_owner=X/baton_owner}

function baton.agent_notes_refusal(baton.agent_tokens,text,text): {baton_owner=X/baton_owner}

function baton.agent_operation_scope(text): {baton_owner=X/baton_owner}

function baton.agent_operations(text,text[]): {baton_owner=X/baton_owner,baton_agent=X/baton_owner,baton_worker=X/baton_owner}

function baton.agent_refusals_summarise(text,integer,integer,integer): {baton_owner=X/baton_owner,baton_agent=X/baton_owner,baton_worker=X/baton_owner}

function baton.agent_refuse(baton.agent_tokens,text,text,text,jsonb): {baton_owner=X/baton_owner}

function baton.agent_rerun(text,text,text): {baton_owner=X/baton_owner}

function baton.agent_scope_denial(baton.agent_tokens,text,text): {baton_owner=X/baton_owner}

function baton.agent_session_serves_runs(): {baton_owner=X/baton_owner}

function baton.agent_task_context(baton.tasks,baton.agent_tokens): {baton_owner=X/baton_owner}

function baton.agent_token_by_secret(text): {baton_owner=X/baton_owner}

function baton.agent_token_create(text,text[],bigint,bytea,text,text[],text[],text[]): {baton_owner=X/baton_owner,baton_client=X/baton_owner}

function baton.agent_token_insert(text,text[],timestamp with time zone,bytea,text,text,bigint,text,text[],text[],text[]): {baton_owner=X/baton_owner}

function baton.agent_token_list(): {baton_owner=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.agent_token_refusal(baton.agent_tokens,text): {baton_owner=X/baton_owner}

function baton.agent_token_revoke(text,text,text): {baton_owner=X/baton_owner,baton_client=X/baton_owner}

function baton.agent_token_view(baton.agent_tokens): {baton_owner=X/baton_owner}

function baton.agent_view(baton.agent_tokens,text,jsonb): {baton_owner=X/baton_owner}

function baton.agent_view_event_log(baton.agent_tokens,jsonb): {baton_owner=X/baton_owner}

function baton.agent_view_events(baton.events[]): {baton_owner=X/baton_owner}

function baton.agent_view_graph(text): {baton_owner=X/baton_owner}

function baton.agent_view_graphs(jsonb): {baton_owner=X/baton_owner}

function baton.agent_view_objects(baton.agent_tokens,jsonb): {baton_owner=X/baton_owner}

function baton.agent_view_pools(): {baton_owner=X/baton_owner}

function baton.agent_view_task(text): {baton_owner=X/baton_owner}

function baton.agent_view_task_summary(baton.task_view): {baton_owner=X/baton_owner}

function baton.agent_view_tokens(): {baton_owner=X/baton_owner}

function baton.approval_decide(text,text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.approval_due_in_ms(text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.approval_list(): {baton_owner=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.approval_request(text,text,bigint,text,text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.approval_view(baton.approvals): {baton_owner=X/baton_owner}

function baton.archive_read(text): {baton_owner=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.claim_accept_write(text): {baton_owner=X/baton_owner}

function baton.claim_check_lease(integer): {baton_owner=X/baton_owner}

function baton.claim_fence(text,text,bigint): {baton_owner=X/baton_owner}

function baton.claim_holds(baton.tasks,text,bigint): {baton_owner=X/baton_owner}

function baton.claim_refuse_stale_write(text,text,bigint,text): {baton_owner=X/baton_owner}

function baton.claim_release(text,bigint,text,text,text,jsonb): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.claim_take(text,text,integer,boolean): {baton_owner=X/baton_owner}

function baton.claim_within_limits(text,jsonb): {baton_owner=X/baton_owner}

function baton.claims_silent(integer,integer): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.event_append(text,text,text,text,bigint,bigint,text,jsonb): {baton_owner=X/baton_owner}

function baton.event_read(text,text,bigint,boolean): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.event_refuse_change(): {baton_owner=X/baton_owner}

function baton.graph_add_tasks(text,text,jsonb,jsonb): {baton_owner=X/baton_owner,baton_client=X/baton_owner}

function baton.graph_add_tasks_json(text,text,jsonb,jsonb): {baton_owner=X/baton_owner}

function baton.graph_addition_problem(text,jsonb): {baton_owner=X/baton_owner}

function baton.graph_insert_tasks(text,text,jsonb,jsonb,jsonb): {baton_owner=X/baton_owner}

function baton.graph_list(text,interval,integer,text): {baton_owner=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.graph_progress(text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.graph_read(text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.graph_read_tasks(text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.graph_state_of(text[]): {baton_owner=X/baton_owner}

function baton.graph_submit(text,text,jsonb,jsonb): {baton_owner=X/baton_owner,baton_client=X/baton_owner}

function baton.health_check_read(integer): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.health_check_record(text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.inbox_reason(baton.agent_tokens,baton.events): {baton_owner=X/baton_owner}

function baton.metrics_events(bigint,integer): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner,baton_agent=X/baton_owner}

function baton.metrics_gauges(): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner,baton_agent=X/baton_owner}

function baton.object_accept(text,text,bigint): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_accept_offer(baton.objects,baton.object_offers,text,text): {baton_owner=X/baton_owner}

function baton.object_access(baton.objects,text): {baton_owner=X/baton_owner}

function baton.object_access_rank(text): {baton_owner=X/baton_owner}

function baton.object_approve(text,text,bigint,bigint): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_check_actor(text,text): {baton_owner=X/baton_owner}

function baton.object_check_content(text,text): {baton_owner=X/baton_owner}

function baton.object_check_view(text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_create(text,text,integer,text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_decline(text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_expire_if_silent(baton.objects,text,text): {baton_owner=X/baton_owner}

function baton.object_grant(text,text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_heartbeat(text,text,bigint): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_invalid(text): {baton_owner=X/baton_owner}

function baton.object_is_silent(baton.objects,boolean): {baton_owner=X/baton_owner}

function baton.object_lock(text): {baton_owner=X/baton_owner}

function baton.object_may(baton.objects,text,text): {baton_owner=X/baton_owner}

function baton.object_move_role(baton.objects,text,text,text,text,jsonb): {baton_owner=X/baton_owner}

function baton.object_moved_reason(baton.objects,text,bigint): {baton_owner=X/baton_owner}

function baton.object_offer(text,text,bigint,bigint,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_open_offer(text): {baton_owner=X/baton_owner}

function baton.object_outcome_of(baton.objects,boolean,text,text,boolean,bigint): {baton_owner=X/baton_owner}

function baton.object_paths_refused(text,text,bigint,text[]): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.object_read(text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_read_events(text,integer,integer): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_record_view(baton.objects,text): {baton_owner=X/baton_owner}

function baton.object_refuse(baton.objects,text,text,text,text,text,jsonb): {baton_owner=X/baton_owner}

function baton.object_refuse_access(baton.objects,text,text,text): {baton_owner=X/baton_owner}

function baton.object_refuse_move(text): {baton_owner=X/baton_owner}

function baton.object_refuse_no_offer(baton.objects,text,text,text): {baton_owner=X/baton_owner}

function baton.object_refuse_offer_open(baton.objects,text,text): {baton_owner=X/baton_owner}

function baton.object_refuse_unless_holder(baton.objects,text,bigint,text): {baton_owner=X/baton_owner}

function baton.object_refuse_version(baton.objects,text,bigint,text): {baton_owner=X/baton_owner}

function baton.object_release(text,text,bigint,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_reservations_for(text,bigint): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.object_reserve(text,text,text[]): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_show(text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_silence_details(baton.objects,text): {baton_owner=X/baton_owner}

function baton.object_silence_reason(baton.objects): {baton_owner=X/baton_owner}

function baton.object_suggest(text,text,bigint,text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_sweep(text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_take(text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_touch(baton.objects): {baton_owner=X/baton_owner}

function baton.object_ts(timestamp with time zone): {baton_owner=X/baton_owner}

function baton.object_withdraw(text,text,bigint): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.object_write(text,text,bigint,bigint,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.pool_limit_set(text,integer,text): {baton_owner=X/baton_owner,baton_client=X/baton_owner}

function baton.pool_offer(text,text,bigint,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.pool_run_state(text,bigint): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.proposal_decide(bigint,text,boolean,text): {baton_owner=X/baton_owner,baton_client=X/baton_owner}

function baton.proposal_list(text,boolean): {baton_owner=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.proposal_view(baton.proposals): {baton_owner=X/baton_owner}

function baton.read_schema_state(): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner,baton_agent=X/baton_owner}

function baton.record_refuse_change(): {baton_owner=X/baton_owner}

function baton.retention_apply(interval,text,boolean,integer): {baton_owner=X/baton_owner,baton_client=X/baton_owner}

function baton.retention_candidates(interval,integer): {baton_owner=X/baton_owner}

function baton.retention_moving(): {baton_owner=X/baton_owner}

function baton.run_token_issue(text,text,bigint,text,bytea): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.task_agent_identity(baton.tasks): {baton_owner=X/baton_owner}

function baton.task_check_change(): {baton_owner=X/baton_owner}

function baton.task_check_release(): {baton_owner=X/baton_owner}

function baton.task_claim(text,text,integer,integer): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.task_claim_next(text,integer,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.task_fail_attempt(text,text,bigint,text,boolean): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.task_heartbeat(text,text,bigint,integer,jsonb): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.task_id_of(text,text): {baton_owner=X/baton_owner}

function baton.task_id_pattern_of(text): {baton_owner=X/baton_owner}

function baton.task_list_superseded_pins(text): {baton_owner=X/baton_owner}

function baton.task_lock(text): {baton_owner=X/baton_owner}

function baton.task_note_add(text,text,bigint,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.task_propagate_stale(text,text): {baton_owner=X/baton_owner}

function baton.task_propose(baton.tasks,text,jsonb): {baton_owner=X/baton_owner}

function baton.task_read(text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.task_ready_or_blocked(text): {baton_owner=X/baton_owner}

function baton.task_rerun_stale(text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.task_set_status(text,text,text,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner}

function baton.task_submit(text,text,bigint,jsonb): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.task_view(baton.tasks): {baton_owner=X/baton_owner}

function baton.tool_call_begin(text,text,bigint,text,text,text,jsonb,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.tool_call_check_change(): {baton_owner=X/baton_owner}

function baton.tool_call_check_preconditions(text,jsonb,text): {baton_owner=X/baton_owner}

function baton.tool_call_event(baton.tool_calls,text,text,bigint,text,jsonb): {baton_owner=X/baton_owner}

function baton.tool_call_fence(text,text,bigint,text): {baton_owner=X/baton_owner}

function baton.tool_call_read(text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner,baton_client=X/baton_owner,baton_reader=X/baton_owner}

function baton.tool_call_reconcile(text,text,bigint,text,text,jsonb,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.tool_call_record(text,text,bigint,text,text,jsonb,text,boolean): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.tool_call_row_outcome(baton.tool_calls,text,bigint): {baton_owner=X/baton_owner}

function baton.tool_call_send(text,text,bigint,text,boolean,jsonb,text,integer): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.verification_lock(text,text,bigint,text): {baton_owner=X/baton_owner}

function baton.verification_record(text,text,bigint,text,text,integer,text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

function baton.verification_start(text,text): {baton_owner=X/baton_owner,baton_worker=X/baton_owner}

schema baton: {baton_owner=UC/baton_owner,baton_worker=U/baton_owner,baton_client=U/baton_owner,baton_reader=U/baton_owner,baton_agent=U/baton_owner}
