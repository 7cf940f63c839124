//! `subagents tasks`: the background tasks kept in the store (list, show, stop: the facade's
//! [`Subagents::tasks`] records, rendered); `resume` runs as `subagents task` does (see
//! [`crate::run::task`]).

use serde::Serialize;
use subagents::{Subagents, TaskRecord};

use crate::cli::TasksCommand;
use crate::config::Config;
use crate::error::CliError;
use crate::output::{age, duration, json_text, outln, print_list, stdout_text, terminal_safe};

/// The store's view ([`Subagents::store_view`]), plus the MCP agents of `mcp` (for `tasks
/// stop`: a task their server still runs is cancelled there).
async fn store_only(config: &Config, mcp: &[String]) -> Result<Subagents, CliError> {
    let mut b = Subagents::store_view(crate::config::store_url(config)?);
    for spec in mcp {
        b = b.mcp_agent(spec.clone());
    }
    b.build().await.map_err(crate::error::facade_error)
}

/// `tasks list`, `tasks show`, `tasks stop` (`tasks resume` is dispatched to `run::task`).
pub(crate) async fn tasks(command: TasksCommand, config: &Config) -> Result<(), CliError> {
    // `tasks stop`: the MCP agents of the command line and the configuration (issue 32).
    let mcp: Vec<String> = match &command {
        TasksCommand::Stop { mcp, .. } => mcp.iter().chain(&config.mcp).cloned().collect(),
        _ => Vec::new(),
    };
    let agents = store_only(config, &mcp).await?;
    let failed = |e: subagents::SubagentError| CliError::Failed(e.to_string());
    let tasks = agents.tasks();
    match command {
        TasksCommand::List { limit, json } => {
            let list = tasks.list(limit).await.map_err(failed)?;
            print_list(&list, json, "no background tasks in the store", |t| {
                format!(
                    "{:<38} {:<20} {:<13} {:>8}  {}",
                    terminal_safe(&t.task_id),
                    terminal_safe(&t.agent),
                    t.status.to_string(),
                    age(t.started_at),
                    terminal_safe(&first_line(&t.description))
                )
            })?;
        }
        TasksCommand::Show { id, json } => {
            let t = tasks.show(&id).await.map_err(failed)?;
            render(&t, json)?;
        }
        TasksCommand::Stop { id, json, .. } => {
            let t = tasks.stop(&id).await.map_err(failed)?;
            render(&t, json)?;
            if t.status == subagents::TaskStatus::Running {
                return Err(CliError::Incomplete(format!(
                    "background task {} was asked to stop but still runs",
                    terminal_safe(&id)
                )));
            }
        }
        TasksCommand::Resume(_) => {
            return Err(CliError::Failed("tasks resume runs as a task".into()));
        }
    }
    if let Err(e) = agents.flush().await {
        eprintln!("subagents: warning: background results not saved: {e}");
    }
    Ok(())
}

/// One task: a header (id, agent, status, times, session, note) on stderr and its output on
/// stdout, or the JSON. Everything in it is the task's (a model's, a peer's): the header is
/// escaped as `tasks list` is, the output exact on a pipe and escaped on a terminal (as `run`
/// and `tasks resume` print an answer), the JSON exact and terminal-safe.
fn render(t: &TaskRecord, json: bool) -> Result<(), CliError> {
    if json {
        return print_json(t);
    }
    eprintln!(
        "{} · {} ({}) · {} · started {} ago · ran {}",
        terminal_safe(&t.task_id),
        terminal_safe(&t.agent),
        terminal_safe(&t.kind),
        t.status,
        age(t.started_at),
        duration(t.elapsed)
    );
    if let Some(session) = &t.session_id {
        eprintln!("session {}", terminal_safe(session));
    }
    if let Some(e) = &t.error {
        eprintln!("error: {}", terminal_safe(e));
    }
    if let Some(note) = &t.note {
        eprintln!("note: {}", terminal_safe(note));
    }
    outln!("{}", stdout_text(t.output.as_deref().unwrap_or_default()));
    Ok(())
}

fn first_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(60)
        .collect()
}

/// `v` as JSON: exact, and safe on a terminal (see [`json_text`]).
fn print_json(v: &impl Serialize) -> Result<(), CliError> {
    outln!("{}", json_text(v)?);
    Ok(())
}
