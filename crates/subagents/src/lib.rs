//! # subagents
//!
//! Let an AI agent hand work to other agents, whatever protocol they speak. A main agent gets
//! one tool, **`Task`** (plus `TaskOutput` and `TaskStop` for background runs); behind it sit
//! subagents of any kind: Claude Code-style Markdown agents run by our agent loop, remote A2A
//! agents, MCP servers, or a kind you write yourself against [`spi`].
//!
//! This is the batteries-included entry point: [`Subagents::builder`] wires models, agents,
//! kinds and tools in one place (the `subagents` command is built on it), and the kind crates
//! are re-exported behind cargo features.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let agents = subagents::Subagents::builder()
//!     .model("ollama:qwen2.5")                       // or an Arc<dyn ChatModel>
//!     .agents_dir(".claude/agents")                  // Markdown agents
//!     .a2a_agent("http://127.0.0.1:9000/researcher") // a remote A2A agent
//!     .build()
//!     .await?;
//! let tools = agents.tools();        // Task, TaskOutput, TaskStop for your own model loop
//! use subagents::policy::UsageTreeText as _;
//! let answer = agents.main_agent().run("Summarise this repository").await?;
//! println!("{}\n{}", answer.text, answer.usage_tree("main", "MAIN", None).render());
//! # let _ = tools; Ok(()) }
//! ```
//!
//! | feature | default | adds |
//! |---|---|---|
//! | `claude` | yes | Markdown agents ([`claude`]), the agent loop ([`runtime`]), built-in tools ([`tools`]), [`Subagents::main_agent`] |
//! | `providers` | yes | model spec strings ([`providers`]: OpenAI-compatible, Anthropic, Ollama) |
//! | `a2a` | yes | remote A2A agents ([`a2a`]) |
//! | `server` | no | [`Subagents::a2a_server`]: serving the agents over A2A |
//! | `mcp` | no | MCP agents, `mcpServers` tools for Markdown agents, [`Subagents::mcp_server`] ([`mcp`]) |
//! | `grpc` | no | the A2A gRPC binding (1.0): remote agents whose card selects `GRPC`, and serving over gRPC ([`ServeOptions::grpc_url`], `A2aServer::serve_grpc`) |
//! | `store` | no | durable transcripts and background tasks on SQLite or PostgreSQL (`SubagentsBuilder::store`, `store`) |
//! | `otel` | no | exporting the runs' spans over OTLP ([`otel`]) and W3C trace-context propagation over A2A and MCP |
//! | `workflow` | no | [`Subagents::workflow`]: orchestration scripts in JavaScript, journaled (in the store with `store`) and resumable; the main agent's `Workflow` tool |
//! | `full` | no | all of the above |

#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's Rust example is compiled as a doc test, so it cannot drift from the facade.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "claude")]
pub mod approval;
mod assemble;
mod background;
mod builder;
pub mod config;
mod contrib;
mod error;
#[cfg(feature = "claude")]
mod main_agent;
#[cfg(feature = "claude")]
mod main_offered;
#[cfg(feature = "mcp")]
mod mcp_remote;
#[cfg(feature = "mcp")]
mod mcp_tasks;
pub mod models;
mod ops;
#[cfg(feature = "otel")]
pub mod otel;
pub mod prices;
#[cfg(feature = "server")]
mod serve;
mod steer;
mod typed;
#[cfg(feature = "workflow")]
mod workflow;

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Policy on top of the contracts (`subagent-core`): budget accounting and model prices, the
/// stock approvers, the approval reply protocol, usage trees as text.
pub use subagent_core as policy;
use subagent_core::BudgetExt as _;
/// Typed results: JSON Schemas compiled with bounds, and validation (`subagent-schema`).
pub use subagent_schema as schema;
/// The plugin contracts (`subagent-spi`), for writing kinds, tools and model providers.
pub use subagent_spi as spi;
pub use subagent_spi::{
    CancellationToken, ChatModel, Kind, ProgressEvent, ProgressKind, ProgressSink,
    SubagentDefinition, SubagentError, SubagentExecutor, SubagentReference, SubagentResolver,
    SubagentType, TaskCall, TaskContext, TaskOutcome, TaskStatus, Tool, ToolOutput, Usage,
    UsageNode, async_trait,
};
/// The Task tool crate.
pub use task_tool;
pub use task_tool::{
    BackgroundSnapshot, BackgroundState, BuildError, Dispatch, MessageReceipt, SendMessageError,
    TaskTool, TaskTools,
};

