-- SPEC U4 (issue 23): the operator's views (graphs.list, graph.show, task.show, events.list,
-- objects.list, pools.list) show the whole deployment — every task's verification and its output,
-- tool-call results, the event log — so they get a scope of their own, `view`, which no token has
-- unless it is given it (admin includes it). `read` keeps its meaning: what an agent reads of its
-- own work. Functions: src/db/functions/agent_door.sql, agent_views.sql, tokens.sql.
ALTER TABLE baton.agent_tokens
  DROP CONSTRAINT agent_tokens_scopes_check,
  ADD CONSTRAINT agent_tokens_scopes_check CHECK (scopes <@ ARRAY['read', 'notes', 'objects', 'submit', 'view', 'admin']);
