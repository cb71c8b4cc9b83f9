-- U11: every worker sweeps the held objects once a second for silent holders (baton.object_sweep),
-- so the held ones get an index of their own, in the sweep's order: a few rows however many objects
-- there are. Keyed by key, not by the heartbeat, so a holder's heartbeat stays a HOT update.
CREATE INDEX objects_held_idx ON baton.objects (key) WHERE holder IS NOT NULL;
