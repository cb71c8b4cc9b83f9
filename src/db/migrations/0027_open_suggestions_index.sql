-- Issue 25: objects.list (the agent API, the operator's page) gathers each listed object's open
-- suggestions. Read without an index, a list passed over every suggestion ever made to any object
-- (approved ones stay, SPEC O6), once per object listed. This index holds the open ones alone,
-- by object, in the order the list gives them.
CREATE INDEX object_suggestions_open_idx ON baton.object_suggestions (object_key, id) WHERE status = 'open';
