-- U11 (issue 26): paths tied to objects. An object may reserve repository paths (git pathspec
-- globs relative to a repository's top, as verify.protect names them): a run whose commit changes
-- one fails unless the run's agent holds the object. Functions: src/db/functions/objects.sql
-- (object_reserve, object_reservations_for, object_paths_refused).
ALTER TABLE baton.objects ADD COLUMN paths text[] NOT NULL DEFAULT '{}';
ALTER TABLE baton.objects ADD CONSTRAINT objects_paths_check CHECK (cardinality(paths) <= 100);
CREATE INDEX objects_reserving_idx ON baton.objects (key) WHERE paths <> '{}';
