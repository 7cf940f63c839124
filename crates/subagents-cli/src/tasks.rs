//! `subagents tasks`: the background tasks kept in the store (list, show, stop); `resume`
//! runs as `subagents task` does (see [`crate::run::task`]).

use std::time::{Duration, SystemTime};

use serde::Serialize;
use subagents::{BackgroundSnapshot, BackgroundState, Subagents};

use crate::cli::TasksCommand;
use crate::config::Config;
use crate::error::CliError;
use crate::output::{outln, terminal_safe};

/// One task as `tasks list --json` and `tasks show --json` print it.
#[derive(Debug, Serialize)]
struct TaskJson<'a> {
    task_id: &'a str,
    agent: &'a str,
    kind: &'a str,
    description: &'a str,
    status: subagents::TaskStatus,
    /// Unix milliseconds.
    started_at: u64,
    elapsed_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    /// The result's text, or the last output streamed (show only).
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'a str>,
}

impl<'a> TaskJson<'a> {
    fn new(s: &'a BackgroundSnapshot, with_output: bool) -> Self {
        Self {
            task_id: &s.task_id,
            agent: &s.agent,
            kind: &s.kind,
            description: &s.description,
            status: s.status(),
            started_at: s
                .started_at
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            elapsed_ms: s.elapsed.as_millis() as u64,
            session_id: s.session_id.as_deref(),
            output: with_output.then(|| output_of(s)),
            error: match &s.state {
                BackgroundState::Failed(e) => Some(e),
                _ => None,
            },
            note: s.note.as_deref(),
        }
    }
}

/// The result's text when it ended with one, else the output streamed so far.
fn output_of(s: &BackgroundSnapshot) -> String {
    match s.outcome() {
        Some(o) if !o.text.is_empty() => o.text.clone(),
        _ => s.partial.clone(),
    }
}

/// The agents with the store only: enough to read and stop the tasks it keeps; plus the MCP
/// agents of `mcp` (for `tasks stop`: a task their server still runs is cancelled there).
async fn store_only(config: &Config, mcp: &[String]) -> Result<Subagents, CliError> {
    let mut b = Subagents::builder()
        .builtin_agents(false)
        .store(crate::config::store_url(config)?);
    for spec in mcp {
        b = b.mcp_agent(spec.clone());
    }
    b.build().await.map_err(crate::setup::facade_error)
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
    match command {
        TasksCommand::List { limit, json } => {
            let list = agents.list_background(limit).await.map_err(failed)?;
            if json {
                let v: Vec<TaskJson<'_>> = list.iter().map(|s| TaskJson::new(s, false)).collect();
                print_json(&v)?;
            } else if list.is_empty() {
                eprintln!("no background tasks in the store");
            } else {
                for s in &list {
                    outln!(
                        "{:<38} {:<20} {:<13} {:>8}  {}",
                        terminal_safe(&s.task_id),
                        terminal_safe(&s.agent),
                        s.status().to_string(),
                        age(s.started_at),
                        terminal_safe(&first_line(&s.description))
                    );
                }
            }
        }
        TasksCommand::Show { id, json } => {
            let s = agents.background_task(&id).await.map_err(failed)?;
            render(&s, json)?;
        }
        TasksCommand::Stop { id, json, .. } => {
            let s = agents.stop_background(&id).await.map_err(failed)?;
            render(&s, json)?;
            if s.status() == subagents::TaskStatus::Running {
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
/// stdout, or the JSON.
fn render(s: &BackgroundSnapshot, json: bool) -> Result<(), CliError> {
    if json {
        return print_json(&TaskJson::new(s, true));
    }
    eprintln!(
        "{} · {} ({}) · {} · started {} ago · ran {}",
        terminal_safe(&s.task_id),
        terminal_safe(&s.agent),
        terminal_safe(&s.kind),
        s.status(),
        age(s.started_at),
        duration(s.elapsed)
    );
    if let Some(session) = &s.session_id {
        eprintln!("session {}", terminal_safe(session));
    }
    if let BackgroundState::Failed(e) = &s.state {
        eprintln!("error: {}", terminal_safe(e));
    }
    if let Some(note) = &s.note {
        eprintln!("note: {}", terminal_safe(note));
    }
    outln!("{}", output_of(s));
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

/// How long ago `t` was, shortly (`42s`, `5m`, `3h`, `2d`).
fn age(t: SystemTime) -> String {
    duration(SystemTime::now().duration_since(t).unwrap_or_default())
}

fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..120 => format!("{s}s"),
        120..7_200 => format!("{}m", s / 60),
        7_200..172_800 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

fn print_json(v: &impl Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(v)
        .map_err(|e| CliError::Failed(format!("cannot encode JSON: {e}")))?;
    outln!("{text}");
    Ok(())
}
