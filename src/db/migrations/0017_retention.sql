-- U11 (issue 26): retention. After a configured age, a finished graph's event log, its tasks' notes
-- and its tool-call ledger leave the live tables for these, moved by baton.retention_apply (an
-- owner-side function; for everything else the record stays append-only: src/db/functions/events.sql).
-- The log reads on from here (baton events, event_read); the notes and the ledger from the archive's row.
CREATE TABLE baton.archives (
  graph_id text PRIMARY KEY REFERENCES baton.graphs,
  archived_at timestamptz NOT NULL DEFAULT now(),
  archived_by text NOT NULL CHECK (length(archived_by) BETWEEN 1 AND 200),
  -- The graph's last event before it was archived.
  finished_at timestamptz NOT NULL,
  events integer NOT NULL,
  notes jsonb NOT NULL,
  tool_calls jsonb NOT NULL
);
-- The events moved, as they were (ids, subjects and sequence numbers kept), each with its graph.
CREATE TABLE baton.archived_events (LIKE baton.events);
ALTER TABLE baton.archived_events
  ADD COLUMN graph_id text NOT NULL REFERENCES baton.archives,
  ADD PRIMARY KEY (id);
CREATE INDEX archived_events_subject_idx ON baton.archived_events (subject_kind, subject_id, id);
CREATE INDEX archived_events_graph_idx ON baton.archived_events (graph_id, id);
