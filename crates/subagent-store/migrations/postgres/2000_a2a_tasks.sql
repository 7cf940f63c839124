-- The A2A server's tasks (subagent-store's `a2a` module). `body` is the task as A2A 1.0 JSON;
-- the other columns are what listing, leases and retention query.
CREATE TABLE IF NOT EXISTS a2a_tasks (
    id             TEXT PRIMARY KEY NOT NULL,
    scope          TEXT NOT NULL,
    context_id     TEXT NOT NULL,
    state          BIGINT NOT NULL,
    terminal       BIGINT NOT NULL,
    status_ts      TEXT NOT NULL,
    updated_ms     BIGINT NOT NULL,
    bytes          BIGINT NOT NULL,
    owner          TEXT,
    lease_until_ms BIGINT,
    body           TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_status ON a2a_tasks (scope, status_ts DESC, updated_ms DESC);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_context ON a2a_tasks (scope, context_id, status_ts DESC);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_lease ON a2a_tasks (state, lease_until_ms);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_age ON a2a_tasks (terminal, updated_ms);
-- Events of running tasks for subscribers on other replicas (LISTEN/NOTIFY carries their
-- ids); short-lived, pruned after minutes.
CREATE TABLE IF NOT EXISTS a2a_task_events (
    id         BIGSERIAL PRIMARY KEY,
    task_id    TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_task_events_by_age ON a2a_task_events (created_ms);
