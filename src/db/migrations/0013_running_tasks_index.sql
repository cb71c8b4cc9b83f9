-- Issue 25: every worker looks a few times a second for claims whose lease ran out on the
-- database clock (claims_silent, src/db/functions/claims.sql), so the running tasks get an index
-- of their own: a few rows even in a graph of 50,000. Keyed by id, not by the lease, so a
-- heartbeat (which moves the lease) stays a HOT update.
CREATE INDEX tasks_running_idx ON baton.tasks (id) WHERE status = 'running';
