//! Durable stores for `subagents`, on SQLite (the default for the command line) or PostgreSQL
//! (several replicas sharing one database), through [`sqlx`].
//!
//! The contracts live with the crates that use them (the transcript store in
//! `subagent-runtime`, the background-task ledger in `task-tool`, the A2A server's task store in
//! `subagent-a2a`); this crate implements them on a database. Library users who keep everything
//! in memory never compile it.
//!
//! - [`StoreUrl`] names a store: `memory`, `sqlite:PATH` or `postgres://...`. Its `Display`
//!   never shows a password.
//! - [`Db::open`] connects (SQLite in WAL mode, the file and its directory created when
//!   missing) and runs the embedded, versioned migrations (see [`migrations`]).
//! - Feature `a2a`: [`a2a::SqlTaskStore`], the A2A server's task store (restarts, replicas on
//!   PostgreSQL with LISTEN/NOTIFY, retention).
//! - `SqlTranscriptStore` (feature `transcripts`): transcripts, appended turn by turn, so
//!   `resume` works across restarts.
//! - `SqlTaskLedger` (feature `ledger`): background tasks, so `TaskOutput` works across
//!   restarts and tasks of a process that died read back as `interrupted`.
//! - `SqlWorkflowJournal` (feature `workflow`): workflow runs and their calls, so a workflow
//!   resumes after a crash without running a finished agent call again.
//! - [`prune`] / [`Retention`] / [`spawn_maintenance`]: age, count and byte bounds on what is
//!   persisted, applied at open, periodically, and by `subagents prune`.

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "a2a")]
pub mod a2a;
mod db;
mod error;
#[cfg(feature = "ledger")]
mod ledger;
pub mod migrations;
mod prune;
mod sql;
#[cfg(feature = "transcripts")]
mod transcripts;
mod url;
#[cfg(feature = "workflow")]
mod workflow;
#[cfg(any(feature = "a2a", feature = "ledger"))]
mod writer;

pub use db::Db;
pub use error::StoreError;
#[cfg(feature = "ledger")]
pub use ledger::{OWNER_LEASE, SqlTaskLedger, recover_interrupted};
pub use prune::{PruneReport, Retention, maintain, prune, spawn_maintenance};
#[cfg(feature = "transcripts")]
pub use transcripts::SqlTranscriptStore;
pub use url::{StoreUrl, default_sqlite_path};
#[cfg(feature = "workflow")]
pub use workflow::SqlWorkflowJournal;