/// The agent loop and model registry (feature `runtime`, part of `claude`).
#[cfg(feature = "runtime")]
pub use subagent_runtime as runtime;

/// LLM providers over HTTP (feature `providers`).
#[cfg(feature = "providers")]
pub use subagent_providers as providers;

/// Built-in tools confined to a workspace root (feature `tools`, part of `claude`).
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

/// Durable stores (feature `store`): SQLite or PostgreSQL.
#[cfg(feature = "store")]
pub use subagent_store as store;

/// Workflows (feature `workflow`): orchestration scripts in JavaScript, journaled.
#[cfg(feature = "workflow")]
pub use subagent_workflow as workflows;
#[cfg(feature = "workflow")]
pub use workflow::{StartedWorkflow, WorkflowRun};

pub use builder::SubagentsBuilder;
#[cfg(feature = "claude")]
pub use builder::discovered_agent_dirs;
pub use error::Error;
#[cfg(feature = "claude")]
pub use main_agent::{ALL_TOOLS, DELEGATION_TOOLS, MainAgent, NOT_BY_DEFAULT};
#[cfg(feature = "claude")]
pub use main_offered::MAIN_SYSTEM_PROMPT;
pub use models::ModelChoice;
#[cfg(all(feature = "server", feature = "store"))]
pub use serve::open_task_store;
#[cfg(feature = "server")]
pub use serve::{ServeOptions, agent_path};
pub use typed::TypedRunError;
// The command's operations besides runs (issue 29): `call`, `prune`, `tasks`.
#[cfg(feature = "a2a")]
pub use ops::call::{A2aCall, A2aCallOutcome, CallError, DEFAULT_CALL_TIMEOUT};
#[cfg(feature = "store")]
pub use ops::prune::{PruneError, PruneOptions, PruneReport, prune_store};
pub use ops::tasks::{BackgroundTasks, TaskRecord};

/// An agent file that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkippedAgent {
    /// The file.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: String,
    /// True for a broken agent file (frontmatter that does not load), false for a file that is
    /// no agent (a README, a `SKILL.md`).
    pub invalid: bool,
}

/// What loading one Markdown agent warned about on this assembly
/// ([`subagent_claude::agent_load_warnings`]: ignored fields and tools, unknown model, skills
/// not found, refused memory), for a host to show once, grouped (feature `claude`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentWarnings {
    /// The agent's name.
    pub name: String,
    /// Its file.
    pub path: Option<PathBuf>,
    /// The line of its `name` field.
    pub line: Option<usize>,
    /// The warnings, each a short clause.
    pub warnings: Vec<String>,
}

/// What the Markdown kind needs besides the registry.
#[cfg(feature = "claude")]
pub(crate) struct Local {
    pub(crate) workspace: subagent_tools::Workspace,
    pub(crate) models: Arc<subagent_runtime::ModelRegistry>,
    pub(crate) default_model: Option<String>,
    /// Where agents' model names lead (for showing it before they run).
    pub(crate) routes: models::ModelRoutes,
    /// The main agent's permission mode.
    pub(crate) main_mode: subagent_claude::PermissionMode,
    /// The permission rules of the main agent and every Markdown agent.
    pub(crate) rules: Arc<subagent_claude::PermissionRules>,
    /// How `Bash` is confined.
    pub(crate) sandbox: subagent_tools::SandboxPolicy,
    pub(crate) hooks: subagent_claude::Hooks,
    /// Where the main agent's transcripts go (the Markdown agents' store).
    pub(crate) transcripts: Arc<dyn subagent_runtime::TranscriptStore>,
    /// Whether the main agent streams its model's replies (the builder's `stream`).
    pub(crate) stream: bool,
    /// The builder's `context_window` and `stall_timeout`, for the main agent.
    pub(crate) context_window: Option<u64>,
    /// What the default model's local server said at build time.
    pub(crate) server: models::ServerProbe,
    pub(crate) stall_timeout: Option<std::time::Duration>,
    /// The project's instructions for the main agent's system prompt (read with discovery).
    pub(crate) instructions: Option<Arc<subagent_claude::ProjectInstructions>>,
}

/// The opened store and its maintenance task (stopped when the last clone is dropped).
#[cfg(feature = "store")]
pub(crate) struct StoreHandle {
    pub(crate) db: subagent_store::Db,
    pub(crate) maintenance: tokio::task::JoinHandle<()>,
}

