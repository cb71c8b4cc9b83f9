-- U11: a token people make may be limited to some pools: it takes work (pool.claim) from those only.
-- NULL: any pool, as before. A run token is bound to its claim and never names pools.
ALTER TABLE baton.agent_tokens ADD COLUMN pools text[];
ALTER TABLE baton.agent_tokens ADD CONSTRAINT agent_tokens_pools_check
  CHECK (pools IS NULL OR (task_id IS NULL AND cardinality(pools) BETWEEN 1 AND 50));
