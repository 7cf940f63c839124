-- The background-task ledger: one row per background task, rewritten as it runs and ends.
-- Times are Unix milliseconds; call, outcome and usage are JSON.
CREATE TABLE IF NOT EXISTS background_tasks (
    id           TEXT PRIMARY KEY NOT NULL,
    agent        TEXT NOT NULL,
    kind         TEXT NOT NULL,
    call         TEXT NOT NULL,
    status       TEXT NOT NULL,
    session_id   TEXT,
    partial      TEXT NOT NULL,
    outcome      TEXT,
    error        TEXT,
    usage        TEXT NOT NULL,
    owner        TEXT NOT NULL,
    started_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    finished_at  BIGINT,
    bytes        BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS background_tasks_running ON background_tasks (status, owner);
CREATE INDEX IF NOT EXISTS background_tasks_finished ON background_tasks (finished_at);
