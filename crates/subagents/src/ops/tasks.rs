//! [`BackgroundTasks`]: the background tasks of an assembly and its store as records (what
//! `subagents tasks list/show/stop` print), and [`Subagents::store_view`], the assembly that
//! reads them.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use subagent_spi::{SubagentError, TaskStatus};
use task_tool::{BackgroundSnapshot, BackgroundState};

use crate::Subagents;

/// One background task as a host shows it: who ran it, its status and times, and (from
/// [`BackgroundTasks::show`] and [`BackgroundTasks::stop`]) its output. Serialized, it is the
/// JSON of `subagents tasks list --json` / `show --json` (`started_at` in Unix milliseconds,
/// `elapsed_ms`; absent fields left out).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task id (`task_...`).
    pub task_id: String,
    /// The agent's name.
    pub agent: String,
    /// The agent's kind.
    pub kind: String,
    /// The call's short description.
    pub description: String,
    /// Its status (`running` while queued, running or waiting for approval).
    pub status: TaskStatus,
    /// When it started.
    #[serde(serialize_with = "unix_ms")]
    pub started_at: SystemTime,
    /// How long it ran (so far).
    #[serde(rename = "elapsed_ms", serialize_with = "ms")]
    pub elapsed: Duration,
    /// The session it announced (to resume it with).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Its result's text, or the output streamed so far when it has none (`show`, `stop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A note (interrupted, or what stopping it did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn unix_ms<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    let ms = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    s.serialize_u64(ms)
}

fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

impl TaskRecord {
    /// The record of `s`, with its output when `with_output`.
    pub fn new(s: &BackgroundSnapshot, with_output: bool) -> Self {
        Self {
            task_id: s.task_id.clone(),
            agent: s.agent.clone(),
            kind: s.kind.clone(),
            description: s.description.clone(),
            status: s.status(),
            started_at: s.started_at,
            elapsed: s.elapsed,
            session_id: s.session_id.clone(),
            output: with_output.then(|| output_of(s)),
            error: match &s.state {
                BackgroundState::Failed(e) => Some(e.clone()),
                _ => None,
            },
            note: s.note.clone(),
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

/// The background tasks of an assembly, and those its store keeps from other and earlier
/// processes, as [`TaskRecord`]s: [`Subagents::tasks`]. (The live snapshots are
/// [`Subagents::list_background`], [`background_task`](Subagents::background_task) and
/// [`stop_background`](Subagents::stop_background); an ended task's session continues with
/// [`resume_background`](Subagents::resume_background).)
#[derive(Debug, Clone, Copy)]
pub struct BackgroundTasks<'a> {
    agents: &'a Subagents,
}

impl Subagents {
    /// The background tasks of this assembly and its store, as records.
    pub fn tasks(&self) -> BackgroundTasks<'_> {
        BackgroundTasks { agents: self }
    }
}

impl BackgroundTasks<'_> {
    /// The most recent tasks, newest first, at most `limit` (at most
    /// [`task_tool::MAX_LISTED`]); without their output.
    pub async fn list(&self, limit: usize) -> Result<Vec<TaskRecord>, SubagentError> {
        let list = self.agents.list_background(limit).await?;
        Ok(list.iter().map(|s| TaskRecord::new(s, false)).collect())
    }

    /// One task, with its output.
    pub async fn show(&self, task_id: &str) -> Result<TaskRecord, SubagentError> {
        let s = self.agents.background_task(task_id).await?;
        Ok(TaskRecord::new(&s, true))
    }

    /// Stops a task (see [`Subagents::stop_background`]) and returns its record, with its
    /// output; a status still [`Running`](TaskStatus::Running) means it was asked to stop but
    /// has not yet.
    pub async fn stop(&self, task_id: &str) -> Result<TaskRecord, SubagentError> {
        let s = self.agents.stop_background(task_id).await?;
        Ok(TaskRecord::new(&s, true))
    }
}

#[cfg(feature = "store")]
impl Subagents {
    /// The builder of an assembly that only reads a store's background tasks (no built-in
    /// agents, no model): enough for [`tasks`](Self::tasks) to list, show and stop them. Add
    /// the MCP agents whose server-side tasks [`BackgroundTasks::stop`] should cancel with
    /// [`mcp_agent`](crate::SubagentsBuilder::mcp_agent). Feature `store`.
    pub fn store_view(store: subagent_store::StoreUrl) -> crate::SubagentsBuilder {
        Self::builder().builtin_agents(false).store(store)
    }
}
