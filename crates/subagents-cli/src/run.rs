//! `subagents run` (a delegating main agent) and `subagents task` (one subagent directly).

use std::sync::Arc;
use std::time::Duration;

use subagents::spi::{
    CancellationToken, ModelError, SubagentError, TaskCall, TaskContext, TaskOutcome, TaskStatus,
};
use subagents::{BackgroundState, Dispatch};

use crate::approve;
use crate::cli::{OnExit, RunArgs, TaskArgs};
use crate::config::{self, Config};
use crate::error::CliError;
use crate::interrupt::Interrupt;
use crate::output::{OutcomeJson, terminal_safe};
use crate::progress;
use crate::setup::Setup;
use crate::stream_json::{self, OutputFormat};

/// The model error behind `e`, directly or as a source of an execution error.
fn model_error(e: &SubagentError) -> Option<&ModelError> {
    if let SubagentError::Model(m) = e {
        return Some(m);
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(m) = s.downcast_ref::<ModelError>() {
            return Some(m);
        }
        source = s.source();
    }
    None
}

/// A model error that means "no model is usable" becomes exit 2, with the fix for its cause:
/// the keys, the server that does not answer, or the model named (`--model` when `given`).
fn model_failure(e: &SubagentError, given: bool) -> Option<CliError> {
    match model_error(e) {
        Some(m) if m.is_setup_problem() => {
            let hint = match m {
                ModelError::Unauthorized { .. } => {
                    "Check OPENAI_API_KEY / ANTHROPIC_API_KEY.".to_string()
                }
                ModelError::Unreachable { .. } => crate::local::unreachable_hint(m),
                _ if given => "Check the model given with --model (`subagents run --help` \
                               lists the forms)."
                    .to_string(),
                _ => "Set SUBAGENTS_MODEL or --model to a reachable model (see `subagents run \
                      --help`)."
                    .to_string(),
            };
            Some(CliError::NoModel(format!("{e}\n{hint}")))
        }
        _ => None,
    }
}

/// The command's error for a failed run; `given`: the model was named with `--model`.
fn failure(e: SubagentError, given: bool) -> CliError {
    model_failure(&e, given).unwrap_or_else(|| CliError::Failed(e.to_string()))
}

