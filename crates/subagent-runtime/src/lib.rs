//! # subagent-runtime
//!
//! The agent loop that makes a local subagent think, written against the `subagent-spi`
//! contracts only ([`ChatModel`](subagent_spi::ChatModel), [`Tool`](subagent_spi::Tool),
//! [`TaskContext`](subagent_spi::TaskContext)), so it works with any provider and any tool set.
//!
//! A run follows the subagent pattern: the child starts from a **fresh message list** (or a stored
//! transcript it resumes), sees only the **tools it was given**, is bounded by a **turn limit**
//! (plus optional token and time budgets), and returns **only its final text** to the caller.
//! Everything in between (tool calls, tool output) stays in the transcript, which is saved in a
//! [`TranscriptStore`] under a session id so a later run can continue it.
//!
//! | item | role |
//! |---|---|
//! | [`AgentRuntime`] | runs the loop: model call, tool calls (concurrently), results back, repeat |
//! | [`RunSpec`] / [`RunInput`] / [`Limits`] | what one run needs: system prompt, input, tools, model, limits |
//! | [`TranscriptStore`] / [`InMemoryTranscriptStore`] / [`Transcript`] | where transcripts are kept for resuming |
//! | [`ModelRegistry`] | maps model names and aliases (`default`, `sonnet`, user aliases, spec strings) to models |
//!
//! ```no_run
//! # async fn demo(model: std::sync::Arc<dyn subagent_spi::ChatModel>) -> Result<(), subagent_spi::SubagentError> {
//! use subagent_runtime::{AgentRuntime, RunSpec};
//! use subagent_spi::TaskContext;
//!
//! let runtime = AgentRuntime::default();
//! let spec = RunSpec::new(model, "List the crates in this workspace.")
//!     .with_system("You are a careful code explorer.");
//! let outcome = runtime.run(spec, &TaskContext::new()).await?;
//! println!("{} ({})", outcome.text, outcome.status);
//! # Ok(()) }
//! ```

mod agent;
mod alias;
mod cache_scope;
mod compact;
mod fork;
mod registry;
mod repeat;
mod reply_usage;
mod spec;
mod stall;
mod steer;
mod stop;
mod store;
mod structured;
mod window;

pub use agent::{AgentRuntime, EMPTY_REPLY_NUDGE, TRUNCATION_MARKER_PREFIX, truncate_output};
pub use compact::{
    KEEP_TURNS, SUMMARY_PREFIX, TARGET_PERCENT, TRIGGER_PERCENT, TRIM_MIN_CHARS,
    TRIMMED_MARKER_PREFIX, fixed_prompt_tokens,
};
pub use registry::{ModelFactory, ModelRegistry, StandIn};
pub use spec::{Limits, RunInput, RunSpec};
pub use stall::STALLED_LIMIT_PREFIX;
pub use steer::STEER_MESSAGE_PREFIX;
pub use stop::NO_ANSWER_PREFIX;
pub use store::{
    InMemoryTranscriptStore, Transcript, TranscriptStore, TranscriptStoreError, TranscriptStoreKind,
};
pub use subagent_schema::INVALID_OUTPUT_PREFIX;
pub use window::{
    DEFAULT_CONTEXT_WINDOW, MODEL_WINDOWS, MODEL_WINDOWS_DATE, context_window, known_context_window,
};

/// Internals exposed to this crate's benches only (`--features bench-internals`); not part of
/// the API, may change in any release.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals {
    pub use crate::compact::set_disabled_for_bench as set_compaction_disabled;
}
