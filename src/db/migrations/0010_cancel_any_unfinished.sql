-- T12 (issue 19): `baton cancel` cancels a task whatever it is waiting for, a verification included:
-- an artifact nobody can verify must not hold its task and graph forever. A verifier that records
-- its result after the cancellation is refused (record_verification wants the task verifying).
INSERT INTO baton.task_transitions (from_status, to_status) VALUES
  ('verifying', 'cancelled'),
  ('rejected', 'cancelled'),
  ('stale', 'cancelled');
