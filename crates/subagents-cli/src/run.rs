//! `subagents run` (a delegating main agent) and `subagents task` (one subagent directly).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use subagent_claude::{ClaudeSubagentReferences, ClaudeSubagentType};
use subagent_runtime::{AgentRuntime, Limits, ModelRegistry, RunSpec};
use subagent_spi::{
    ChatModel, ModelError, SubagentError, SubagentReference, TaskCall, TaskContext, TaskOutcome,
    TaskStatus, Tool,
};
use subagent_tools::{ToolSet, Workspace};
use task_tool::{Dispatch, TaskTool};

use crate::agents::agent_dirs;
use crate::cli::{AgentSources, RunArgs, TaskArgs};
use crate::config::{self, Config};
use crate::error::CliError;
use crate::output::{OutcomeJson, finish};
use crate::progress;

/// The main agent's system prompt.
const MAIN_SYSTEM: &str = "You are the main agent of a team. Work on the user's request with \
your tools. Delegate self-contained pieces of work to subagents with the Task tool: each starts \
with a fresh context, so give it a complete prompt; only its final answer comes back. Run \
independent subagents in parallel (several Task calls in one reply) or in the background \
(run_in_background, then TaskOutput). When you are done, answer the user directly and \
concisely.";

/// The workspace root for file and shell tools.
pub fn workspace(dir: Option<&Path>) -> Result<Workspace, CliError> {
    let root = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| CliError::Config(format!("cannot read the current directory: {e}")))?,
    };
    Workspace::new(&root)
        .map_err(|e| CliError::Config(format!("workspace {}: {e}", root.display())))
}

/// Every agent reference from the sources and the config file.
async fn references(
    sources: &AgentSources,
    config: &Config,
) -> Result<Vec<SubagentReference>, CliError> {
    let mut dirs: Vec<PathBuf> = sources.agents.clone();
    dirs.extend(config.agents.iter().cloned());
    let mut refs = Vec::new();
    for dir in agent_dirs(&dirs) {
        let (found, skipped) = ClaudeSubagentReferences::from_dir(&dir)
            .await
            .map_err(|e| CliError::Config(e.to_string()))?;
        for s in skipped {
            tracing::info!(path = %s.path.display(), reason = %s.reason, "agent file skipped");
        }
        refs.extend(found);
    }
    for url in sources.a2a.iter().chain(&config.a2a) {
        refs.push(SubagentReference::new(url, subagent_a2a::client::KIND));
    }
    crate::mcp::add_references(&mut refs, sources.mcp.iter().chain(&config.mcp));
    Ok(refs)
}

/// Builds the Task tool over every kind the CLI knows.
pub async fn task_tool(
    sources: &AgentSources,
    config: &Config,
    models: ModelRegistry,
    ws: &Workspace,
) -> Result<TaskTool, CliError> {
    let cwd = ws.root().to_path_buf();
    let skill_dirs = subagent_claude::skill_dirs(&cwd, subagent_claude::home_dir().as_deref());
    let claude = ClaudeSubagentType::builder()
        .models(models)
        .tools(ToolSet::all(ws.clone()))
        .skill_dirs(skill_dirs)
        .mcp_tools(crate::mcp::tool_source(ws.root()).await?)
        .build();
    let mut types = vec![claude, subagent_a2a::client::a2a_subagent_type()];
    types.extend(crate::mcp::kinds());
    TaskTool::builder()
        .subagent_types(types)
        .subagent_references(references(sources, config).await?)
        .build()
        .await
        .map_err(|e| CliError::Config(e.to_string()))
}

/// Cancels `ctx` on Ctrl-C.
fn cancel_on_ctrl_c(ctx: &TaskContext) -> tokio::task::JoinHandle<()> {
    let cancel = ctx.cancel().clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("interrupted: cancelling");
            cancel.cancel();
        }
    })
}

/// A model error that means "no model is reachable" becomes exit code 2.
fn model_failure(e: &SubagentError) -> Option<CliError> {
    match e {
        SubagentError::Model(
            m @ (ModelError::Connection { .. }
            | ModelError::Config(_)
            | ModelError::UnknownModel { .. }),
        ) => Some(CliError::NoModel(format!(
            "{m}\nSet SUBAGENTS_MODEL or --model to a reachable model (see `subagents run --help`)."
        ))),
        SubagentError::Model(ModelError::Http {
            status: 401 | 403, ..
        }) => Some(CliError::NoModel(format!(
            "{e}\nCheck OPENAI_API_KEY / ANTHROPIC_API_KEY."
        ))),
        _ => None,
    }
}

