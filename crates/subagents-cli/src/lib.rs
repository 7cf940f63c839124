//! # subagents-cli: the `subagents` command, as a library
//!
//! The `subagents` command turns the `subagents` libraries into something a person runs: a
//! delegating main agent (`run`), one subagent for scripts (`task`), agent listing and
//! validation (`agents`), A2A hosting (`serve`) and calling (`call`), an MCP server exposing the
//! Task tools (`mcp`), the store's background tasks (`tasks`, `prune`), workflows (`workflow`)
//! and workspace approvals (`trust`). `subagents --help` documents every subcommand and exit code.
//!
//! This library is that command, for crates that add a kind of subagent: with [`Cli`], such a
//! crate ships its own `subagents`-compatible binary (every subcommand, the same flags,
//! `subagents.toml` and exit codes) with its kind registered wherever the command assembles its
//! agents:
//!
//! ```no_run
//! # use subagents::spi::{SubagentReference, SubagentType};
//! # fn my_kind() -> SubagentType { unimplemented!() }
//! # fn my_agent() -> SubagentReference { unimplemented!() }
//! fn main() {
//!     std::process::exit(
//!         subagents_cli::Cli::new()
//!             .kind(my_kind())
//!             .reference(my_agent())
//!             .run(),
//!     );
//! }
//! ```
//!
//! The `subagents` binary itself is `Cli::new().run()`.

mod agents;
mod approve;
mod args;
mod call;
mod cli;
mod config;
mod config_agents;
mod detach;
mod doctor;
mod error;
mod extension;
mod failures;
mod interrupt;
mod loaded;
mod local;
mod lookup;
mod mcp;
mod notes;
mod output;
mod progress;
mod prune;
mod resume_interrupt;
mod routes;
mod run;
mod serve;
mod setup;
mod stream_json;
mod tasks;
mod trust;
mod typed;
mod workflow;

use std::ffi::OsString;
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches};
use subagents::SubagentsBuilder;
use subagents::spi::{SubagentReference, SubagentType};

use crate::cli::{AgentsCommand, Cli as Args, Command, TasksCommand};
use crate::config::Config;
use crate::error::CliError;
use crate::extension::Extension;

/// The `subagents` command, with what a third-party crate adds to it.
///
/// [`kind`](Self::kind), [`reference`](Self::reference) and [`configure`](Self::configure)
/// apply to every assembly of the command's agents: `run`, `task`, `tasks resume`, `serve`,
/// `mcp`, and `agents list` (which lists the added agents with their kind). Everything else
/// (flags, `subagents.toml`, the workspace approvals of `trust`, exit codes) is the stock
/// command's.
#[must_use]
#[derive(Debug, Default, Clone)]
pub struct Cli {
    extension: Extension,
}

impl Cli {
    /// The stock `subagents` command.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a kind (its resolver, executor and default agents) in every assembly.
    pub fn kind(mut self, kind: SubagentType) -> Self {
        self.extension.kinds.push(kind);
        self
    }

    /// Adds an agent reference (for the added kind, or any other) to every assembly.
    pub fn reference(mut self, reference: SubagentReference) -> Self {
        self.extension.references.push(reference);
        self
    }

    /// Any other change to the facade's builder, applied to every assembly after the command's
    /// own settings (flags and `subagents.toml`), the kinds and the references (repeatable).
    pub fn configure(
        mut self,
        f: impl Fn(SubagentsBuilder) -> SubagentsBuilder + Send + Sync + 'static,
    ) -> Self {
        self.extension.configure.push(Arc::new(f));
        self
    }

    /// Runs the command on the process's arguments; returns its exit code (see `--help`).
    /// `--help` and `--version` print and return 0; bad arguments print the usage and return 2.
    ///
    /// Call it first in `main`, before any thread starts: the program is also the helper of
    /// the namespace sandbox ([`sandbox_helper_main`](subagents::tools::sandbox_helper_main)),
    /// which runs from here when the program is started as the helper.
    pub fn run(self) -> i32 {
        subagents::tools::sandbox_helper_main();
        self.run_from(std::env::args_os())
    }

    /// [`run`](Self::run) on these arguments (the first is the program's name).
    pub fn run_from<I, T>(self, args: I) -> i32
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        main_with(Arc::new(self.extension), args)
    }
}

