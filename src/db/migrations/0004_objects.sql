-- Shared objects (SPEC O1-O6): files, configs, images and plans that several agents write.
-- Every change goes through the baton.object_* functions in src/db/functions/objects*.sql.
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
