//! The journal: what a workflow run did, call by call, so a resumed run repeats no finished
//! call. The contract ([`Journal`]) lives here; `subagent-store` implements it on SQLite and
//! PostgreSQL (feature `workflow`), [`MemoryJournal`] in memory.
//!
//! A run is one [`RunRecord`] (the script, its `args`, how it ended) and one [`CallRecord`] per
//! `agent()` or `ask()` call, keyed by its **position**: the call's order among the calls the
//! run made. A call is saved before it starts (`running`, with the hash of its inputs), again
//! when its child's task and session ids are known, and when it ends (`done` or `failed`, with
//! the value handed to the script and the order it was handed in, `seq`). See the crate docs
//! for why positions are deterministic.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use subagent_spi::{UsageNode, async_trait};

/// A journal failure: what was being done, with the store's error as the source.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {message}")]
#[non_exhaustive]
pub struct JournalError {
    /// What was being done, e.g. `save call`.
    pub what: &'static str,
    /// The store's message.
    pub message: String,
    /// The store's error.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl JournalError {
    /// An error of `what` with the store's `source`.
    pub fn new(
        what: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        let source = source.into();
        Self {
            what,
            message: source.to_string(),
            source: Some(source),
        }
    }
}

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Started and not ended: running in some process, or that process died (resume it).
    Running,
    /// The script returned; the result is kept.
    Completed,
    /// The script threw, crossed a limit, or a resume diverged; the error is kept.
    Failed,
    /// Cancelled (Ctrl-C); calls in flight stay unfinished, so a resume runs them again.
    Cancelled,
}

impl RunStatus {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => RunStatus::Running,
            "completed" => RunStatus::Completed,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            _ => return None,
        })
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One workflow run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunRecord {
    /// The run's id (`wf_…`).
    pub run_id: String,
    /// The script.
    pub script: String,
    /// The `args` it was given.
    pub args: serde_json::Value,
    /// How it stands.
    pub status: RunStatus,
    /// The script's return value, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it was first started (Unix milliseconds in JSON).
    #[serde(with = "unix_ms")]
    pub created_at: SystemTime,
    /// When it last changed.
    #[serde(with = "unix_ms")]
    pub updated_at: SystemTime,
}

impl RunRecord {
    /// A run just started.
    pub fn new(
        run_id: impl Into<String>,
        script: impl Into<String>,
        args: serde_json::Value,
    ) -> Self {
        let now = SystemTime::now();
        Self {
            run_id: run_id.into(),
            script: script.into(),
            args,
            status: RunStatus::Running,
            result: None,
            error: None,
            created_at: now,
            updated_at: now,
        }
    }
}

/// What a call asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallKind {
    /// `agent(name, prompt, {…})`.
    Agent,
    /// `ask(question)`.
    Ask,
}

impl CallKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallKind::Agent => "agent",
            CallKind::Ask => "ask",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "agent" => Some(CallKind::Agent),
            "ask" => Some(CallKind::Ask),
            _ => None,
        }
    }
}

/// How a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallState {
    /// Recorded before it started; not ended (or its process died).
    Running,
    /// Ended with a value the script got.
    Done,
    /// Ended with an error the script got (a failure is a value too: it is not run again).
    Failed,
    /// Cancelled with its workflow, never handed to the script: a resume runs it again.
    Cancelled,
}

impl CallState {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallState::Running => "running",
            CallState::Done => "done",
            CallState::Failed => "failed",
            CallState::Cancelled => "cancelled",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => CallState::Running,
            "done" => CallState::Done,
            "failed" => CallState::Failed,
            "cancelled" => CallState::Cancelled,
            _ => return None,
        })
    }

    /// True for [`Done`](Self::Done) and [`Failed`](Self::Failed): the script got its value, and a
    /// resume hands it over again without running anything.
    pub fn is_finished(self) -> bool {
        matches!(self, CallState::Done | CallState::Failed)
    }
}

/// One `agent()` or `ask()` call of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallRecord {
    /// Its position: its order among the run's calls, from 0.
    pub position: u32,
    /// `agent` or `ask`.
    pub kind: CallKind,
    /// The agent's name as the script gave it (`ask` for a question).
    pub agent: String,
    /// SHA-256 (hex) of its inputs: agent, prompt, schema, model, description (the question for
    /// `ask`).
    pub input_hash: String,
    /// The call's description (the script's, else empty).
    pub description: String,
    /// How it stands.
    pub state: CallState,
    /// The child run's task id, once it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The child's session, once announced: a resume of an unfinished call continues it (a
    /// Markdown agent's transcript, an MCP server's task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The order the script got its value in (finished calls), from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// What the script got: the answer (a string, or the value of a typed call) when done; for
    /// a failure `{"message", "agent", "status", "text"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// The child's usage tree (what it spent stays spent on a resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageNode>,
    /// When it was (last) started.
    #[serde(with = "unix_ms")]
    pub started_at: SystemTime,
    /// When it ended.
    #[serde(default, with = "opt_unix_ms", skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<SystemTime>,
}

impl CallRecord {
    /// A call about to start.
    pub fn started(
        position: u32,
        kind: CallKind,
        agent: impl Into<String>,
        input_hash: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            position,
            kind,
            agent: agent.into(),
            input_hash: input_hash.into(),
            description: description.into(),
            state: CallState::Running,
            task_id: None,
            session_id: None,
            seq: None,
            value: None,
            usage: None,
            started_at: SystemTime::now(),
            finished_at: None,
        }
    }
}