#[cfg(feature = "store")]
impl Drop for StoreHandle {
    fn drop(&mut self) {
        self.maintenance.abort();
    }
}

/// The assembled agents and the tools that reach them. Cheap to clone.
#[derive(Clone)]
pub struct Subagents {
    pub(crate) task: TaskTool,
    pub(crate) root: PathBuf,
    pub(crate) skipped: Vec<SkippedAgent>,
    #[cfg(feature = "claude")]
    pub(crate) shadowed: Vec<subagent_claude::ShadowedAgent>,
    #[cfg(feature = "claude")]
    pub(crate) duplicates: Vec<subagent_claude::DuplicateAgent>,
    #[cfg(feature = "claude")]
    pub(crate) agent_warnings: Vec<AgentWarnings>,
    pub(crate) approver: Option<Arc<dyn spi::Approver>>,
    pub(crate) budget: spi::BudgetLimits,
    pub(crate) prices: Arc<policy::ModelPrices>,
    #[cfg(feature = "claude")]
    pub(crate) local: Option<Arc<Local>>,
    #[cfg(feature = "store")]
    pub(crate) store: Option<Arc<StoreHandle>>,
    /// Where workflow runs are journaled: the store's database, else memory (this assembly).
    #[cfg(feature = "workflow")]
    pub(crate) workflow_journal: Arc<dyn subagent_workflow::Journal>,
    #[cfg(feature = "workflow")]
    pub(crate) workflow_limits: subagent_workflow::WorkflowLimits,
}

impl std::fmt::Debug for Subagents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subagents")
            .field("agents", &self.task.agent_names())
            .field("workspace", &self.root)
            .field("skipped", &self.skipped.len())
            .finish_non_exhaustive()
    }
}

impl Subagents {
    /// What [`assemble`](assemble::assemble) builds before each feature's
    /// [`wire`](contrib::Contribution::wire) adds its part.
    pub(crate) fn assembled(
        task: TaskTool,
        root: PathBuf,
        skipped: Vec<SkippedAgent>,
        approver: Option<Arc<dyn spi::Approver>>,
        budget: spi::BudgetLimits,
        prices: Arc<policy::ModelPrices>,
    ) -> Self {
        Self {
            task,
            root,
            skipped,
            #[cfg(feature = "claude")]
            shadowed: Vec::new(),
            #[cfg(feature = "claude")]
            duplicates: Vec::new(),
            #[cfg(feature = "claude")]
            agent_warnings: Vec::new(),
            approver,
            budget,
            prices,
            #[cfg(feature = "claude")]
            local: None,
            #[cfg(feature = "store")]
            store: None,
            #[cfg(feature = "workflow")]
            workflow_journal: Arc::new(subagent_workflow::MemoryJournal::new()),
            #[cfg(feature = "workflow")]
            workflow_limits: subagent_workflow::WorkflowLimits::default(),
        }
    }

    /// Starts a builder.
    pub fn builder() -> SubagentsBuilder {
        SubagentsBuilder::default()
    }

    /// The `Task` tool (also usable directly from Rust: [`TaskTool::dispatch`]).
    pub fn task(&self) -> &TaskTool {
        &self.task
    }

    /// `Task`, `TaskOutput` and `TaskStop` by name; [`TaskTools::to_vec`] gives them as a
    /// model's tool list.
    pub fn tools(&self) -> TaskTools {
        self.task.tools()
    }

    /// Every registered agent, built-ins first.
    pub fn agents(&self) -> &[Arc<dyn SubagentDefinition>] {
        self.task.agents()
    }

    /// Agent files that did not load, with the reason.
    pub fn skipped(&self) -> &[SkippedAgent] {
        &self.skipped
    }

    /// The workspace root the built-in tools are confined to.
    pub fn workspace_root(&self) -> &Path {
        &self.root
    }

    /// Runs one call from Rust (foreground, or background when the call asks for it), as the
    /// root of a delegation tree (depth 0 unless `ctx` says otherwise). When `ctx` has no
    /// approver, the builder's [`approver`](SubagentsBuilder::approver) answers this call's
    /// approval requests, remembering "allow for the session" answers for this call.
    pub async fn dispatch(
        &self,
        call: TaskCall,
        ctx: &TaskContext,
    ) -> Result<Dispatch, SubagentError> {
        let budgeted;
        let ctx = match self.root_budget(ctx) {
            Some(b) => {
                budgeted = ctx.clone().with_budget(b);
                &budgeted
            }
            None => ctx,
        };
        match (&self.approver, ctx.approver()) {
            (Some(approver), None) => {
                let ctx = ctx
                    .clone()
                    .with_approver(Arc::new(policy::SessionApprover::new(approver.clone())));
                self.task.dispatch(call, &ctx).await
            }
            _ => self.task.dispatch(call, ctx).await,
        }
    }

