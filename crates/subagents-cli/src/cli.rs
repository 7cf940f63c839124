//! Command-line surface (clap).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::args::{AgentSources, ModelArgs, PermissionArgs, RunnerArgs, TreeArgs};

/// Exit codes, documented in `--help`.
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  success: the agent completed (or every file loaded)
  1  the agent failed, or a file named on the command line failed to load
  2  usage or configuration error: bad arguments, no model reachable, unknown agent,
     an agent reference that cannot be resolved, a server that cannot start
  3  incomplete: the agent needs input (`call` prints the task and context ids to answer
     with), hit a limit, or was cancelled
  4  the agent completed but a subagent it delegated to failed, with
     `run --fail-on-child-error` (the answer and outcome are printed as usual)
  130 interrupted: Ctrl-C during run, task or call (the outcome so far is still printed;
     a second Ctrl-C quits at once). The servers (serve, mcp) stop gracefully on SIGINT
     or SIGTERM and exit 0";

/// Let an AI agent hand work to other agents: local Markdown agents, remote A2A agents and
/// MCP servers, behind one Task tool.
#[derive(Debug, Parser)]
#[command(name = "subagents", version, about, long_about = None, after_long_help = EXIT_CODES, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// Configuration file (default: ./subagents.toml when present).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Where transcripts and background tasks are kept: `sqlite:PATH`, `postgres://...`, or
    /// `memory` (nothing survives the process). Default: `store` in subagents.toml, else SQLite
    /// at $XDG_DATA_HOME/subagents/ledger.db (~/.local/share/subagents/ledger.db).
    #[arg(long, global = true, value_name = "URL", env = "SUBAGENTS_STORE")]
    pub store: Option<String>,

    /// Log verbosity for diagnostics on stderr (error, warn, info, debug, trace). `error` also
    /// hides the line that sums up what loading the agents noted.
    #[arg(long, global = true, default_value = "warn", value_name = "LEVEL")]
    pub log: String,

    /// Short for `--log info`: a run's first line then says which sandbox confines its
    /// commands (as `subagents doctor` does), and every note of loading the agents is said
    /// (each agent's warnings, broken files, names defined twice, project instructions), not
    /// only the line that sums them up.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,

    /// Export traces (OpenTelemetry GenAI spans of every run) over OTLP/HTTP to this
    /// collector base URL (`/v1/traces` is appended), e.g. http://127.0.0.1:4318. Default:
    /// the standard OTEL_EXPORTER_OTLP_ENDPOINT; with neither, nothing is exported.
    #[arg(long, global = true, value_name = "URL")]
    pub otlp: Option<String>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a main agent (model + built-in tools + Task/TaskOutput/TaskStop) that delegates to
    /// subagents. Live progress goes to stderr, the final answer to stdout.
    Run(RunArgs),
    /// Run one subagent directly, without a main model (for scripts).
    Task(TaskArgs),
    /// List or validate Markdown agents.
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// Host Markdown agents over A2A (v1.0 and v0.3), one path per agent, plus `GET /`
    /// listing the hosted cards.
    Serve(ServeArgs),
    /// Call a remote A2A agent.
    Call(CallArgs),
    /// Serve Task / TaskOutput / TaskStop over MCP (stdio, or streamable HTTP with --listen),
    /// so any MCP client can delegate to these subagents.
    Mcp(McpArgs),
    /// Drop old transcripts, background-task results and served A2A tasks from the store
    /// (--store). The store also prunes itself when opened and every 10 minutes, with the
    /// default bounds.
    Prune(PruneArgs),
    /// List, show, stop and resume the background tasks kept in the store (--store): the
    /// `task_...` ids that `task --background` and the Task tool print.
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// Workflows: an orchestration script in JavaScript over the agents, journaled in the
    /// store call by call, so a stopped run resumes without running a finished call again:
    /// `run FILE`, `resume RUN_ID`, `list`, `show RUN_ID`.
    #[command(subcommand)]
    Workflow(crate::workflow::WorkflowCommand),
    /// Approve workspace control files (subagents.toml, .claude/settings.json,
    /// .claude/settings.local.json, .mcp.json) and agent files (from the project's
    /// .claude/agents or an --agents directory) so their settings that lift limits or run
    /// commands apply: sandbox off or widened, permission mode or allow rules, hooks, MCP
    /// servers (an agent file's inline mcpServers too), credentials for A2A peers, a model on
    /// another machine, prices below the built-in ones. The approval holds for the file's
    /// current content and for the workspace scripts its commands name (SHA-256), kept in the
    /// user's data directory; a changed file or script needs approval again. Without an
    /// approval such settings are not applied (stderr says which), since a model may have
    /// written the file; on a terminal, `run` and `task` ask for the control files instead.
    Trust(TrustArgs),
    /// What this machine offers the sandbox of Bash commands, hooks and stdio MCP servers:
    /// the sandbox in force (namespaces, or the Landlock-only fallback), the Landlock ABI,
    /// and whether user namespaces work (one line each).
    Doctor {
        /// JSON output: {"sandbox","reason","landlock":{...},"user_namespaces":{...}}.
        #[arg(long)]
        json: bool,
    },
}

