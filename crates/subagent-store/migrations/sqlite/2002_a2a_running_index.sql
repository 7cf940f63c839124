-- The lease index holds running tasks only (submitted, working and unspecified: the states the
-- lease sweep, the restart sweep and the lease renewal look for), so a task saved in a final or
-- interrupted state, most of them, writes no page of it.
DROP INDEX IF EXISTS a2a_tasks_by_lease;
CREATE INDEX IF NOT EXISTS a2a_tasks_running ON a2a_tasks (state, lease_until_ms) WHERE state IN (0, 1, 2);