/// `subagents run`.
pub async fn run(args: RunArgs, config: Config) -> Result<(), CliError> {
    let spec = config::choose_model_spec(args.model.as_deref(), &config).await?;
    let registry = config::registry(&spec, &config)?;
    let model: Arc<dyn ChatModel> = registry
        .default_model()
        .map_err(|e| CliError::NoModel(e.to_string()))?;
    let ws = workspace(args.workspace.as_deref())?;
    let task = task_tool(&args.sources, &config, registry, &ws).await?;

    let (sink, renderer) = progress::start(false);
    let mut ctx = TaskContext::new()
        .with_progress(sink)
        .with_parent_model(spec.clone());
    ctx.agent() = "main".into();
    ctx.task_id() = Some("main".into());
    let interrupt = cancel_on_ctrl_c(&ctx);

    let mut tools: Vec<Arc<dyn Tool>> = ToolSet::all(ws);
    tools.extend(task.tools());
    let spec_run = RunSpec::new(model, args.prompt.clone())
        .with_system(MAIN_SYSTEM)
        .with_tools(tools)
        .with_limits(Limits::default().with_max_turns(args.max_turns));
    let result = AgentRuntime::default().run(spec_run, &ctx).await;
    interrupt.abort();
    drop(ctx);
    drop(task);
    let _ = tokio::time::timeout(Duration::from_secs(1), renderer).await;

    let outcome = match result {
        Ok(o) => o,
        Err(e) => return Err(model_failure(&e).unwrap_or_else(|| CliError::Failed(e.to_string()))),
    };
    let json = OutcomeJson::new("main", "MAIN", &outcome, None);
    finish(&outcome, args.json.then_some(&json))
}

/// `subagents task`.
pub async fn task(args: TaskArgs, config: Config) -> Result<(), CliError> {
    // A model is needed only by local agents: pick one if we can, and report "no model"
    // (exit 2) only if the chosen agent turns out to need it.
    let (registry, model_problem) =
        match config::choose_model_spec(args.model.as_deref(), &config).await {
            Ok(spec) => (config::registry(&spec, &config)?, None),
            Err(e) => (ModelRegistry::new(), Some(e)),
        };
    let ws = workspace(args.workspace.as_deref())?;
    let task = task_tool(&args.sources, &config, registry, &ws).await?;
    let Some(def) = task.find(&args.agent).cloned() else {
        return Err(CliError::Config(format!(
            "unknown agent `{}`; available agents: {}",
            args.agent,
            task.agent_names().join(", ")
        )));
    };
    if let Some(problem) = model_problem
        && def.kind() == subagent_claude::KIND
    {
        return Err(problem);
    }

    let (sink, renderer) = progress::start(false);
    let ctx = TaskContext::new().with_progress(sink);
    let interrupt = cancel_on_ctrl_c(&ctx);
    let mut call = TaskCall::new(def.name(), "command-line task", args.prompt.clone())
        .in_background(args.background);
    call.model = args.model.clone();
    let dispatched = task.dispatch(call, &ctx).await;
    let result: Result<(String, Option<String>, TaskOutcome), SubagentError> = match dispatched {
        Ok(Dispatch::Foreground {
            agent,
            task_id,
            outcome,
            ..
        }) => Ok((agent, Some(task_id), outcome)),
        Ok(Dispatch::Background { agent, task_id }) => {
            eprintln!("started {agent} in the background as {task_id}");
            loop {
                let snap = match task.output(&task_id, Some(Duration::from_secs(5))).await {
                    Ok(s) => s,
                    Err(e) => break Err(e),
                };
                match snap.state {
                    task_tool::BackgroundState::Running => {
                        eprintln!("{task_id} still running after {} s", snap.elapsed.as_secs());
                    }
                    task_tool::BackgroundState::Finished(o) => break Ok((agent, Some(task_id), o)),
                    task_tool::BackgroundState::Failed(msg) => {
                        break Err(SubagentError::execution(agent, msg));
                    }
                    _ => {
                        break Ok((
                            agent,
                            Some(task_id),
                            TaskOutcome::with_status("", TaskStatus::Failed),
                        ));
                    }
                }
            }
        }
        Ok(_) => Err(SubagentError::execution(
            def.name(),
            "unexpected dispatch result",
        )),
        Err(e) => Err(e),
    };
    interrupt.abort();
    drop(ctx);
    let _ = tokio::time::timeout(Duration::from_secs(1), renderer).await;
    let (agent, task_id, outcome) = match result {
        Ok(r) => r,
        Err(e) => return Err(model_failure(&e).unwrap_or_else(|| CliError::Failed(e.to_string()))),
    };
    let json = OutcomeJson::new(&agent, def.kind(), &outcome, task_id.as_deref());
    finish(&outcome, args.json.then_some(&json))
}