/// `subagents tasks ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum TasksCommand {
    /// The most recent background tasks, newest first: id, agent, status, age. Tasks whose
    /// process ended while they ran show as `interrupted`.
    List {
        /// At most this many (at most 500).
        #[arg(long, default_value_t = 50, value_name = "N")]
        limit: usize,
        /// JSON output: [{"task_id","agent","kind","description","status","started_at",
        /// "elapsed_ms","session_id","note"}].
        #[arg(long)]
        json: bool,
    },
    /// One task's status and output (its result, or the last output it streamed).
    Show {
        /// The task id (`task_...`).
        id: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Stop a running task: one of another `subagents` process still running is asked to stop
    /// through the store (it stops within a few seconds, keeping its partial output).
    Stop {
        /// The task id (`task_...`).
        id: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
        /// An MCP server whose tools are agents, as `run --mcp` takes it (repeatable; also
        /// `mcp` of subagents.toml): a task of one of its agents whose process ended while the
        /// server ran it as a task (`interrupted`, session `mcp-task:ID`) is cancelled on that
        /// server with `tasks/cancel`.
        #[arg(long = "mcp", value_name = "SPEC")]
        mcp: Vec<String>,
    },
    /// Continue an ended task's session with a message: a new run of the same agent, run like
    /// `subagents task` (same options). A task of an MCP agent whose server runs it as a task
    /// (session `mcp-task:ID`) is followed there instead. Ctrl-C cancels the resumed run as it
    /// cancels a foreground `task`: such an MCP task is cancelled on its server (the command
    /// waits for the server's acknowledgement, a few seconds at most), the store's record is
    /// left as it was, stderr says what happened and how to go on, and the exit code is 130.
    /// Ctrl-C twice quits at once, leaving a remote task running there.
    Resume(Box<TasksResumeArgs>),
}

/// `subagents tasks resume`.
#[derive(Debug, Args)]
pub(crate) struct TasksResumeArgs {
    /// The task id (`task_...`).
    pub id: String,
    /// The message to continue with.
    pub message: String,
    /// `--model`, `--agent-model`.
    #[command(flatten)]
    pub models: ModelArgs,
    /// Agent sources.
    #[command(flatten)]
    pub sources: AgentSources,
    /// Print a machine-readable outcome.
    #[arg(long)]
    pub json: bool,
    /// Workspace and tree limits, budgets, permissions.
    #[command(flatten)]
    pub runner: RunnerArgs,
}

impl TasksResumeArgs {
    /// The `task` run that continues the task (its agent and session are looked up then).
    pub(crate) fn into_task_args(self) -> TaskArgs {
        TaskArgs {
            agent: String::new(),
            prompt: self.message,
            models: self.models,
            sources: self.sources,
            background: false,
            background_worker: false,
            argv: Vec::new(),
            resume: None,
            json: self.json,
            output_format: None,
            runner: self.runner,
            resume_task: Some(self.id),
            output_schema: None,
        }
    }
}

