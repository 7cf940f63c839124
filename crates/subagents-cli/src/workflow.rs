//! `subagents workflow`: run a JavaScript workflow over the agents (`run`), resume one from its
//! journal (`resume`), and read the journal (`list`, `show`). Runs are journaled in the store
//! (`--store`), so `resume` works in a new process after Ctrl-C, `kill -9` or a reboot.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde::Serialize;
use subagents::Subagents;
use subagents::spi::{CancellationToken, UsageNode};
use subagents::workflows::{
    CallCounts, CallRecord, RunRecord, RunStatus, WorkflowError, WorkflowLimits, WorkflowOutcome,
};

use crate::args::{AgentSources, ModelArgs, RunnerArgs, TreeArgs};
use crate::config::{self, Config};
use crate::error::CliError;
use crate::interrupt::Interrupt;
use crate::output::{escape_json_hazards, json_text, outln, terminal_safe};
use crate::setup::Setup;
use crate::stream_json::OutputFormat;

/// `subagents workflow ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum WorkflowCommand {
    /// Run a workflow script (JavaScript: `await agent(name, prompt, {schema, model,
    /// description})`, `await parallel([() => ..., ...])`, `await ask(question)`, `log(...)`,
    /// `args`; its return value is the result, printed on stdout). Every agent call is
    /// journaled in the store; stderr names the run id that `workflow resume` takes.
    Run(Box<WorkflowRunArgs>),
    /// Resume a run: its script runs again from the top; each call that finished before gets
    /// its journaled result without running, an unfinished one runs again (continuing its
    /// session when it announced one). A call whose inputs changed stops the resume, naming it.
    Resume(Box<WorkflowResumeArgs>),
    /// The most recent runs, newest first: id, status, calls, age.
    List {
        /// At most this many (at most 500).
        #[arg(long, default_value_t = 50, value_name = "N")]
        limit: usize,
        /// JSON output: [{"run_id","status","created_at","updated_at","calls","done","failed",
        /// "running","error"}].
        #[arg(long)]
        json: bool,
    },
    /// One run: its status, result or error, and every call (position, agent, state, task).
    Show {
        /// The run id (`wf_...`).
        run_id: String,
        /// JSON output: {"run": {...}, "calls": [...]}.
        #[arg(long)]
        json: bool,
    },
}

/// What `run` and `resume` share: agents, model, tree, budgets, permissions, limits, output.
#[derive(Debug, Args)]
#[command(mut_arg("model", |a| a.help("Model for local agents (spec or alias)")))]
pub(crate) struct WorkflowOptions {
    /// `--model`, `--agent-model`.
    #[command(flatten)]
    pub models: ModelArgs,
    /// Agent sources.
    #[command(flatten)]
    pub sources: AgentSources,
    /// Print the outcome as JSON: {"run_id","status","result","error","error_kind","calls",
    /// "usage"}.
    #[arg(long)]
    pub json: bool,
    /// `text` (default), `json` (the same as --json) or `stream-json` (every progress event of
    /// the workflow and its calls, one JSON object per line, then the outcome).
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    pub output_format: Option<OutputFormat>,
    /// Workspace and tree limits, budgets, permissions.
    #[command(flatten)]
    pub runner: RunnerArgs,
    /// The script's limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// The script's limits (defaults: the `WorkflowLimits` ones).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct LimitArgs {
    /// agent() and ask() calls over the whole run, resumes included (default 1000).
    #[arg(long, value_name = "N")]
    pub max_agent_calls: Option<u32>,
    /// Wall time of this process's part of the run, in seconds (default 21600).
    #[arg(long, value_name = "SECS")]
    pub max_wall_time: Option<u64>,
    /// Script work in blocks of about 10,000 operations (default 200000); waiting for agents
    /// costs none.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// The script engine's memory in MiB (default 64).
    #[arg(long, value_name = "MIB")]
    pub max_memory: Option<usize>,
}

