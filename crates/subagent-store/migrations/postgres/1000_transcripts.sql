-- Transcripts of local agent runs, one row per message, so a turn appends instead of rewriting.
CREATE TABLE IF NOT EXISTS transcript_sessions (
    id         TEXT PRIMARY KEY NOT NULL,
    system     TEXT,
    messages   BIGINT NOT NULL DEFAULT 0,
    bytes      BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS transcript_sessions_updated ON transcript_sessions (updated_at);
CREATE TABLE IF NOT EXISTS transcript_messages (
    session_id TEXT NOT NULL REFERENCES transcript_sessions (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