/// What `run` does with background tasks still running when the main agent answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OnExit {
    /// Wait for them (Ctrl-C cancels them).
    #[default]
    Wait,
    /// Cancel them.
    Cancel,
}

/// `subagents trust`.
#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The files to approve, or directories of agent files (default: those of the workspace:
    /// ./subagents.toml, the workspace's .claude/settings.json, .claude/settings.local.json and
    /// .mcp.json, and the agent files of .claude/agents and `agents = [..]` that need it).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The workspace whose files are approved (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// `subagents prune`.
#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
    /// Drop what is older than this (finished background tasks by their end, transcripts by
    /// their last turn, served A2A tasks in a final state by their last change): e.g. 30m,
    /// 12h, 7d, 3600s. Default: the store's bounds (background results after 30 minutes,
    /// transcripts after 30 days, served A2A tasks after 7 days).
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub older_than: Option<std::time::Duration>,
    /// Say what would be dropped, drop nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the counts as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `30s`, `15m`, `12h`, `7d` (a bare number is seconds).
pub(crate) fn parse_age(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, ""), |i| s.split_at(i));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not an age such as 30m, 12h or 7d"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("unknown unit `{other}` in `{s}`: use s, m, h or d")),
    };
    n.checked_mul(secs)
        .map(std::time::Duration::from_secs)
        .ok_or_else(|| format!("`{s}` is too long"))
}

/// `subagents run`.
#[derive(Debug, Args)]
#[command(
    mut_arg("model", |a| a.help(
        "Model spec (openai:gpt-4.1, anthropic:claude-sonnet-4-5, ollama:qwen2.5, \
         openai-compatible:MODEL@URL) or a name from subagents.toml. Default: $SUBAGENTS_MODEL"
    )),
    mut_arg("agent_model", |a| a.help(
        "Run every local agent on this model, whatever its `model:` says (an alias such as \
         `haiku`, `inherit`, a spec) and whatever a Task call asks; the main agent keeps \
         --model. Default: `agent_model` in subagents.toml, else $CLAUDE_CODE_SUBAGENT_MODEL"
    ))
)]
pub(crate) struct RunArgs {
    /// The task for the main agent. May be omitted with --agent when the agent's file has an
    /// `initialPrompt` (which otherwise comes first, before this prompt).
    pub prompt: Option<String>,
    /// Run this agent as the main agent instead of the default one (like `claude --agent`):
    /// its body is the system prompt, its tools, model, memory and hooks apply.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// `--model`, `--agent-model`.
    #[command(flatten)]
    pub models: ModelArgs,
    /// Agent sources.
    #[command(flatten)]
    pub sources: AgentSources,
    /// Print a machine-readable outcome (with the per-subagent usage tree) instead of text.
    #[arg(long)]
    pub json: bool,
    /// `text` (default), `json` (the same as --json) or `stream-json`: every progress event
    /// of the whole tree (text deltas, tool calls and results, at every depth, remote
    /// children too) as one JSON object per line on stdout, then the outcome (`"type":
    /// "result"`), like Claude Code's `--output-format stream-json`.
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    pub output_format: Option<crate::stream_json::OutputFormat>,
    /// Background tasks still running when the main agent answers: `wait` for them (Ctrl-C
    /// cancels them) or `cancel` them. Either way they are named on stderr, a cancelled one
    /// keeps its partial output (in the store too), and their usage counts in the totals and
    /// --json.
    #[arg(long, value_enum, default_value_t = OnExit::Wait, value_name = "WHAT")]
    pub on_exit: OnExit,
    /// The main agent's turn limit.
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub max_turns: u32,
    /// Exit with 4 when the main agent completed but any subagent of the tree (at any depth)
    /// failed. Failed children are always counted and named (the `done ·` line, `failed_children`
    /// and `failures` in --json and stream-json); this makes them fail a script.
    #[arg(long)]
    pub fail_on_child_error: bool,
    /// Offer the main agent only these tools (comma-separated names; `delegation` stands for
    /// Task, TaskOutput, TaskStop and SendMessage; `all` for every tool), e.g. `--main-tools
    /// Task` for a small local model whose every turn then carries one tool schema instead of
    /// eleven. Default: `Task` when the main model runs on a local server (`ollama:`, or
    /// `openai-compatible:` at a loopback or private address; said once on stderr), else every
    /// tool but TodoWrite.
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        env = "SUBAGENTS_MAIN_TOOLS"
    )]
    pub main_tools: Option<Vec<String>>,
    /// Workspace and tree limits, budgets, permissions.
    #[command(flatten)]
    pub runner: RunnerArgs,
}