impl LimitArgs {
    fn limits(&self) -> WorkflowLimits {
        let mut l = WorkflowLimits::default();
        if let Some(n) = self.max_agent_calls {
            l = l.with_max_agent_calls(n);
        }
        if let Some(s) = self.max_wall_time {
            l = l.with_max_wall_time(Duration::from_secs(s));
        }
        if let Some(n) = self.max_steps {
            l = l.with_max_steps(n);
        }
        if let Some(m) = self.max_memory {
            l = l.with_max_memory(m.saturating_mul(1024 * 1024));
        }
        l
    }
}

/// `subagents workflow run`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowRunArgs {
    /// The script file (at most 256 KiB).
    pub file: PathBuf,
    /// The JSON the script reads as `args` (default null).
    #[arg(long, value_name = "JSON")]
    pub arg: Option<String>,
    /// Agents, model, output, limits.
    #[command(flatten)]
    pub options: WorkflowOptions,
}

/// `subagents workflow resume`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowResumeArgs {
    /// The run id (`wf_...`).
    pub run_id: String,
    /// Run this script instead of the journaled one (fixed after a failure): calls whose
    /// inputs are unchanged at their positions keep their results.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Agents, model, output, limits.
    #[command(flatten)]
    pub options: WorkflowOptions,
}

impl WorkflowCommand {
    /// The workspace options of the commands that run agents (for the workspace approvals).
    pub(crate) fn tree(&self) -> Option<&TreeArgs> {
        match self {
            WorkflowCommand::Run(a) => Some(&a.options.runner.tree),
            WorkflowCommand::Resume(a) => Some(&a.options.runner.tree),
            _ => None,
        }
    }
}

/// `subagents workflow ...`.
pub(crate) async fn workflow(command: WorkflowCommand, config: Config) -> Result<(), CliError> {
    match command {
        WorkflowCommand::Run(a) => {
            let script = read_script(&a.file)?;
            let args = match &a.arg {
                Some(text) => serde_json::from_str(text)
                    .map_err(|e| CliError::Config(format!("--arg is not JSON: {e}")))?,
                None => serde_json::Value::Null,
            };
            execute(Start::New { script, args }, a.options, config).await
        }
        WorkflowCommand::Resume(a) => {
            let script = a.script.as_deref().map(read_script).transpose()?;
            execute(
                Start::Resume {
                    run_id: a.run_id,
                    script,
                },
                a.options,
                config,
            )
            .await
        }
        WorkflowCommand::List { limit, json } => list(limit, json, &config).await,
        WorkflowCommand::Show { run_id, json } => show(&run_id, json, &config).await,
    }
}

/// The largest script file read.
const MAX_SCRIPT_FILE: u64 = 256 * 1024;

fn read_script(path: &std::path::Path) -> Result<String, CliError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| CliError::Config(format!("cannot read {}: {e}", path.display())))?;
    if meta.len() > MAX_SCRIPT_FILE {
        return Err(CliError::Config(format!(
            "{} is {} bytes; a workflow script is at most {MAX_SCRIPT_FILE}",
            path.display(),
            meta.len()
        )));
    }
    std::fs::read_to_string(path)
        .map_err(|e| CliError::Config(format!("cannot read {}: {e}", path.display())))
}

enum Start {
    New {
        script: String,
        args: serde_json::Value,
    },
    Resume {
        run_id: String,
        script: Option<String>,
    },
}

