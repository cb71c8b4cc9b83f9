-- A task's verifications, notes and approvals, read by task: the state machine's check that a task
-- becoming verified has a passed verification of its artifact (every verification does it), and
-- the task's page. Without these indexes each of those reads passed over every task's rows, so a
-- verification got slower with every verification ever recorded.
CREATE INDEX verifications_task_idx ON baton.verifications (task_id, claim_version);
CREATE INDEX task_notes_task_idx ON baton.task_notes (task_id, id);
CREATE INDEX approvals_task_idx ON baton.approvals (task_id, id);
