-- Workflow runs and the journal of their calls (subagent-workflow): one row per run, one row
-- per agent()/ask() call keyed by its position. Times are Unix milliseconds; args, result,
-- value and usage are JSON.
CREATE TABLE IF NOT EXISTS workflow_runs (
    id         TEXT PRIMARY KEY NOT NULL,
    script     TEXT NOT NULL,
    args       TEXT NOT NULL,
    status     TEXT NOT NULL,
    result     TEXT,
    error      TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS workflow_runs_created ON workflow_runs (created_at);
CREATE INDEX IF NOT EXISTS workflow_runs_updated ON workflow_runs (updated_at);
CREATE TABLE IF NOT EXISTS workflow_calls (
    run_id      TEXT NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    position    BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    agent       TEXT NOT NULL,
    input_hash  TEXT NOT NULL,
    description TEXT NOT NULL,
    state       TEXT NOT NULL,
    task_id     TEXT,
    session_id  TEXT,
    seq         BIGINT,
    value       TEXT,
    usage       TEXT,
    started_at  BIGINT NOT NULL,
    finished_at BIGINT,
    PRIMARY KEY (run_id, position)
);
