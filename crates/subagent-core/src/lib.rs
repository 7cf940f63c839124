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
//!
//! It depends on the SPI only (no async runtime, no transport), so the kind crates
//! (`subagent-claude`, `subagent-a2a`) and `task-tool` can all use it without depending on one
//! another. A third-party kind needs none of it: a kind reports its usage in its
//! `TaskOutcome` and a limit it hit as `TaskStatus::LimitReached`.

mod approval;
mod budget;
mod render;
mod store_error;

pub use approval::{ApprovalText, FixedApprover, PERSON_ONLY_DENIAL, SessionApprover};
pub use budget::{Budget, BudgetExt, DEFAULT_REMOTE_UNREPORTED_TOKENS, ModelPrice, ModelPrices};
pub use render::UsageTreeText;
pub use store_error::{StoreError, StoreKind};
