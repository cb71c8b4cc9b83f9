-- Issue 25: a claim taken through the store path (task_claim_next) has no run attempt in Temporal,
-- so the workers' watch on silent claims (claims_silent) passes it over. Before, store-path claims
-- whose leases ran out one after another (a store-path claimer gone with thousands of claims; the
-- bench's own claim benchmark, ten minutes later) took every place of the watch's rounds, which
-- look at the latest silences first, and hid a frozen worker's fresh silence as long as they kept
-- coming. Claims taken before this migration count as a run's: all were watched before.
ALTER TABLE baton.tasks ADD COLUMN store_claim boolean NOT NULL DEFAULT false;
