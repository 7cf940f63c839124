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

    async fn append_inner(
        &self,
        id: &str,
        system: Option<&str>,
        messages: &[ChatMessage],
    ) -> Result<(), StoreError> {
        let encoded = encode(messages)?;
        let bytes: usize = encoded.iter().map(String::len).sum();
        let now = now_ms();
        with_pool!(&self.db, |pool| {
            let q = StoreError::query;
            let mut tx = pool.begin().await.map_err(q("append transcript"))?;
            // Writes first, so SQLite takes its write lock at once (no read-then-upgrade).
            sqlx::query(
                "INSERT INTO transcript_sessions (id, system, messages, bytes, created_at, updated_at) \
                 VALUES ($1, $2, 0, 0, $3, $3) ON CONFLICT (id) DO NOTHING",
            )
            .bind(id)
            .bind(system)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(q("append transcript"))?;
            let count: i64 = sqlx::query_scalar(
                "UPDATE transcript_sessions SET messages = messages + $1, bytes = bytes + $2, \
                 updated_at = $3 WHERE id = $4 RETURNING messages",
            )
            .bind(len_i64(encoded.len()))
            .bind(len_i64(bytes))
            .bind(now)
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .map_err(q("append transcript"))?;
            let first = count - len_i64(encoded.len());
            for (i, m) in encoded.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO transcript_messages (session_id, seq, message) VALUES ($1, $2, $3)",
                )
                .bind(id)
                .bind(first + len_i64(i))
                .bind(m)
                .execute(&mut *tx)
                .await
                .map_err(q("append transcript"))?;
            }
            tx.commit().await.map_err(q("append transcript"))?;
        });
        Ok(())
    }

    async fn replace_inner(&self, id: &str, t: &Transcript) -> Result<(), StoreError> {
        let encoded = encode(&t.messages)?;
        let bytes: usize = encoded.iter().map(String::len).sum();
        let now = now_ms();
        with_pool!(&self.db, |pool| {
            let q = StoreError::query;
            let mut tx = pool.begin().await.map_err(q("save transcript"))?;
            sqlx::query(
                "INSERT INTO transcript_sessions (id, system, messages, bytes, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (id) DO UPDATE SET \
                 system = excluded.system, messages = excluded.messages, bytes = excluded.bytes, \
                 updated_at = excluded.updated_at",
            )
            .bind(id)
            .bind(t.system.as_deref())
            .bind(len_i64(encoded.len()))
            .bind(len_i64(bytes))
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(q("save transcript"))?;
            sqlx::query("DELETE FROM transcript_messages WHERE session_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(q("save transcript"))?;
            for (i, m) in encoded.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO transcript_messages (session_id, seq, message) VALUES ($1, $2, $3)",
                )
                .bind(id)
                .bind(len_i64(i))
                .bind(m)
                .execute(&mut *tx)
                .await
                .map_err(q("save transcript"))?;
            }
            tx.commit().await.map_err(q("save transcript"))?;
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
        if let Err(e) = self.replace_inner(id, &t).await {
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
        self.append_inner(id, system, messages)
            .await
            .map_err(runtime_error)
    }

    async fn replace(&self, id: &str, t: Transcript) -> Result<(), TranscriptStoreError> {
        self.replace_inner(id, &t).await.map_err(runtime_error)
    }
}