    /// The approver given to the builder, if any.
    pub fn approver(&self) -> Option<&Arc<dyn spi::Approver>> {
        self.approver.as_ref()
    }

    /// The database opened for `SubagentsBuilder::store` (`None` for `memory` or without a
    /// store), for other stores to share (the A2A server's tasks) and for `store::prune`.
    /// Feature `store`.
    #[cfg(feature = "store")]
    pub fn store_db(&self) -> Option<&subagent_store::Db> {
        self.store.as_ref().map(|s| &s.db)
    }

    /// Writes pending background-task records to the store now; call before the process
    /// exits (a no-op without a store). A failure is returned, and the results stay readable in
    /// this process.
    pub async fn flush(&self) -> Result<(), task_tool::LedgerError> {
        self.task.flush_ledger().await
    }

    /// The budget of a tree rooted at `ctx`: the builder's, unless `ctx` has one already or
    /// the builder set none (a limit, or the estimate of a remote run's broken usage report,
    /// [`BudgetLimits::remote_unreported_tokens`](spi::BudgetLimits::remote_unreported_tokens)).
    pub(crate) fn root_budget(&self, ctx: &TaskContext) -> Option<policy::Budget> {
        let set = !self.budget.is_unlimited() || self.budget.remote_unreported_tokens.is_some();
        (ctx.budget().is_none() && set).then(|| {
            policy::Budget::new(self.budget.clone(), ctx.cancel().clone())
                .with_prices(self.prices.clone())
        })
    }

    /// The per-model prices given to the builder (empty when none).
    pub fn prices(&self) -> &policy::ModelPrices {
        &self.prices
    }
}

#[cfg(feature = "claude")]
impl Subagents {
    pub(crate) fn local(&self) -> Result<&Local, SubagentError> {
        self.local
            .as_deref()
            .ok_or_else(|| SubagentError::InvalidInput("no local agent support configured".into()))
    }

    /// The main agent's permission mode: the builder's
    /// [`permission_mode`](SubagentsBuilder::permission_mode), else the settings files'
    /// `defaultMode`, else `default`.
    pub fn permission_mode(&self) -> Option<subagent_claude::PermissionMode> {
        self.local.as_ref().map(|l| l.main_mode)
    }