/// `subagents task`.
#[derive(Debug, Args)]
pub(crate) struct TaskArgs {
    /// The agent's name.
    pub agent: String,
    /// The task for the agent.
    pub prompt: String,
    /// `--model`, `--agent-model`.
    #[command(flatten)]
    pub models: ModelArgs,
    /// Agent sources.
    #[command(flatten)]
    pub sources: AgentSources,
    /// Start it in the background and return at once: the task id goes to stdout (with
    /// --json: `{"task_id", "agent", "status", "pid"}`), and the task runs on in a process of
    /// its own, recorded in the store (`subagents tasks show ID` prints its result, `tasks
    /// stop ID` stops it). Nobody is asked while it runs: calls that need approval are denied
    /// unless --yes. With `--store memory` (nothing would keep the result) it waits here
    /// instead and prints the result.
    #[arg(long)]
    pub background: bool,
    /// The process `--background` starts to run the task in (internal).
    #[arg(long, hide = true)]
    pub background_worker: bool,
    /// The command line, for `--background` to start its worker with (set by the command).
    #[arg(skip)]
    pub argv: Vec<std::ffi::OsString>,
    /// Continue an earlier session of this agent (its id is in the result's footer and in
    /// --json output); with a durable store, sessions of earlier processes too.
    #[arg(long, value_name = "SESSION")]
    pub resume: Option<String>,
    /// Print a machine-readable outcome.
    #[arg(long)]
    pub json: bool,
    /// `text` (default), `json` (the same as --json) or `stream-json` (every progress event
    /// of the tree, one JSON object per line, then the outcome; see `run --help`).
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    pub output_format: Option<crate::stream_json::OutputFormat>,
    /// Workspace and tree limits, budgets, permissions.
    #[command(flatten)]
    pub runner: RunnerArgs,
    /// `tasks resume`: the background task whose session this run continues.
    #[arg(skip)]
    pub resume_task: Option<String>,
    /// A JSON Schema file (at most 256 KiB): the agent must end with a JSON value valid under
    /// it (an invalid one goes back to the agent with the errors, twice at most), and that
    /// value alone is printed on stdout. An agent's `outputSchema` frontmatter is the default.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<std::path::PathBuf>,
}

