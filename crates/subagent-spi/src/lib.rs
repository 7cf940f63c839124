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
//! | [`TaskContext`] | cancellation, depth, limits, parent model, progress sink, [`Delegation`] handle and [`Approver`] for one run |
//! | [`Approver`] | answers [`ApprovalRequest`]s for tool calls that need consent ([`ApprovalDecision`]) |
//! | [`Kind`] | a kind's name, compared ignoring case; declared once, by its [`SubagentType`] |
//!
//! **Writing a kind:** implement [`SubagentKind`] alone: your own definition type, `resolve`
//! and `run` typed; it is a resolver and an executor through blanket impls, and
//! `SubagentType::from(kind)` registers it. Likewise a tool implements [`TypedTool`] with a
//! `schemars`-derived input type and is a [`Tool`].
//!
//! The runtime contracts the built-in crates implement and any plugin may reuse:
//! [`Tool`] (a function a model can call), [`ToolSource`] (tools made from an agent's
//! configuration, e.g. its MCP servers) and [`ChatModel`] (an LLM provider), with the message
//! records in [`chat`].
//!
//! Records are `#[non_exhaustive]`: build them with their constructors and `with_*` methods,
//! so a new field in a minor release breaks no plugin. `CHANGELOG.md` at the repository root
//! lists every change; `docs/migrating-to-spi-0.2.md` and `docs/migrating-to-spi-0.3.md` are
//! the guides for plugin authors.
//!
//! Contracts only: policy the stock crates share (budget accounting and prices, the stock
//! approvers, the approval reply protocol, usage trees as text) lives in `subagent-core`.
//!
//! Errors: [`SubagentError`] for orchestration, [`ToolError`] for tools, [`ModelError`] for models;
//! the latter two convert into the first.
//! A limit that stopped a run or refused a call is named by a [`Limit`].
//!
//! The crate deliberately avoids tokio, reqwest, axum and rmcp: its [`CancellationToken`] is a
//! small runtime-agnostic one, and streaming uses callbacks rather than a `Stream` type.
//! The `with_*` methods that just store their argument are derived with `derive_setters`, a
//! compile-time-only proc macro (no run-time dependency): one attribute per field instead of
//! a hand-written method each, with the same names, arguments, docs and `#[must_use]`.

mod approval;
mod budget;
mod cancel;
pub mod chat;
mod context;
mod delegation;
mod error;
mod fork;
mod inbox;
mod kind;
mod limit;
mod outcome;
mod progress;
mod reference;
mod subagent;
mod task_call;
mod tool;
mod tool_schema;
mod typed;

pub use approval::{ApprovalDecision, ApprovalRequest, Approver};
pub use budget::BudgetLimits;
pub use cancel::{CancellationToken, Cancelled as CancelledFuture};
pub use chat::{CacheScope, ChatModel, ChatRequest, ChatResponse, Effort};
pub use context::{Extensions, NoopProgressSink, ProgressSink, TaskContext};
pub use delegation::Delegation;
pub use error::{BoxError, ModelError, SubagentError, ToolError};
pub use fork::ForkSource;
#[allow(deprecated)]
pub use fork::{FORK_SUBAGENT_TYPE, is_fork};
#[allow(deprecated)]
pub use inbox::{
    DEFAULT_MAX_INBOX_MESSAGES, DEFAULT_MAX_MESSAGE_BYTES, Inbox, InboxError, InboxLimits,
};
pub use inbox::{InboxMessage, MessageInbox};
pub use kind::Kind;
pub use limit::{Limit, LimitScope};
pub use outcome::{MAX_NODE_ANSWER_BYTES, TaskOutcome, TaskStatus, Usage, UsageNode};
pub use progress::{ProgressEvent, ProgressKind};
pub use reference::SubagentReference;
pub use subagent::{SubagentDefinition, SubagentExecutor, SubagentResolver, SubagentType};
pub use task_call::TaskCall;
pub use tool::{Tool, ToolEffect, ToolOutput, ToolSource, ToolSpec};
pub use tool_schema::{compact_schema, input_schema};
pub use typed::{SubagentKind, TypedTool};

/// Re-exported so plugins use the same `async_trait` macro as the traits here.
pub use async_trait::async_trait;
