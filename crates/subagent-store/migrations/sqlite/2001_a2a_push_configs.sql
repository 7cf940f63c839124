-- Push-notification configs of the A2A server's tasks (at most 16 per task, enforced by the
-- store); `seq` keeps the order they were first saved. Pruned with their task.
CREATE TABLE IF NOT EXISTS a2a_push_configs (
    task_id   TEXT NOT NULL,
    config_id TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    body      TEXT NOT NULL,
    PRIMARY KEY (task_id, config_id)
);
