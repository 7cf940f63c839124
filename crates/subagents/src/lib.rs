//! # subagents
//!
//! Let an AI agent hand work to other agents, whatever protocol they speak. A main agent gets
//! one tool, **`Task`** (plus `TaskOutput` and `TaskStop` for background runs); behind it sit
//! subagents of any kind: local Markdown agents, remote A2A agents, MCP servers, or a kind you
//! write yourself against [`spi`].
//!
//! This is the facade: it re-exports the SPI and the Task tool, offers [`Subagents::builder`] to
//! wire kinds and references together, and turns on the kind crates with cargo features
//! (one per kind, plus `full`).
//!
//! ```no_run
//! use subagents::{Subagents, SubagentReference, SubagentType};
//! # async fn demo(my_kind: SubagentType) -> Result<(), Box<dyn std::error::Error>> {
//! let agents = Subagents::builder()
//!     .kind(my_kind)
//!     .reference(SubagentReference::new("fn:summarizer", "FN"))
//!     .build()
//!     .await?;
//! // Give these to your model's tool list: Task, TaskOutput, TaskStop.
//! let tools = agents.tools();
//! assert_eq!(tools.len(), 3);
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

/// The plugin contracts (`subagent-spi`), for writing kinds, tools and model providers.
pub use subagent_spi as spi;
pub use subagent_spi::{
    CancellationToken, ChatModel, ProgressEvent, ProgressKind, ProgressSink, SubagentDefinition,
    SubagentError, SubagentExecutor, SubagentReference, SubagentResolver, SubagentType, TaskCall,
    TaskContext, TaskOutcome, TaskStatus, Tool, ToolOutput, Usage, UsageNode, async_trait,
};
/// The Task tool crate.
pub use task_tool;

/// The agent loop and model registry (feature `runtime`).
#[cfg(feature = "runtime")]
pub use subagent_runtime as runtime;

/// LLM providers over HTTP (feature `providers`).
#[cfg(feature = "providers")]
pub use subagent_providers as providers;

/// Built-in tools confined to a workspace root (feature `tools`).
#[cfg(feature = "tools")]
pub use subagent_tools as tools;

/// The `CLAUDE` kind: Claude Code-style Markdown agents (feature `claude`).
#[cfg(feature = "claude")]
pub use subagent_claude as claude;

/// The `A2A` kind (client) and the A2A server (feature `a2a`).
#[cfg(feature = "a2a")]
pub use subagent_a2a as a2a;

/// The `MCP` kind and MCP serving (feature `mcp`).
#[cfg(feature = "mcp")]
pub use subagent_mcp as mcp;
pub use task_tool::{BackgroundSnapshot, BuildError, Dispatch, TaskTool};

/// A registry of subagents and the tools that reach them.
#[derive(Debug, Clone)]
pub struct Subagents {
    task: TaskTool,
}

impl Subagents {
    /// Starts a builder.
    pub fn builder() -> SubagentsBuilder {
        SubagentsBuilder::default()
    }

    /// The `Task` tool (also usable directly from Rust: [`TaskTool::dispatch`]).
    pub fn task(&self) -> &TaskTool {
        &self.task
    }

    /// `Task`, `TaskOutput` and `TaskStop`, ready for a model's tool list.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.task.tools()
    }

    /// The registered agents.
    pub fn agents(&self) -> &[Arc<dyn SubagentDefinition>] {
        self.task.agents()
    }

    /// Runs one call from Rust (foreground, or background when the call asks for it).
    pub async fn dispatch(
        &self,
        call: TaskCall,
        ctx: &TaskContext,
    ) -> Result<Dispatch, SubagentError> {
        self.task.dispatch(call, ctx).await
    }
}

/// Wires subagent kinds and references into [`Subagents`].
#[derive(Debug, Default)]
#[must_use]
pub struct SubagentsBuilder {
    task: task_tool::TaskToolBuilder,
    /// Kinds registered so far (upper case), so convenience methods add a kind only once.
    kinds: Vec<String>,
}

impl SubagentsBuilder {
    /// Registers a subagent kind (a resolver + an executor).
    pub fn kind(mut self, kind: SubagentType) -> Self {
        self.kinds.push(kind.kind().to_ascii_uppercase());
        self.task = self.task.subagent_type(kind);
        self
    }

    /// Registers several kinds.
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = SubagentType>) -> Self {
        for k in kinds {
            self = self.kind(k);
        }
        self
    }

    /// True when a kind of this name is registered.
    pub fn has_kind(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k.eq_ignore_ascii_case(kind))
    }

    /// Adds a remote A2A agent by its base URL, registering the `A2A` kind on first use
    /// (feature `a2a`).
    #[cfg(feature = "a2a")]
    pub fn a2a_agent(mut self, url: impl Into<String>) -> Self {
        if !self.has_kind(subagent_a2a::client::KIND) {
            self = self.kind(subagent_a2a::client::a2a_subagent_type());
        }
        self.reference(SubagentReference::new(url, subagent_a2a::client::KIND))
    }

    /// Adds an agent reference.
    pub fn reference(mut self, reference: SubagentReference) -> Self {
        self.task = self.task.subagent_reference(reference);
        self
    }

    /// Adds several agent references.
    pub fn references(mut self, refs: impl IntoIterator<Item = SubagentReference>) -> Self {
        self.task = self.task.subagent_references(refs);
        self
    }

    /// Adds an agent by URI and kind.
    pub fn agent(self, uri: impl Into<String>, kind: impl Into<String>) -> Self {
        self.reference(SubagentReference::new(uri, kind))
    }

    /// Skip references that fail to resolve (with a warning) instead of failing the build.
    pub fn skip_unresolvable(mut self, yes: bool) -> Self {
        self.task = self.task.skip_unresolvable(yes);
        self
    }

    /// Maximum background tasks running at once (default 16).
    pub fn max_background(mut self, n: usize) -> Self {
        self.task = self.task.max_background(n);
        self
    }

    /// How long finished background results stay readable (default 30 minutes).
    pub fn result_ttl(mut self, ttl: Duration) -> Self {
        self.task = self.task.result_ttl(ttl);
        self
    }

    /// Time allowed to resolve each reference (default 30 s).
    pub fn resolve_timeout(mut self, timeout: Duration) -> Self {
        self.task = self.task.resolve_timeout(timeout);
        self
    }

    /// Gives direct access to every Task tool setting.
    pub fn configure(
        mut self,
        f: impl FnOnce(task_tool::TaskToolBuilder) -> task_tool::TaskToolBuilder,
    ) -> Self {
        self.task = f(self.task);
        self
    }

    /// Resolves every reference and builds the registry.
    pub async fn build(self) -> Result<Subagents, BuildError> {
        Ok(Subagents {
            task: self.task.build().await?,
        })
    }
}
