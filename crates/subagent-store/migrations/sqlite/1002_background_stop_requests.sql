-- A stop asked for by another process (`subagents tasks stop`): the owner of the running task
-- polls for it and cancels the task. Unix milliseconds of the request; NULL when none.
ALTER TABLE background_tasks ADD COLUMN stop_requested BIGINT;
