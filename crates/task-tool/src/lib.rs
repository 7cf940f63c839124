//! # task-tool
//!
//! The one tool a main agent needs to delegate: **`Task`**, with its companions **`TaskOutput`**
//! and **`TaskStop`** for background runs.
//!
//! [`TaskTool::builder`] takes [`SubagentType`]s (one per protocol kind: a resolver and an
//! executor) and [`SubagentReference`]s (pointers to agents), resolves every reference
//! concurrently with the first type that accepts it, and builds a registry of named agents. A
//! `Task` call then looks the agent up by name, picks the executor of its kind, and runs it:
//!
//! * in the **foreground**: the call returns the agent's final text (plus a one-line footer with
//!   its status, session id and usage);
//! * in the **background** (`run_in_background: true`): the call returns a `task_...` id at once;
//!   `TaskOutput` waits for or reads the result, `TaskStop` cancels it;
//! * **in parallel**: calls are independent; nothing is locked across an await;
//! * **resumed**: `resume` with an earlier `session` id routes to the same agent and executor;
//! * **durable** (optional): with a [`TaskLedger`] ([`TaskToolBuilder::ledger`]) background
//!   tasks are recorded as they run, so `TaskOutput` reads a result after a restart and a task
//!   whose process died reads back as `interrupted`, with its partial output and session.
//! * **capped**: at most [`max_concurrent`](TaskToolBuilder::max_concurrent) children (default
//!   20) work at once over the whole tree; foreground calls over it wait their turn, background
//!   ones show `queued` in `TaskOutput`. A run waiting for its own children gives its place back
//!   for the wait, so nesting never deadlocks on the cap. A host serving several callers marks
//!   each one's calls with a [`BackgroundCaller`]: each then gets a fair share of the background
//!   limit (see [`BackgroundCaller`]'s module rule: `max_background / (callers + 1)`).
//! * **scoped**: a run reaches (reads, stops, answers, messages) only the background tasks it
//!   started itself; the host's own API ([`TaskTool::output`], [`TaskTool::stop`]...) reaches
//!   every task.
//! * **budgeted**: a child's reported usage is charged to the caller's budget (`subagent-core`'s
//!   `Budget`) exactly once whatever its kind: what the kind did not charge as it went is
//!   charged when the child ends (a background child's when its result is recorded). A report
//!   that spends the budget makes the result `limit_reached` naming it (the text kept), and a
//!   spent budget refuses the next `Task` call.
//!
//! The crate depends on the SPI and the shared policy crates (`subagent-core` for budgets and
//! approvals, `subagent-schema` for typed results), never on a particular kind: kinds are
//! plugged in.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use subagent_spi::*;
//! # async fn demo(my_kind: SubagentType) -> Result<(), Box<dyn std::error::Error>> {
//! let task = task_tool::TaskTool::builder()
//!     .subagent_type(my_kind)
//!     .subagent_reference(SubagentReference::new("fn:echo", "FN"))
//!     .build()
//!     .await?;
//! let out = task
//!     .call_tool(serde_json::json!({
//!         "description": "say hi",
//!         "prompt": "hello",
//!         "subagent_type": "echo"
//!     }), &TaskContext::new())
//!     .await;
//! println!("{}", out.content);
//! # Ok(()) }
//! ```
//!
//! [`SubagentType`]: subagent_spi::SubagentType
//! [`SubagentReference`]: subagent_spi::SubagentReference

mod background;
mod charge;
mod concurrency;
mod config;
mod dispatch;
mod failed;
mod fork;
mod format;
mod ids;
mod inventory;
mod ledger;
mod mailbox;
mod metering;
mod offer;
mod persist;
mod registry;
mod routing;
mod share;
mod steer;
mod typed;

pub use background::{BackgroundSnapshot, BackgroundState};
pub use concurrency::DEFAULT_MAX_CONCURRENT;
pub use config::{DEFAULT_MAX_DEPTH, MAX_DEPTH_CAP, TaskConfig};
pub use inventory::MAX_LISTED;
pub use ledger::{LedgerError, LedgerKind, TaskLedger, TaskRecord};
pub use offer::Companions;
pub use registry::{ApprovalAnswer, TaskOutputInput, TaskOutputTool, TaskStopInput, TaskStopTool};
pub use registry::{BuildError, ReferenceFailure, TaskToolBuilder};
pub use registry::{Dispatch, TaskTool, TaskTools};
pub use registry::{SendMessageInput, SendMessageTool};
pub use share::BackgroundCaller;
pub use steer::{MAX_NAME_CHARS, MessageReceipt, SendMessageError};