    /// The built-in tools confined to the workspace (Read, Write, Edit, Glob, Grep, Bash,
    /// WebFetch, TodoWrite), unguarded (the main agent gets them wrapped in its permission
    /// policy).
    pub fn workspace_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.local
            .as_ref()
            .map(|l| subagent_tools::ToolSet::all_with_sandbox(l.workspace.clone(), &l.sandbox))
            .unwrap_or_default()
    }

    /// The model registry the Markdown agents route through.
    pub fn models(&self) -> Option<&subagent_runtime::ModelRegistry> {
        self.local.as_ref().map(|l| &*l.models)
    }

    /// The default model's name (its spec, or a model value's own name), when one is set.
    pub fn default_model_name(&self) -> Option<&str> {
        self.local.as_ref()?.default_model.as_deref()
    }

    /// Where model names lead: the default model, named models, Claude Code's aliases and
    /// the model forced for every agent ([`ModelRoutes::agent_spec`](models::ModelRoutes::agent_spec)
    /// tells which model an agent runs on).
    pub fn model_routes(&self) -> Option<&models::ModelRoutes> {
        self.local.as_ref().map(|l| &l.routes)
    }

    /// The settings hooks in force (Claude Code's `.claude/settings.json` `hooks`), when local
    /// agent support is configured.
    pub fn settings_hooks(&self) -> Option<&subagent_claude::Hooks> {
        self.local.as_ref().map(|l| &l.hooks)
    }

    /// Agent files hidden by one of the same name with higher precedence (a project agent
    /// shadows the user's), naming the file that won.
    pub fn shadowed(&self) -> &[subagent_claude::ShadowedAgent] {
        &self.shadowed
    }

    /// Agent names defined twice in one scope (one directory, or the given directories): the
    /// first file is used, each entry names it and the one that is not.
    pub fn duplicates(&self) -> &[subagent_claude::DuplicateAgent] {
        &self.duplicates
    }

    /// The project's instructions the agents get (`CLAUDE.md`, `AGENTS.md`; see
    /// [`SubagentsBuilder::claude_md`]), when they were read.
    pub fn project_instructions(&self) -> Option<&subagent_claude::ProjectInstructions> {
        self.local.as_ref()?.instructions.as_deref()
    }

    /// The load warnings of the Markdown agents, one entry per agent that has any.
    pub fn agent_warnings(&self) -> &[AgentWarnings] {
        &self.agent_warnings
    }

    /// The default model.
    pub fn default_model(&self) -> Result<Arc<dyn ChatModel>, SubagentError> {
        Ok(self.local()?.models.default_model()?)
    }

    /// What the default model's server said when these agents were built: its context window,
    /// or that nothing answers there ([`models::ServerProbe::NotAsked`] for a model that is not
    /// on a local server).
    pub fn model_server(&self) -> &models::ServerProbe {
        self.local
            .as_ref()
            .map_or(&models::ServerProbe::NotAsked, |l| &l.server)
    }

    /// The context window the main agent runs with, and where that figure comes from: the
    /// builder's `context_window`, the model's server, the runtime's table of published
    /// windows, else the runtime's default ([`subagent_runtime::DEFAULT_CONTEXT_WINDOW`]).
    pub fn main_context_window(&self) -> Option<models::ContextWindow> {
        let local = self.local.as_ref()?;
        if let Some(tokens) = local.context_window {
            return Some(models::ContextWindow::new(
                tokens,
                models::WindowSource::Configured,
            ));
        }
        if let models::ServerProbe::Window { tokens, source } = &local.server {
            return Some(models::ContextWindow::new(
                *tokens,
                models::WindowSource::Server(source),
            ));
        }
        let name = local.default_model.as_deref()?;
        Some(match subagent_runtime::known_context_window(name) {
            Some(tokens) => models::ContextWindow::new(tokens, models::WindowSource::Published),
            None => models::ContextWindow::new(
                subagent_runtime::DEFAULT_CONTEXT_WINDOW,
                models::WindowSource::Assumed,
            ),
        })
    }

    /// A delegating main agent over these agents, as `subagents run` runs it.
    pub fn main_agent(&self) -> MainAgent<'_> {
        MainAgent::new(self)
    }
}

#[cfg(feature = "mcp")]
impl Subagents {
    /// An MCP server offering `Task`, `TaskOutput` and `TaskStop` over these agents (serve it
    /// over stdio or streamable HTTP), so any MCP client can delegate. Approval requests go
    /// to the builder's approver; without one, a foreground call that must be approved is
    /// asked of the client (elicitation, or `input_required` for 2026-07-28 clients) or
    /// denied, and a background task's question waits for the client's `TaskOutput` answer.
    /// It declares the MCP tasks extension: a `Task` call from a client that declared it
    /// starts a background task and answers with its handle (`tasks/get`, `tasks/update`,
    /// `tasks/cancel` follow it).
    ///
    /// Clients are kept apart ([`subagent_mcp::McpCaller`]): each one lists, reads, stops,
    /// messages and answers only the tasks it started, and each HTTP client gets a fair share
    /// of the background limit ([`task_tool::BackgroundCaller`]: `max_background / (clients
    /// running tasks + 1)`).
    pub fn mcp_server(&self) -> subagent_mcp::McpToolServer {
        let server = subagent_mcp::McpToolServer::new(self.tools().to_vec());
        let server = match &self.approver {
            Some(a) => server.with_approver(a.clone()),
            None => server,
        };
        server
            // MCP tasks are the `Task` tool's background tasks.
            .with_task_backend(std::sync::Arc::new(mcp_tasks::TaskBackend::new(
                self.task.clone(),
            )))
            // Each HTTP client (session, or credential) gets its fair share of the background
            // limit (task_tool::BackgroundCaller); the one stdio client all of it.
            .with_caller_context(|caller, ctx| {
                if caller.over_http() {
                    ctx.with_extension(task_tool::BackgroundCaller::new(caller.id()))
                } else {
                    ctx
                }
            })
            .with_server_info("subagents", env!("CARGO_PKG_VERSION"))
            .with_instructions(
                "Delegate work to subagents with the Task tool (agents are listed in its \
                 description); run them in the background and read results with TaskOutput; \
                 cancel with TaskStop.",
            )
    }
}