/// `subagents agents ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum AgentsCommand {
    /// List the agents that would be registered (built-ins, discovered and given ones, and the
    /// A2A and MCP agents of subagents.toml), with the path segment (slug) of names that are
    /// not one, their warnings, and what is shadowed (project over user over built-in;
    /// --agents directories replace discovery). Remote agents are listed without contacting
    /// them: an A2A agent without a `name` setting is listed under its URL (its name comes
    /// from its card when a run starts), an MCP server without `name`/`tool` under its spec.
    #[command(
        mut_arg("model", |a| a.help(
            "The model `run --model` would get: each agent's model is resolved against it"
        )),
        mut_arg("agent_model", |a| a.help("As `run --agent-model`: every agent shows this model"))
    )]
    List {
        /// Agent directories (repeatable).
        #[arg(long = "agents", value_name = "DIR")]
        agents: Vec<PathBuf>,
        /// `--model`: the model `run --model` would get; `--agent-model`: as in `run`.
        #[command(flatten)]
        models: ModelArgs,
        /// JSON output (each agent's `model` is the spec it would run with; an agent of
        /// subagents.toml has its `url` instead, credentials hidden).
        #[arg(long)]
        json: bool,
    },
    /// Validate agent files or directories (default: the discovered .claude/agents and
    /// ~/.claude/agents), reporting the warnings a run would give. Exit 1 when a file named
    /// explicitly fails to load, an agent file in a directory is broken, or (--strict) an agent
    /// has warnings or one scope defines a name twice (a run uses the first file in path
    /// order); files that are no agents (a README) are skipped with the reason.
    Validate {
        /// Files or directories; a name in two given directories is an error, as with --agents.
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// JSON output: {"loaded":[{"path","name","slug"?,"kind","warnings"}],
        /// "skipped":[{"path","reason","invalid"}],"shadowed":[{"name","path","by"}],
        /// "duplicates":[...]}.
        #[arg(long)]
        json: bool,
        /// Treat warnings, and names defined twice in one scope, as failures.
        #[arg(long)]
        strict: bool,
    },
}

/// `subagents serve`.
#[derive(Debug, Args)]
#[command(mut_arg("model", |a| a.help("Model for the hosted agents")))]
pub(crate) struct ServeArgs {
    /// Directory of Markdown agents to host (repeatable; default: discovered dirs).
    #[arg(long = "agents", value_name = "DIR")]
    pub agents: Vec<PathBuf>,
    /// Host only these agents (repeatable; default: all).
    #[arg(long = "agent", value_name = "NAME")]
    pub agent: Vec<String>,
    /// Address to listen on, e.g. 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Public base URL written into agent cards (default: from the request's Host header).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Also serve the A2A gRPC binding (1.0, plain HTTP/2) on this address, e.g.
    /// 127.0.0.1:50051; the cards list it as the GRPC interface.
    #[arg(long, value_name = "ADDR")]
    pub grpc_listen: Option<SocketAddr>,
    /// Let stock A2A 0.3 clients (ADK-Java, LangGraph, the 0.3 SDKs) discover the agents: card
    /// requests without an `A2A-Version: 1.x` header get the 0.3 card at
    /// `.well-known/agent-card.json`. Off by default: strict 1.0 clients that fetch the card
    /// without the header (the A2A TCK 1.0, the Python SDK 1.x) would then get the 0.3 form.
    #[arg(long)]
    pub legacy_card: bool,
    /// Offer A2A push notifications: clients may register webhooks for their tasks. Webhooks
    /// at loopback, private, link-local and other non-public addresses are refused.
    #[arg(long)]
    pub push: bool,
    /// Connection, timeout and push limits.
    #[command(flatten)]
    pub limits: ServeLimitArgs,
    /// Sign the agent cards with this private key (JWS, A2A §8.4): a PEM file (P-256 for
    /// ES256 or Ed25519 for EdDSA; PKCS#8 or SEC1) or a JWK file with `d`.
    #[arg(long, value_name = "FILE")]
    pub card_signing_key: Option<std::path::PathBuf>,
    /// The key id (`kid`) of the card signatures (default: the JWK's `kid`, else the key's
    /// RFC 7638 thumbprint).
    #[arg(long, value_name = "KID", requires = "card_signing_key")]
    pub card_signing_kid: Option<String>,
    /// A JWK Set URL (`jku`) named in the card signatures, where clients can find the public key.
    #[arg(long, value_name = "URL", requires = "card_signing_key")]
    pub card_signing_jku: Option<String>,
    /// Credentials clients must send.
    #[command(flatten)]
    pub auth: ListenAuthArgs,
    /// How long a served agent's tool call that needs approval waits for the A2A client's
    /// answer (its task is input-required meanwhile) before it is denied; 0 never asks.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub approval_timeout: u64,
    /// `--model`, `--agent-model`.
    #[command(flatten)]
    pub models: ModelArgs,
    /// Workspace and tree limits.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Permissions.
    #[command(flatten)]
    pub permissions: PermissionArgs,
    /// Run no Claude Code hooks (settings files' or agents' own).
    #[arg(long)]
    pub no_hooks: bool,
}

