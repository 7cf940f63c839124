-- The version of each A2A task: bumped by every write, and every write of a task state is a
-- compare-and-set on it (`TaskStore::save_versioned`), so writers fence each other. Rows
-- written before start at 1 (0 means "no such task" to a writer).
ALTER TABLE a2a_tasks ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
