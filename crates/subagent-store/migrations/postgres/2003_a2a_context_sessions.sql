-- The executor session each A2A conversation (contextId) of a hosted agent continues, so that a
-- follow-up message resumes it after a restart of the server. Pruned with the context's last
-- task.
CREATE TABLE IF NOT EXISTS a2a_context_sessions (
    scope      TEXT NOT NULL,
    context_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (scope, context_id)
);