/// The command: parses `args`, sets up logging and traces, runs the subcommand with
/// `extension`; returns the exit code.
fn main_with<I, T>(extension: Arc<Extension>, args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // Every subcommand's help ends with the exit codes too.
    let command = Args::command().mut_subcommands(|sub| {
        sub.after_help(cli::EXIT_CODES)
            .mut_subcommands(|s| s.after_help(cli::EXIT_CODES))
    });
    let argv: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let parsed = command
        .try_get_matches_from(&argv)
        .and_then(|m| Args::from_arg_matches(&m));
    let cli = match parsed {
        Ok(mut cli) => {
            // `task --background` starts its worker with the same command line.
            if let Command::Task(t) = &mut cli.command {
                t.argv = argv;
            }
            cli
        }
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        // `-v` raises the default level; an explicit `--log` other than the default wins.
        let level = if cli.verbose && cli.log == "warn" {
            "info"
        } else {
            cli.log.as_str()
        };
        tracing_subscriber::EnvFilter::new(level)
    });
    // Traces over OTLP for the commands that run agents, when an endpoint is configured;
    // otherwise nothing is installed. Set up before the runtime, flushed after it.
    let otel = match &cli.command {
        Command::Run(_)
        | Command::Task(_)
        | Command::Tasks(TasksCommand::Resume(_))
        | Command::Serve(_)
        | Command::Mcp(_)
        | Command::Call(_)
        | Command::Workflow(_) => match subagents::otel::OtelGuard::from_env(cli.otlp.as_deref()) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("subagents: {e}");
                return 2;
            }
        },
        _ => None,
    };
    {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(colour_on_stderr())
                    .with_writer(crate::output::LogWriter)
                    .with_filter(filter),
            )
            .with(otel.as_ref().map(|o| o.layer()))
            .try_init()
            .ok();
    }
    if let Some(o) = &otel {
        tracing::info!(endpoint = o.endpoint(), "exporting traces over OTLP");
    }
    // How much of what loading the agents noted is said (crate::notes).
    let focus = match &cli.command {
        Command::Task(a) => Some(a.agent.as_str()),
        Command::Run(a) => a.agent.as_deref(),
        _ => None,
    };
    notes::set(&cli.log, cli.verbose, focus);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("subagents: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let code = match runtime.block_on(extension::scope(extension, dispatch(cli))) {
        Ok(()) => 0,
        Err(e) => {
            // Errors quote peers, models and files: escaped for the terminal.
            eprintln!(
                "subagents: {}",
                crate::output::terminal_text(&e.to_string())
            );
            e.exit_code()
        }
    };
    // Background tasks may still hold the runtime; do not wait for them.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    // The caller exits, which runs no destructors: flush the spans still buffered first.
    if let Some(mut o) = otel {
        o.shutdown();
    }
    code
}

/// Colour only on a terminal, and never when `NO_COLOR` is set (<https://no-color.org>).
fn colour_on_stderr() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

async fn dispatch(cli: Args) -> Result<(), CliError> {
    let mut config = Config::load(cli.config.as_deref())?;
    let explicit_config = cli.config.is_some();
    // The workspace's control files: what lifts a limit applies only once approved.
    let gated = match &cli.command {
        Command::Run(a) => Some((&a.runner.tree, trust::Asking::Terminal)),
        Command::Task(a) => Some((&a.runner.tree, trust::Asking::Terminal)),
        Command::Serve(a) => Some((&a.tree, trust::Asking::Nobody)),
        Command::Mcp(a) => Some((&a.tree, trust::Asking::Nobody)),
        Command::Workflow(w) => w.tree().map(|t| (t, trust::Asking::Terminal)),
        _ => None,
    };
    if let Some((tree, asking)) = gated {
        let root = workspace_root(tree.workspace.as_deref())?;
        let asking = if asking == trust::Asking::Terminal && approve::interactive() {
            trust::Asking::Terminal
        } else {
            trust::Asking::Nobody
        };
        config.untrusted_files = trust::gate(&mut config, cli.config.is_some(), &root, asking);
    }
    if let Some(store) = cli.store {
        config.store = Some(store);
    }
    // $CLAUDE_CODE_SUBAGENT_MODEL over `agent_model`, for every command (a flag wins later).
    routes::fold_flag(&mut config, None);
    match cli.command {
        Command::Run(args) => run::run(args, config).await,
        Command::Task(args) => run::task(args, config).await,
        Command::Tasks(TasksCommand::Resume(args)) => {
            run::task(args.into_task_args(), config).await
        }
        Command::Tasks(command) => tasks::tasks(command, &config).await,
        Command::Agents(AgentsCommand::List {
            agents,
            models,
            json,
        }) => {
            let mut dirs = agents;
            dirs.extend(config.agents.iter().cloned());
            routes::fold_flag(&mut config, models.agent_model.as_deref());
            let routes = routes::for_listing(models.model.as_deref(), &config).await;
            agents::list(&dirs, json, &config, explicit_config, &routes).await
        }
        Command::Agents(AgentsCommand::Validate {
            paths,
            json,
            strict,
        }) => agents::validate(&paths, json, strict, &config).await,
        Command::Serve(args) => serve::serve(args, config).await,
        Command::Call(args) => call::call(&args, &config).await,
        Command::Mcp(args) => mcp::serve(args, config).await,
        Command::Prune(args) => prune::prune(&args, &config).await,
        Command::Workflow(command) => workflow::workflow(command, config).await,
        Command::Trust(args) => {
            let root = workspace_root(args.workspace.as_deref())?;
            trust::trust(&args.paths, &root)
        }
        Command::Doctor { json } => doctor::doctor(json).await,
    }
}

/// `--workspace`, else the current directory.
fn workspace_root(given: Option<&std::path::Path>) -> Result<std::path::PathBuf, CliError> {
    match given {
        Some(p) => Ok(p.to_path_buf()),
        None => std::env::current_dir()
            .map_err(|e| CliError::Config(format!("cannot read the current directory: {e}"))),
    }
}
