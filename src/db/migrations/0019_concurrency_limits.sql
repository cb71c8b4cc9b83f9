-- U11 (issue 26): concurrency limits. The limits a task is claimed under, set when its graph is
-- submitted (graph_submit) from its graph's policy.maxRunning and its own concurrency key:
-- {"graph": n, "key": "...", "keyLimit": n}; NULL when none applies, so a claim without limits
-- reads nothing more. Enforced by the claims (src/db/functions/claims.sql, claim_within_limits).
ALTER TABLE baton.tasks ADD COLUMN limits jsonb;
