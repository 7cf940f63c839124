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

mod db;
mod error;
pub mod migrations;
mod url;

pub use db::Db;
pub use error::StoreError;
pub use url::{StoreUrl, default_sqlite_path};
