-- U11 (issue 26): per-tool rate limits. A send of a tool with a rate limit counts the calls of that
-- tool sent in the last minute (tool_call_send): indexed by tool and send time, so it reads only those.
CREATE INDEX tool_calls_tool_sent_idx ON baton.tool_calls (tool, sent_at);
