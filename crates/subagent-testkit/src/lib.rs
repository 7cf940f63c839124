//! # subagent-testkit
//!
//! Test helpers for the `subagents` workspace and for plugin authors testing a kind of their own
//! (published, for use as a dev-dependency). The main
//! piece is [`ScriptedModelServer`]: a real HTTP server on `127.0.0.1` (ephemeral port) that
//! speaks the **OpenAI Chat Completions** and **Anthropic Messages** wire formats, streamed (SSE,
//! framed as the real APIs frame it) and not, replays a [`Script`] of [`Reply`]s in order, and
//! records every request it received so tests can assert on what a client sent.
//!
//! ```no_run
//! # async fn demo() {
//! use serde_json::json;
//! use subagent_testkit::{Reply, ScriptedModelServer};
//!
//! let server = ScriptedModelServer::start().await;
//! server.push(Reply::tool_calls(vec![("Read", json!({"path": "a.txt"}))]));
//! server.push(Reply::text("done").with_usage(120, 7));
//! server.push(Reply::rate_limited(1)); // 429 + Retry-After: 1
//! // point an OpenAI client at server.openai_base_url(), an Anthropic one at server.base_url()
//! for req in server.requests() {
//!     println!("{} {:?} {}", req.path, req.model(), req.messages().len());
//! }
//! # }
//! ```
//!
//! For tests that take a model or a kind as a value there are in-process helpers too:
//! [`ScriptedModel`] (a `ChatModel` replaying [`Step`]s), [`FnKind`] (a subagent kind whose
//! agents are async closures), [`FnTool`] (a tool whose call is a function),
//! [`ProgressRecorder`] and [`ScriptedApprover`] (a user answering
//! approval prompts from a script). [`process`] finds and kills the host's processes by a
//! marker in their command line, for tests that check nothing outlives a command; [`files`]
//! writes a tree of files for a test to work on.
//!
//! When the script runs out the server answers HTTP 500 with a provider-shaped error body saying
//! the script is exhausted, so a missing reply is obvious in the client's error message.
//!
//! Feature `mcp`: the `mcp` module, helpers for tests that call an MCP server with rmcp's client.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod approver;
mod cache;
pub mod files;
mod fn_kind;
mod fn_tool;
mod git;
mod lookup;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
mod model;
pub mod process;
mod progress;
mod ratelimit;
mod reading_team;
mod reply;
mod script;
mod server;
mod wire;

pub use approver::{SCRIPT_EXHAUSTED_DENIAL, ScriptedApprover};
pub use cache::{
    ANTHROPIC_LOOKBACK_BLOCKS, ANTHROPIC_MIN_CACHEABLE_TOKENS, CacheBill, prompt_segments,
    prompt_tokens,
};
pub use fn_kind::{FN_KIND, FnDefinition, FnKind, fn_ref};
pub use fn_tool::FnTool;
pub use git::{git, git_repo_with};
pub use lookup::{claude_agents_corpus, first_message_text, has_tool_result};
pub use model::{ScriptedModel, Step, tool_results};
pub use progress::ProgressRecorder;
pub use ratelimit::RateLimit;
pub use reading_team::ReadingTeam;

pub use reply::{Reply, ScriptedToolCall, ScriptedUsage};
pub use script::{Responder, Script};
pub use server::{RecordedRequest, ScriptedModelServer};
pub use wire::WireFormat;

/// The value behind `m`, also after a panic while it was held (a test's recording stays
/// readable).
fn locked<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
