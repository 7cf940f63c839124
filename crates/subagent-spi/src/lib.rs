//! # subagent-spi
//!
//! The service-provider interface of the `subagents` framework: **depend on this crate to write a
//! plugin**. It holds traits and plain records only, no transport and no async runtime, so a
//! third-party subagent kind, a tool, or an LLM provider can be written against it alone.
//!
//! The orchestration contracts, in the order a call flows through them:
//!
//! | item | role |
//! |---|---|
//! | [`SubagentReference`] | a pointer to an agent: URI + kind + metadata |
//! | [`SubagentResolver`] | turns a reference into a [`SubagentDefinition`] (reads a file, fetches a card, ...) |
//! | [`SubagentDefinition`] | name, description and protocol-specific configuration of one agent |
//! | [`SubagentExecutor`] | runs a [`TaskCall`] against a definition and returns a [`TaskOutcome`] |
//! | [`SubagentType`] | one kind = one resolver + one executor (+ default references) |
//! | [`TaskContext`] | cancellation, depth, limits, parent model and progress sink for one run |
//!
//! The runtime contracts the built-in crates implement and any plugin may reuse:
//! [`Tool`] (a function a model can call) and [`ChatModel`] (an LLM provider), with the message
//! records in [`chat`].
//!
//! Errors: [`SubagentError`] for orchestration, [`ToolError`] for tools, [`ModelError`] for models;
//! the latter two convert into the first.
//!
//! The crate deliberately avoids tokio, reqwest, axum and rmcp: its [`CancellationToken`] is a
//! small runtime-agnostic one, and streaming uses callbacks rather than a `Stream` type.

mod cancel;
pub mod chat;
mod context;
mod error;
mod outcome;
mod progress;
mod reference;
mod subagent;
mod task_call;
mod tool;

pub use cancel::{CancellationToken, Cancelled as CancelledFuture};
pub use chat::{ChatModel, ChatRequest, ChatResponse};
pub use context::{Extensions, NoopProgressSink, ProgressSink, TaskContext};
pub use error::{BoxError, ModelError, SubagentError, ToolError};
pub use outcome::{TaskOutcome, TaskStatus, Usage, UsageNode};
pub use progress::{ProgressEvent, ProgressKind};
pub use reference::SubagentReference;
pub use subagent::{SubagentDefinition, SubagentExecutor, SubagentResolver, SubagentType};
pub use task_call::TaskCall;
pub use tool::{Tool, ToolEffect, ToolOutput, ToolSpec};

/// Re-exported so plugins use the same `async_trait` macro as the traits here.
pub use async_trait::async_trait;