/// `subagents run`.
pub(crate) async fn run(args: RunArgs, mut config: Config) -> Result<(), CliError> {
    if args.agent.is_none() && args.prompt.as_deref().is_none_or(|p| p.trim().is_empty()) {
        return Err(CliError::Config(
            "a prompt is needed (or --agent NAME for an agent whose file has an `initialPrompt`)"
                .to_string(),
        ));
    }
    let spec = crate::routes::choose(&args.models, &mut config).await?;
    let multi = progress::terminal();
    let permissions = &args.runner.permissions;
    let counted = approve::Counted::new(approve::approver(permissions, true, multi.clone()));
    // Stream-json: every event on stdout, no live tree (issue 28 item 4).
    let format = OutputFormat::of(args.json, args.output_format);
    let stream = format.wants_text_deltas(multi.is_some());
    let agents = Setup::running(
        &args.sources,
        &config,
        Some(&spec),
        &args.runner,
        counted.clone(),
    )
    .build_streaming(stream)
    .await?;
    // A local server that does not answer: say so now, before any model call and its retries.
    if args.agent.is_none()
        && let Some(e) = crate::local::unreachable(agents.model_server(), &spec)
    {
        return Err(e);
    }
    crate::routes::notice_other_providers(&agents);
    let prompt = args.prompt.clone().unwrap_or_default();
    let main_as = match &args.agent {
        Some(name) => Some(main_agent_as(&agents, name, &prompt)?),
        None => None,
    };
    let (sink, renderer) = if format == OutputFormat::StreamJson {
        stream_json::start()
    } else {
        progress::start_with_prices(
            false,
            multi,
            progress::agent_colours(&agents),
            Arc::new(agents.prices().clone()),
        )
    };
    let cancel = CancellationToken::new();
    let interrupt = Interrupt::cancel_on_ctrl_c(cancel.clone());
    let mut main = agents
        .main_agent()
        .max_turns(args.max_turns)
        .progress(sink)
        .cancel(cancel.clone());
    if let Some((name, _)) = &main_as {
        main = main.agent(name.clone());
    }
    // A local main model gets the lean tool set unless --main-tools says otherwise.
    let (tools, lean_by_default) =
        crate::local::main_tools(args.main_tools.as_deref(), &spec, args.agent.is_some());
    if lean_by_default {
        eprintln!("{}", crate::local::lean_notice());
    }
    let lean = tools.as_ref().is_some_and(|t| {
        !t.iter()
            .any(|n| n.eq_ignore_ascii_case(crate::local::ALL_TOOLS))
    });
    if let Some(names) = tools {
        main = main.only_tools(names);
    }
    if let (Ok(Some(tokens)), Some(window)) = (main.prompt_tokens(), agents.main_context_window())
        && let Some(warning) = crate::local::window_warning(tokens, window, lean)
    {
        eprintln!("{warning}");
    }
    let mut result = main.run(prompt).await;
    // A failed main agent leaves nobody to read its background work: it is cancelled.
    let on_exit = if result.is_ok() {
        args.on_exit
    } else {
        OnExit::Cancel
    };
    let waited_for = end_background(&agents, &cancel, on_exit).await;
    if let Ok(outcome) = &mut result {
        // The usage of background children no TaskOutput read still counts.
        outcome.children.extend(agents.take_unreported_usage());
    }
    flush_store(&agents).await;
    let prices = agents.prices().clone();
    drop(agents);
    let _ = tokio::time::timeout(Duration::from_secs(1), renderer).await;
    let outcome = interrupt.result(result.map_err(|e| match e {
        // The main agent's own input errors are usage errors (e.g. an unknown --main-tools name).
        SubagentError::InvalidInput(m) => CliError::Config(m),
        e => failure(e, args.models.model.is_some()),
    }))?;
    let (name, kind) = main_as.unwrap_or_else(|| ("main".to_string(), "MAIN".to_string()));
    let json = OutcomeJson::new(&name, &kind, &outcome, None).with_prices(&prices);
    let done = interrupt.result(stream_json::finish(&outcome, &json, format));
    if format == OutputFormat::Text {
        print_background_results(&waited_for);
    }
    if let Some(line) = counted.closing_line() {
        eprintln!("{line}");
    }
    // Ctrl-C while waiting for background tasks: the answer stands, the command was interrupted.
    if done.is_ok() && interrupt.fired() {
        return Err(CliError::Interrupted(
            "interrupted while waiting for background tasks (cancelled, their partial output \
             kept)"
                .to_string(),
        ));
    }
    done?;
    match crate::failures::summary(json.children_total, &json.failures) {
        Some(failed) if args.fail_on_child_error => Err(CliError::ChildFailed(format!(
            "{failed} (--fail-on-child-error)"
        ))),
        _ => Ok(()),
    }
}

/// The answers of the background tasks `run` waited for after the main agent's (text mode,
/// stdout), each under a line naming it; nothing for those that ended without text.
fn print_background_results(waited_for: &[subagents::BackgroundSnapshot]) {
    for s in waited_for {
        let BackgroundState::Finished(o) = &s.state else {
            continue;
        };
        if o.text.trim().is_empty() {
            continue;
        }
        crate::output::outln!(
            "\n[background task {} ({}) {}]\n{}",
            terminal_safe(&s.task_id),
            terminal_safe(&s.agent),
            o.status,
            crate::output::stdout_text(o.text.trim_end())
        );
    }
}

