-- Pins checked at verification (SPEC T8, issue 13): a verification that passes on a pin its
-- upstream task has since superseded (verified again at another revision, or itself stale) leaves
-- the task stale instead of verified (src/db/functions/verification.sql).
INSERT INTO baton.task_transitions (from_status, to_status) VALUES ('verifying', 'stale');
