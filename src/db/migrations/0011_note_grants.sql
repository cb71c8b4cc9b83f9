-- S6 (issue 19): notes by grant. A token people make may be granted the notes of some graphs and
-- some tasks (`baton token create --graph/--task`): it then reads and writes the notes of those
-- graphs' tasks and of those tasks, and no others. NULL in both: no grant, every task's notes (an
-- operator's token). A run token has no grant of its own: its run decides (its task, and reading
-- the upstream tasks it is pinned to). Functions: src/db/functions/tokens_agent_call.sql
-- (agent_notes_refusal) and tokens.sql (agent_token_create).
ALTER TABLE baton.agent_tokens
  ADD COLUMN note_graphs text[],
  ADD COLUMN note_tasks text[],
  ADD CONSTRAINT agent_tokens_note_grants_check CHECK ((note_graphs IS NULL) = (note_tasks IS NULL)),
  ADD CONSTRAINT agent_tokens_run_grants_check CHECK (task_id IS NULL OR note_graphs IS NULL);
