//! # subagent-core
//!
//! Policy the `subagents` crates share on top of the plugin contract (`subagent-spi`), kept out
//! of the contract so it can change without breaking plugins:
//!
//! | item | what |
//! |---|---|
//! | [`Budget`], [`BudgetExt`] | budget accounting over a delegated subtree, carried by a `TaskContext` |
//! | [`ModelPrices`], [`ModelPrice`] | per-model prices a cost limit counts with |
//! | [`FixedApprover`], [`SessionApprover`] | the stock approvers (`--yes`, nobody to ask, remembering "always") |
//! | [`ApprovalText`] | the approval reply protocol (`yes` / `always` / `no: MESSAGE`) |
//! | [`UsageTreeText`] | a usage tree rendered as indented lines |
//! | [`StoreError`], [`StoreKind`] | the error of the durable-store contracts (transcripts, the task ledger) |
//! | [`Inbox`], [`InboxLimits`], [`InboxError`] | the bounded inbox of a running task (`SendMessage`), the run reads it as a `MessageInbox` |
//! | [`is_fork`], [`FORK_SUBAGENT_TYPE`] | which `subagent_type` asks for a fork |
//! | [`paths::real_prefix`] | a path with its existing prefix's symlinks resolved (protected and trusted paths) |
//! | [`telemetry`] | the OpenTelemetry GenAI `invoke_agent` span and its usage fields |
//!
//! It depends on the SPI and `tracing` only (no async runtime, no transport), so the kind crates
//! (`subagent-claude`, `subagent-a2a`) and `task-tool` can all use it without depending on one
//! another. A third-party kind needs none of it: a kind reports its usage in its
//! `TaskOutcome` and a limit it hit as `TaskStatus::LimitReached`.
//!
//! **Budgets and kinds.** A kind may charge the caller's [`Budget`] as it goes (the stock
//! Claude-style loop charges each turn, the A2A client its peer's usage report); whatever of its
//! reported usage it did not charge is charged when it ends (the `Task` tool runs each child
//! with a [`Budget::meter`] and [`Budget::settle`]s its `TaskOutcome`), so every reported token
//! and turn counts exactly once and no kind can lift a limit the user set by not charging it. A
//! report that spends the budget turns the child's completed result into `limit_reached`
//! naming the budget (its text kept), and the caller's next delegation is refused.

mod approval;
mod budget;
mod fork;
mod inbox;
pub mod paths;
mod render;
mod store_error;
pub mod telemetry;

pub use approval::{ApprovalText, FixedApprover, PERSON_ONLY_DENIAL, SessionApprover};
pub use budget::{Budget, BudgetExt, DEFAULT_REMOTE_UNREPORTED_TOKENS, ModelPrice, ModelPrices};
pub use fork::{FORK_SUBAGENT_TYPE, is_fork};
pub use inbox::{
    DEFAULT_MAX_INBOX_MESSAGES, DEFAULT_MAX_MESSAGE_BYTES, Inbox, InboxError, InboxLimits,
};
pub use render::UsageTreeText;
pub use store_error::{StoreError, StoreKind};