/// One run in a listing, with its calls counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunSummary {
    /// The run's id.
    pub run_id: String,
    /// How it stands.
    pub status: RunStatus,
    /// When it started (Unix milliseconds in JSON).
    #[serde(with = "unix_ms")]
    pub created_at: SystemTime,
    /// When it last changed.
    #[serde(with = "unix_ms")]
    pub updated_at: SystemTime,
    /// Calls recorded.
    pub calls: u32,
    /// Calls done.
    pub done: u32,
    /// Calls failed.
    pub failed: u32,
    /// Calls not ended.
    pub running: u32,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunSummary {
    /// The summary of `run` with `calls`.
    pub fn of(run: &RunRecord, calls: &[CallRecord]) -> Self {
        let count = |s: CallState| calls.iter().filter(|c| c.state == s).count() as u32;
        Self {
            run_id: run.run_id.clone(),
            status: run.status,
            created_at: run.created_at,
            updated_at: run.updated_at,
            calls: calls.len() as u32,
            done: count(CallState::Done),
            failed: count(CallState::Failed),
            running: count(CallState::Running),
            error: run.error.clone(),
        }
    }
}

/// Where runs and their calls are kept. Implementations must make a write durable before
/// returning: the runner starts no call before its record is saved and hands no value to the
/// script before its end is saved.
#[async_trait]
pub trait Journal: Send + Sync + std::fmt::Debug {
    /// Creates or replaces a run's record.
    async fn save_run(&self, run: &RunRecord) -> Result<(), JournalError>;

    /// A run's record.
    async fn load_run(&self, run_id: &str) -> Result<Option<RunRecord>, JournalError>;

    /// Creates or replaces the record of the call at `call.position` of run `run_id`.
    async fn save_call(&self, run_id: &str, call: &CallRecord) -> Result<(), JournalError>;

    /// A run's calls, by position.
    async fn load_calls(&self, run_id: &str) -> Result<Vec<CallRecord>, JournalError>;

    /// The most recent runs, newest first, at most `limit`.
    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, JournalError>;
}

/// The runs a [`MemoryJournal`] keeps at most; the oldest ended ones go first.
pub const MEMORY_JOURNAL_RUNS: usize = 1_000;

/// A [`Journal`] in memory: resumable within the process (a cancelled run), nothing survives
/// it. At most [`MEMORY_JOURNAL_RUNS`] runs.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    runs: Mutex<HashMap<String, (RunRecord, BTreeMap<u32, CallRecord>)>>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (RunRecord, BTreeMap<u32, CallRecord>)>> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl Journal for MemoryJournal {
    async fn save_run(&self, run: &RunRecord) -> Result<(), JournalError> {
        let mut runs = self.lock();
        if !runs.contains_key(&run.run_id) && runs.len() >= MEMORY_JOURNAL_RUNS {
            let oldest = runs
                .values()
                .filter(|(r, _)| r.status != RunStatus::Running)
                .min_by_key(|(r, _)| r.updated_at)
                .map(|(r, _)| r.run_id.clone());
            match oldest {
                Some(id) => {
                    runs.remove(&id);
                }
                None => {
                    return Err(JournalError::new(
                        "save run",
                        format!("the memory journal holds {MEMORY_JOURNAL_RUNS} running runs"),
                    ));
                }
            }
        }
        runs.entry(run.run_id.clone())
            .and_modify(|(r, _)| *r = run.clone())
            .or_insert_with(|| (run.clone(), BTreeMap::new()));
        Ok(())
    }

    async fn load_run(&self, run_id: &str) -> Result<Option<RunRecord>, JournalError> {
        Ok(self.lock().get(run_id).map(|(r, _)| r.clone()))
    }

    async fn save_call(&self, run_id: &str, call: &CallRecord) -> Result<(), JournalError> {
        match self.lock().get_mut(run_id) {
            Some((_, calls)) => {
                calls.insert(call.position, call.clone());
                Ok(())
            }
            None => Err(JournalError::new("save call", format!("no run `{run_id}`"))),
        }
    }

    async fn load_calls(&self, run_id: &str) -> Result<Vec<CallRecord>, JournalError> {
        Ok(self
            .lock()
            .get(run_id)
            .map(|(_, c)| c.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, JournalError> {
        let runs = self.lock();
        let mut list: Vec<RunSummary> = runs
            .values()
            .map(|(r, c)| RunSummary::of(r, &c.values().cloned().collect::<Vec<_>>()))
            .collect();
        list.sort_by_key(|r| std::cmp::Reverse(r.created_at));
        list.truncate(limit);
        Ok(list)
    }
}

/// Times as Unix milliseconds in JSON.
pub(crate) mod unix_ms {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(to_ms(*t))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        Ok(from_ms(u64::deserialize(d)?))
    }

    pub(crate) fn to_ms(t: SystemTime) -> u64 {
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn from_ms(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }
}

/// Optional times as Unix milliseconds in JSON.
pub(crate) mod opt_unix_ms {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        t: &Option<SystemTime>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&super::unix_ms::to_ms(*t)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(super::unix_ms::from_ms))
    }
}
