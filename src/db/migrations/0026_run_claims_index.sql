-- Issue 25: the workers' watch on silent claims (claims_silent, four times a second on every worker)
-- looks at claims a run took, never the store path's (migration 0025). Read through the index of
-- every running task (0013), each round passed over every store-path claim held: 7.9 ms a round
-- with 50,000 of them. This index holds the runs' claims alone (0013's stays: the concurrency
-- limits count running tasks through it). Keyed by id, as 0013's, so a heartbeat (which moves the
-- lease) stays a HOT update.
CREATE INDEX tasks_run_claims_idx ON baton.tasks (id) WHERE status = 'running' AND NOT store_claim;
