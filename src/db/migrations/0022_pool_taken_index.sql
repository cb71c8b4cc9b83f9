-- U11 (issue 26): pool.claim shares a pool's agents between graphs in turn, counting each graph's
-- runs taken and not yet submitted (src/db/functions/agent_door.sql): indexed, so it reads only those.
CREATE INDEX pool_runs_taken_idx ON baton.pool_runs (pool) WHERE agent IS NOT NULL AND revision IS NULL;