/// Limits of `subagents serve` (each default is the A2A server's, `ServerConfig`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ServeLimitArgs {
    /// The most connections open at once, HTTP and gRPC together (default 1024, lowered to
    /// three quarters of the open-file limit when that is smaller); at the cap the connection
    /// idle longest is closed.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Seconds a connection may take to send a request head (gRPC: its preface and first
    /// call) (default 10; 0: no limit).
    #[arg(long, value_name = "SECS")]
    pub header_timeout: Option<u64>,
    /// Seconds a connection may stay open without a request (default 30; 0: no limit).
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<u64>,
    /// With --push: the most webhook deliveries in flight at once, each on its own
    /// connection (default 64).
    #[arg(long, value_name = "N", requires = "push")]
    pub push_max_deliveries: Option<usize>,
    /// With --push: the most task updates waiting for delivery; more are dropped and logged
    /// (default 1024).
    #[arg(long, value_name = "N", requires = "push")]
    pub push_max_queued: Option<usize>,
    /// With --push: the most webhooks one task may have (default 16).
    #[arg(long, value_name = "N", requires = "push")]
    pub push_max_configs: Option<usize>,
}

/// Credentials of a server (`serve`, `mcp --listen`): required beyond loopback.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ListenAuthArgs {
    /// A key clients must send, as `Authorization: Bearer KEY` or `X-API-Key: KEY`
    /// (repeatable; or comma-separated keys in SUBAGENTS_API_KEYS). Required to listen beyond
    /// loopback unless --allow-unauthenticated.
    #[arg(
        long = "api-key",
        value_name = "KEY",
        env = "SUBAGENTS_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub api_key: Vec<String>,
    /// Serve without credentials even on an address beyond loopback.
    #[arg(long)]
    pub allow_unauthenticated: bool,
}

/// `subagents call`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The agent's base URL (its card is read from URL/.well-known/...).
    pub url: String,
    /// The message to send (with --task-id: the reply to the agent's question).
    pub prompt: String,
    /// Answer the agent's questions (input-required) `yes` without asking. Without it, a
    /// terminal prompt asks on stderr; without a terminal, the call stops for input (exit 3)
    /// and prints the task and context ids to reply with.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Send the message to this remote task: the reply to a task that stopped for input
    /// (its id is printed on stderr, and in --json as `task_id`).
    #[arg(long, value_name = "ID")]
    pub task_id: Option<String>,
    /// The remote context of --task-id (printed with it; `context_id` in --json); alone, a new
    /// task in that context.
    #[arg(long, value_name = "ID")]
    pub context_id: Option<String>,
    /// Stream progress (status updates, artifacts) to stderr while waiting.
    #[arg(long)]
    pub stream: bool,
    /// Print a machine-readable outcome.
    #[arg(long)]
    pub json: bool,
    /// Give up after this many seconds (resolving the card and the whole call), exit 1.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub timeout: u64,
    /// The environment variable holding a bearer token to send (`Authorization: Bearer ...`).
    #[arg(long, value_name = "VAR")]
    pub bearer_env: Option<String>,
    /// The environment variable holding an API key to send (in the header the card names,
    /// e.g. `X-API-Key`).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
}

/// `subagents mcp`.
#[derive(Debug, Args)]
#[command(mut_arg("model", |a| a.help("Model for local agents")))]
pub(crate) struct McpArgs {
    /// Agent sources.
    #[command(flatten)]
    pub sources: AgentSources,
    /// Serve streamable HTTP on this address instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Credentials clients must send (with --listen).
    #[command(flatten)]
    pub auth: ListenAuthArgs,
    /// `--model`, `--agent-model`.
    #[command(flatten)]
    pub models: ModelArgs,
    /// Workspace and tree limits.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Permissions.
    #[command(flatten)]
    pub permissions: PermissionArgs,
}