/// The end of a run with background tasks still running: names them on stderr, then waits
/// for them (`wait`; Ctrl-C, which cancels `cancel`, cancels them) or cancels them
/// (`cancel`), and says how each ended; returns their final states. Cancelled tasks keep their
/// partial output, in the store too.
async fn end_background(
    agents: &subagents::Subagents,
    cancel: &CancellationToken,
    on_exit: OnExit,
) -> Vec<subagents::BackgroundSnapshot> {
    let running = agents.running_background();
    if running.is_empty() {
        return Vec::new();
    }
    let names = running
        .iter()
        .map(|s| {
            format!(
                "{} ({})",
                terminal_safe(&s.agent),
                terminal_safe(&s.task_id)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let n = running.len();
    match on_exit {
        OnExit::Wait => eprintln!(
            "subagents: waiting for {n} background task(s) still running: {names}. Ctrl-C \
             cancels them (their partial output is kept)."
        ),
        OnExit::Cancel => {
            eprintln!("subagents: cancelling {n} background task(s) still running: {names}");
            cancel.cancel();
        }
    }
    let ended = agents.finish_background(cancel).await;
    for s in &ended {
        eprintln!(
            "subagents: background task {} ({}) ended {}",
            terminal_safe(&s.task_id),
            terminal_safe(&s.agent),
            s.status()
        );
    }
    ended
}

/// The agent `--agent NAME` names, as (registered name, kind); a configuration error (exit 2)
/// when it is unknown, or when no prompt is given and its file has no `initialPrompt`.
fn main_agent_as(
    agents: &subagents::Subagents,
    name: &str,
    prompt: &str,
) -> Result<(String, String), CliError> {
    let task = agents.task();
    let def = crate::lookup::agent(task, name, " for --agent")?;
    let has_initial = def
        .downcast_ref::<subagents::claude::ClaudeAgentDefinition>()
        .is_some_and(|d| d.initial_prompt.is_some());
    if prompt.trim().is_empty() && !has_initial {
        return Err(CliError::Config(format!(
            "agent `{}` has no `initialPrompt`, so a prompt is needed",
            def.name()
        )));
    }
    let kind = task
        .kind_of(def.name())
        .map(|k| k.to_string())
        .unwrap_or_default();
    Ok((def.name().to_string(), kind))
}

/// Writes what the background writer still holds before the process exits; a failure is
/// reported on stderr (the results it names are lost).
async fn flush_store(agents: &subagents::Subagents) {
    if let Err(e) = agents.flush().await {
        eprintln!("subagents: warning: background results not saved: {e}");
    }
}

/// `subagents task` (and `tasks resume`, which continues a background task's session).
pub(crate) async fn task(args: TaskArgs, mut config: Config) -> Result<(), CliError> {
    // `--background` returns at once: the task runs on in a process of its own (crate::detach).
    let durable = !matches!(
        config::store_url(&config)?,
        subagents::store::StoreUrl::Memory
    );
    if crate::detach::applies(&args, durable) {
        let json = OutputFormat::of(args.json, args.output_format) != OutputFormat::Text;
        return crate::detach::start(&args, json).await;
    }
    if args.background && !args.background_worker {
        eprintln!(
            "subagents: nothing would keep a background result after this process (--store \
             memory): waiting here for it"
        );
    }
    let output_schema = args
        .output_schema
        .as_deref()
        .map(crate::typed::read_schema)
        .transpose()?;
    // A model is needed only by local agents: pick one if we can, and report "no model"
    // (exit 2) only if the chosen agent turns out to need it.
    let (spec, model_problem) = match crate::routes::choose(&args.models, &mut config).await {
        Ok(spec) => (Some(spec), None),
        Err(e) => (None, Some(e)),
    };
    let multi = progress::terminal();
    let permissions = &args.runner.permissions;
    let counted = approve::Counted::new(approve::approver(permissions, true, multi.clone()));
    let approver: Arc<dyn subagents::spi::Approver> = counted.clone();
    let format = OutputFormat::of(args.json, args.output_format);
    let stream = format.wants_text_deltas(multi.is_some());
    let setup = Setup::running(
        &args.sources,
        &config,
        spec.as_deref(),
        &args.runner,
        approver.clone(),
    );
    let agents = setup.build_streaming(stream).await?;
    let task = agents.task();
    // `tasks resume ID`: the agent and session come from the task.
    let resumed = match &args.resume_task {
        Some(id) => Some(
            agents
                .resume_call(id, args.prompt.clone())
                .await
                .map_err(|e| CliError::Config(e.to_string()))?,
        ),
        None => None,
    };
    let agent_name = resumed
        .as_ref()
        .map_or(args.agent.as_str(), |c| c.subagent_type.as_str());
    let def = crate::lookup::agent(task, agent_name, "")?.clone();
    let kind = task.kind_of(def.name()).cloned();
    if let Some(problem) = model_problem
        && kind.as_ref() == Some(&subagents::claude::KIND)
    {
        return Err(problem);
    }

    let (sink, renderer) = if format == OutputFormat::StreamJson {
        stream_json::start()
    } else {
        progress::start(false, multi)
    };
    let ctx = TaskContext::new().with_progress(sink);
    let interrupt = Interrupt::cancel_on_ctrl_c(ctx.cancel().clone());
    // Without --background, the agent's own default (`background: true`) decides.
    let mut call = match resumed {
        Some(call) => call,
        None => {
            let mut call = TaskCall::new(def.name(), "command-line task", args.prompt.clone());
            call.resume = args.resume.clone();
            call
        }
    };
    if args.background {
        call = call.in_background(true);
    }
    call.model = args.models.model.clone();
    // Typed result (crate::typed): the schema file, read and checked before anything starts.
    if output_schema.is_some() {
        call.output_schema = output_schema;
    }
    let resumed_session = args.resume_task.as_ref().and(call.resume.clone());
    let dispatched = agents.dispatch(call, &ctx).await;
    let result: Result<(String, Option<String>, TaskOutcome), SubagentError> = match dispatched {
        Ok(Dispatch::Foreground {
            agent,
            task_id,
            outcome,
            ..
        }) => Ok((agent, Some(task_id), outcome)),
        Ok(Dispatch::Background { agent, task_id }) => {
            eprintln!(
                "started {} in the background as {}",
                crate::output::terminal_safe(&agent),
                crate::output::terminal_safe(&task_id)
            );
            loop {
                let snap = match task.output(&task_id, Some(Duration::from_secs(5))).await {
                    Ok(s) => s,
                    Err(e) => break Err(e),
                };
                match snap.state {
                    BackgroundState::Running => {
                        eprintln!("{task_id} still running after {} s", snap.elapsed.as_secs());
                    }
                    BackgroundState::Queued => {
                        eprintln!(
                            "{task_id} queued (max_concurrent reached) after {} s",
                            snap.elapsed.as_secs()
                        );
                    }
                    BackgroundState::WaitingForApproval(question) => {
                        // This command is the task's caller: its approver answers.
                        let decision = approver.request(question).await;
                        if let Err(e) = task.answer_approval(&task_id, decision) {
                            tracing::debug!("approval answer not delivered: {e}");
                        }
                    }
                    BackgroundState::Finished(o) => break Ok((agent, Some(task_id), o)),
                    BackgroundState::Failed(msg) => {
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
    let on_exit = if result.is_ok() {
        OnExit::Wait
    } else {
        OnExit::Cancel
    };
    end_background(&agents, ctx.cancel(), on_exit).await;
    // Ctrl-C in `tasks resume`: an MCP task is cancelled on its server too (crate::resume_interrupt).
    if let (true, Some(id)) = (interrupt.fired(), &args.resume_task) {
        crate::resume_interrupt::after_ctrl_c(&agents, id, resumed_session.as_deref()).await;
    }
    drop(ctx);
    let mut result = result;
    if let Ok((_, _, outcome)) = &mut result {
        outcome.children.extend(agents.take_unreported_usage());
    }
    flush_store(&agents).await;
    let prices = agents.prices().clone();
    drop(agents);
    let _ = tokio::time::timeout(Duration::from_secs(1), renderer).await;
    let given = args.models.model.is_some();
    let (agent, task_id, outcome) = interrupt.result(result.map_err(|e| failure(e, given)))?;
    let kind = kind.map(|k| k.to_string()).unwrap_or_default();
    let json = OutcomeJson::new(&agent, &kind, &outcome, task_id.as_deref()).with_prices(&prices);
    let done = interrupt.result(stream_json::finish(&outcome, &json, format));
    if let Some(line) = counted.closing_line() {
        eprintln!("{line}");
    }
    done
}