async fn execute(start: Start, o: WorkflowOptions, mut config: Config) -> Result<(), CliError> {
    // A model is needed only by local agents: pick one if we can.
    let spec = crate::routes::choose(&o.models, &mut config).await.ok();
    let multi = crate::progress::terminal();
    let approver = crate::approve::approver(&o.runner.permissions, true, multi.clone());
    let format = OutputFormat::of(o.json, o.output_format);
    let agents = Setup::running(&o.sources, &config, spec.as_deref(), &o.runner, approver)
        .build_streaming(format.wants_text_deltas(multi.is_some()))
        .await?;
    let (sink, renderer) = if format == OutputFormat::StreamJson {
        crate::stream_json::start()
    } else {
        crate::progress::start_with_prices(
            false,
            multi,
            crate::progress::agent_colours(&agents),
            Arc::new(agents.prices().clone()),
        )
    };
    let cancel = CancellationToken::new();
    let interrupt = Interrupt::cancel_on_ctrl_c(cancel.clone());
    let run = match start {
        Start::New { script, args } => agents.workflow(script).args(args),
        Start::Resume { run_id, script } => {
            let r = agents.resume_workflow(run_id);
            match script {
                Some(s) => r.script(s),
                None => r,
            }
        }
    };
    let started = run
        .limits(o.limits.limits())
        .progress(sink)
        .cancel(cancel)
        .start()
        .await
        .map_err(|e| match e {
            WorkflowError::UnknownRun(_) | WorkflowError::Invalid(_) => {
                CliError::Config(e.to_string())
            }
            e => CliError::Failed(e.to_string()),
        })?;
    let run_id = started.run_id().to_string();
    if format == OutputFormat::Text {
        eprintln!("workflow {run_id} (resume it with: subagents workflow resume {run_id})");
    }
    let outcome = started.finish().await;
    if let Err(e) = agents.flush().await {
        eprintln!("subagents: warning: background results not saved: {e}");
    }
    let prices = agents.prices().clone();
    drop(agents);
    let _ = tokio::time::timeout(Duration::from_secs(1), renderer).await;
    let view = OutcomeView::new(&outcome);
    match format {
        OutputFormat::Text => {
            if let Some(result) = &outcome.result {
                let text = match result {
                    serde_json::Value::String(s) => s.clone(),
                    v => serde_json::to_string_pretty(v).unwrap_or_default(),
                };
                outln!("{}", crate::output::stdout_text(&text));
            }
            eprintln!("{}", summary(&outcome, &view, &prices));
        }
        OutputFormat::Json => outln!("{}", json_text(&view)?),
        OutputFormat::StreamJson => {
            let line =
                serde_json::to_string(&serde_json::json!({"type": "result", "workflow": &view}))
                    .map_err(|e| CliError::Failed(format!("cannot encode JSON: {e}")))?;
            outln!("{}", escape_json_hazards(line));
        }
    }
    interrupt.result(exit_for(&outcome))
}

/// The JSON of an outcome (`--json`, stream-json's result).
#[derive(Debug, Serialize)]
struct OutcomeView<'a> {
    run_id: &'a str,
    status: RunStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<&'static str>,
    calls: CallCounts,
    duration_ms: u64,
    /// The workflow's node with every call below it.
    usage: UsageNode,
}

impl<'a> OutcomeView<'a> {
    fn new(o: &'a WorkflowOutcome) -> Self {
        Self {
            run_id: &o.run_id,
            status: o.status,
            result: o.result.as_ref(),
            error: o.error.as_ref().map(ToString::to_string),
            error_kind: o.error.as_ref().map(WorkflowError::kind),
            calls: o.calls,
            duration_ms: o.duration.as_millis() as u64,
            usage: o.usage_tree(),
        }
    }
}

/// `workflow wf_… completed · 4 calls (3 from the journal) · 1.2k in / 300 out tokens`.
fn summary(
    o: &WorkflowOutcome,
    view: &OutcomeView<'_>,
    prices: &subagents::policy::ModelPrices,
) -> String {
    let total = view.usage.total();
    let c = &o.calls;
    let mut line = format!(
        "workflow {} {} · {} calls ({} from the journal, {} failed) · {} in / {} out tokens",
        o.run_id,
        o.status,
        o.children
            .len()
            .max((c.replayed + c.done + c.failed) as usize),
        c.replayed,
        c.failed,
        total.input_tokens,
        total.output_tokens
    );
    // The priced calls' cost (none shown when no call's model has a price).
    let costs: Vec<f64> = all_nodes(&view.usage)
        .filter_map(|n| crate::output::usage_cost(prices, &n.usage))
        .collect();
    if !costs.is_empty() {
        let cost = costs.iter().fold(0.0, |a, c| a + c);
        line.push_str(&format!(" · ${cost:.4}"));
    }
    if let Some(e) = &o.error {
        line.push_str(&format!("\nerror: {}", terminal_safe(&e.to_string())));
        if o.status != RunStatus::Completed {
            line.push_str(&format!(
                "\nfinished calls are kept: subagents workflow resume {}",
                o.run_id
            ));
        }
    }
    line
}

