//! The transcript store on a database (feature `transcripts`): one row per session, one row per
//! message, so a turn appends its messages instead of rewriting the session.

use subagent_runtime::{Transcript, TranscriptStore, TranscriptStoreError};
use subagent_spi::async_trait;
use subagent_spi::chat::ChatMessage;

use crate::sql::{len_i64, now_ms, with_pool};
use crate::{Db, StoreError};

/// A [`TranscriptStore`] on a [`Db`]: sessions survive restarts and are shared by every process
/// on the same database. Bounded by [`Retention`](crate::Retention) (age and total bytes), applied
/// by [`prune`](crate::prune).
///
/// Errors are returned by the fallible methods the runtime uses (`try_load`, `append`,
/// `replace`); the infallible `load`/`save` log them at `warn` (and `load` answers `None`).
#[derive(Debug, Clone)]
pub struct SqlTranscriptStore {
    db: Db,
}

/// Creates or updates session `$1` for an append of `$3` messages of `$4` bytes at `$5`: a new
/// session gets system prompt `$2`, an existing one keeps its own. Returns its message count.
const APPEND: &str = "INSERT INTO transcript_sessions \
     (id, system, messages, bytes, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) \
     ON CONFLICT (id) DO UPDATE SET \
     messages = transcript_sessions.messages + excluded.messages, \
     bytes = transcript_sessions.bytes + excluded.bytes, updated_at = excluded.updated_at \
     RETURNING messages";

/// Like [`APPEND`], for a session whose system prompt and messages are replaced.
const REPLACE: &str = "INSERT INTO transcript_sessions \
     (id, system, messages, bytes, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) \
     ON CONFLICT (id) DO UPDATE SET \
     system = excluded.system, messages = excluded.messages, bytes = excluded.bytes, \
     updated_at = excluded.updated_at \
     RETURNING messages";

impl SqlTranscriptStore {
    /// A store on `db` (already migrated by [`Db::open`]).
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    async fn load_inner(&self, id: &str) -> Result<Option<Transcript>, StoreError> {
        const SESSION: &str = "SELECT system FROM transcript_sessions WHERE id = $1";
        const MESSAGES: &str =
            "SELECT message FROM transcript_messages WHERE session_id = $1 ORDER BY seq";
        let (system, rows): (Option<Option<String>>, Vec<String>) = with_pool!(&self.db, |pool| {
            let mut tx = pool
                .begin()
                .await
                .map_err(StoreError::query("load transcript"))?;
            let system = sqlx::query_scalar(SESSION)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(StoreError::query("load transcript"))?;
            let rows = if system.is_some() {
                sqlx::query_scalar(MESSAGES)
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(StoreError::query("load transcript"))?
            } else {
                Vec::new()
            };
            tx.commit()
                .await
                .map_err(StoreError::query("load transcript"))?;
            (system, rows)
        });
        let Some(system) = system else {
            return Ok(None);
        };
        let messages = rows
            .iter()
            .map(|m| serde_json::from_str::<ChatMessage>(m))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StoreError::Corrupt {
                what: "transcript message",
                reason: format!("session {id}: {e}"),
            })?;
        Ok(Some(Transcript { system, messages }))
    }

    /// Writes `messages` to session `id`: appended after its messages (a new session gets
    /// `system`, an existing one keeps its own), or, with `replace`, instead of them (and of its
    /// system prompt).
    async fn write_inner(
        &self,
        id: &str,
        system: Option<&str>,
        messages: &[ChatMessage],
        replace: bool,
    ) -> Result<(), StoreError> {
        let encoded = encode(messages)?;
        let count = len_i64(encoded.len());
        let bytes = len_i64(encoded.iter().map(String::len).sum());
        let now = now_ms();
        let what = if replace {
            "save transcript"
        } else {
            "append transcript"
        };
        with_pool!(&self.db, |pool| {
            let q = StoreError::query;
            let mut tx = pool.begin().await.map_err(q(what))?;
            // Writes first, so SQLite takes its write lock at once (no read-then-upgrade).
            let total: i64 = sqlx::query_scalar(if replace { REPLACE } else { APPEND })
                .bind(id)
                .bind(system)
                .bind(count)
                .bind(bytes)
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(q(what))?;
            if replace {
                sqlx::query("DELETE FROM transcript_messages WHERE session_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(q(what))?;
            }
            let first = total - count;
            for (i, m) in encoded.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO transcript_messages (session_id, seq, message) VALUES ($1, $2, $3)",
                )
                .bind(id)
                .bind(first + len_i64(i))
                .bind(m)
                .execute(&mut *tx)
                .await
                .map_err(q(what))?;
            }
            tx.commit().await.map_err(q(what))?;
        });
        Ok(())
    }
}

fn encode(messages: &[ChatMessage]) -> Result<Vec<String>, StoreError> {
    messages
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()
        .map_err(|e| StoreError::Corrupt {
            what: "transcript message",
            reason: format!("cannot encode: {e}"),
        })
}

fn runtime_error(e: StoreError) -> TranscriptStoreError {
    TranscriptStoreError::new(e.to_string(), e)
}

#[async_trait]
impl TranscriptStore for SqlTranscriptStore {
    async fn load(&self, id: &str) -> Option<Transcript> {
        match self.load_inner(id).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "transcript not loaded");
                None
            }
        }
    }

    async fn save(&self, id: &str, t: Transcript) {
        if let Err(e) = self
            .write_inner(id, t.system.as_deref(), &t.messages, true)
            .await
        {
            tracing::warn!(session = %id, error = %e, "transcript not saved");
        }
    }

    async fn try_load(&self, id: &str) -> Result<Option<Transcript>, TranscriptStoreError> {
        self.load_inner(id).await.map_err(runtime_error)
    }

    async fn append(
        &self,
        id: &str,
        system: Option<&str>,
        messages: &[ChatMessage],
    ) -> Result<(), TranscriptStoreError> {
        self.write_inner(id, system, messages, false)
            .await
            .map_err(runtime_error)
    }

    async fn replace(&self, id: &str, t: Transcript) -> Result<(), TranscriptStoreError> {
        self.write_inner(id, t.system.as_deref(), &t.messages, true)
            .await
            .map_err(runtime_error)
    }
}
