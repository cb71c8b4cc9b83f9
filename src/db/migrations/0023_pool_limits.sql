-- U11 (issue 26): concurrency limits per pool. An operator bounds how many of a pool's tasks run at
-- once across every graph (`baton pool limit`, baton.pool_limit_set); a pooled task carries its pool
-- in tasks.limits, so the claim counts the pool's running tasks under a transaction lock on the pool,
-- as it does a graph's and a key's (claim_within_limits, src/db/functions/claims.sql).
CREATE TABLE baton.pool_limits (
  pool text PRIMARY KEY CHECK (pool ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  max_running integer NOT NULL CHECK (max_running BETWEEN 1 AND 10000),
  set_by text NOT NULL,
  set_at timestamptz NOT NULL DEFAULT now()
);
-- Pooled tasks not finished yet are claimed within their pool's limit from now on too.
UPDATE baton.tasks SET limits = coalesce(limits, '{}'::jsonb) || jsonb_build_object('pool', spec->'run'->>'pool')
 WHERE spec->'run' ? 'pool' AND status NOT IN ('verified', 'failed', 'cancelled');