fn all_nodes(n: &UsageNode) -> Box<dyn Iterator<Item = &UsageNode> + '_> {
    Box::new(std::iter::once(n).chain(n.children.iter().flat_map(all_nodes)))
}

/// The exit code: 0 completed, 3 a limit, 130 cancelled (Ctrl-C), 1 otherwise.
fn exit_for(o: &WorkflowOutcome) -> Result<(), CliError> {
    match (&o.status, &o.error) {
        (RunStatus::Completed, None) => Ok(()),
        (_, Some(WorkflowError::Limit { .. })) => Err(CliError::Incomplete(format!(
            "workflow {} stopped at a limit",
            o.run_id
        ))),
        (RunStatus::Cancelled, _) => Err(CliError::Incomplete(format!(
            "workflow {} was cancelled",
            o.run_id
        ))),
        _ => Err(CliError::Failed(format!("workflow {} failed", o.run_id))),
    }
}

/// The store's view: enough to read the journal.
async fn store_only(config: &Config) -> Result<Subagents, CliError> {
    Subagents::store_view(config::store_url(config)?)
        .build()
        .await
        .map_err(crate::error::facade_error)
}

async fn list(limit: usize, json: bool, config: &Config) -> Result<(), CliError> {
    let agents = store_only(config).await?;
    let runs = agents
        .workflows()
        .journal()
        .list_runs(limit.min(500))
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    crate::output::print_list(&runs, json, "no workflow runs in the store", |r| {
        format!(
            "{:<36} {:<10} {:>5} calls ({} done, {} failed, {} unfinished) {:>6} ago",
            terminal_safe(&r.run_id),
            r.status.to_string(),
            r.calls,
            r.done,
            r.failed,
            r.running,
            crate::output::age(r.created_at)
        )
    })
}

#[derive(Serialize)]
struct ShowView<'a> {
    run: &'a RunRecord,
    calls: &'a [CallRecord],
}

async fn show(run_id: &str, json: bool, config: &Config) -> Result<(), CliError> {
    let agents = store_only(config).await?;
    let journal = agents.workflows().journal().clone();
    let failed = |e: subagents::workflows::JournalError| CliError::Failed(e.to_string());
    let Some(run) = journal.load_run(run_id).await.map_err(failed)? else {
        return Err(CliError::Config(format!(
            "no workflow run `{}` in the store",
            terminal_safe(run_id)
        )));
    };
    let calls = journal.load_calls(run_id).await.map_err(failed)?;
    if json {
        outln!(
            "{}",
            json_text(&ShowView {
                run: &run,
                calls: &calls
            })?
        );
        return Ok(());
    }
    eprintln!(
        "{} · {} · started {} ago · {} calls",
        terminal_safe(&run.run_id),
        run.status,
        crate::output::age(run.created_at),
        calls.len()
    );
    if let Some(e) = &run.error {
        eprintln!("error: {}", terminal_safe(e));
    }
    for c in &calls {
        let usage = c
            .usage
            .as_ref()
            .map(|u| {
                let t = u.total();
                format!(" · {} in / {} out tokens", t.input_tokens, t.output_tokens)
            })
            .unwrap_or_default();
        eprintln!(
            "  #{:<4} {:<20} {:<9} {}{}",
            c.position,
            terminal_safe(&c.agent),
            c.state.as_str(),
            terminal_safe(c.task_id.as_deref().unwrap_or("")),
            usage
        );
    }
    if let Some(result) = &run.result {
        let text = match result {
            serde_json::Value::String(s) => s.clone(),
            v => serde_json::to_string_pretty(v).unwrap_or_default(),
        };
        outln!("{}", crate::output::stdout_text(&text));
    }
    Ok(())
}
