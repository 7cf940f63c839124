-- What wrote this database, for operators and for later migrations.
CREATE TABLE IF NOT EXISTS store_info (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
INSERT OR IGNORE INTO store_info (key, value) VALUES ('created_by', 'subagents');
