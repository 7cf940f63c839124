//! The registry of agents and the dispatch of one `Task` call.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use subagent_spi::{
    ProgressKind, SubagentDefinition, SubagentError, SubagentExecutor, TaskCall, TaskContext,
    TaskOutcome, TaskStatus, Tool, ToolOutput,
};
use tracing::Instrument;

use crate::background::BackgroundRegistry;
use crate::builder::TaskToolBuilder;
use crate::format;
use crate::ids::new_id;
use crate::tools::{TaskOutputTool, TaskStopTool};

/// Limits of a [`TaskTool`]; set through the builder.
#[derive(Debug, Clone)]
pub struct TaskConfig {
    /// Maximum background tasks running at once.
    pub max_background: usize,
    /// How long a finished background result stays readable.
    pub result_ttl: Duration,
    /// Maximum finished background results kept.
    pub max_retained: usize,
    /// Grace period after `TaskStop` cancels a task.
    pub stop_grace: Duration,
    /// Maximum session ids remembered for `resume` routing.
    pub max_sessions: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            max_background: 16,
            result_ttl: Duration::from_secs(30 * 60),
            max_retained: 10_000,
            stop_grace: Duration::from_secs(5),
            max_sessions: 10_000,
        }
    }
}

pub(crate) struct Inner {
    pub(crate) agents: Vec<Arc<dyn SubagentDefinition>>,
    by_name: HashMap<String, usize>,
    by_lower: HashMap<String, usize>,
    executors: HashMap<String, Arc<dyn SubagentExecutor>>,
    /// session id -> index of the agent that produced it.
    sessions: DashMap<String, usize>,
    pub(crate) background: BackgroundRegistry,
    pub(crate) config: TaskConfig,
    description: String,
    schema: serde_json::Value,
}

/// The `Task` tool: a registry of named subagents and the dispatcher that runs them.
///
/// Cheap to clone (an `Arc` inside). Implements the SPI [`Tool`]; [`tools`](Self::tools) also
/// returns its `TaskOutput` and `TaskStop` companions.
#[derive(Clone)]
pub struct TaskTool {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool")
            .field("agents", &self.agent_names())
            .field("config", &self.inner.config)
            .finish()
    }
}

/// What [`TaskTool::dispatch`] did with a call.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Dispatch {
    /// The agent ran in the foreground and finished.
    Foreground {
        /// The agent's registered name.
        agent: String,
        /// Its kind.
        kind: String,
        /// The task id the run had.
        task_id: String,
        /// How it ended.
        outcome: TaskOutcome,
    },
    /// The agent was started in the background.
    Background {
        /// The agent's registered name.
        agent: String,
        /// The id to pass to `TaskOutput` / `TaskStop`.
        task_id: String,
    },
}

impl TaskTool {
    /// Starts a builder.
    pub fn builder() -> TaskToolBuilder {
        TaskToolBuilder::default()
    }

    pub(crate) fn from_parts(
        agents: Vec<Arc<dyn SubagentDefinition>>,
        executors: HashMap<String, Arc<dyn SubagentExecutor>>,
        config: TaskConfig,
    ) -> Self {
        let mut by_name = HashMap::new();
        let mut by_lower = HashMap::new();
        for (i, a) in agents.iter().enumerate() {
            by_name.insert(a.name().to_string(), i);
            by_lower.entry(a.name().to_lowercase()).or_insert(i);
        }
        let description = format::task_description(&agents);
        let schema = serde_json::to_value(schemars::schema_for!(TaskCall))
            .unwrap_or_else(|_| serde_json::json!({"type": "object"}));
        Self {
            inner: Arc::new(Inner {
                agents,
                by_name,
                by_lower,
                executors,
                sessions: DashMap::new(),
                background: BackgroundRegistry::new(),
                config,
                description,
                schema,
            }),
        }
    }

    /// The registered agents, built-ins first, in registration order.
    pub fn agents(&self) -> &[Arc<dyn SubagentDefinition>] {
        &self.inner.agents
    }

    /// The registered agent names.
    pub fn agent_names(&self) -> Vec<String> {
        self.inner
            .agents
            .iter()
            .map(|a| a.name().to_string())
            .collect()
    }

    /// Finds an agent by name: exact first, then ignoring case.
    pub fn find(&self, name: &str) -> Option<&Arc<dyn SubagentDefinition>> {
        self.find_index(name).map(|i| &self.inner.agents[i])
    }

    fn find_index(&self, name: &str) -> Option<usize> {
        self.inner
            .by_name
            .get(name)
            .or_else(|| self.inner.by_lower.get(&name.to_lowercase()))
            .copied()
    }

    /// The limits in force.
    pub fn config(&self) -> &TaskConfig {
        &self.inner.config
    }

    /// The `Task` tool plus its `TaskOutput` and `TaskStop` companions, for a model's tool list.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(self.clone()),
            Arc::new(self.output_tool()),
            Arc::new(self.stop_tool()),
        ]
    }

    /// The `TaskOutput` companion tool.
    pub fn output_tool(&self) -> TaskOutputTool {
        TaskOutputTool::new(self.clone())
    }

    /// The `TaskStop` companion tool.
    pub fn stop_tool(&self) -> TaskStopTool {
        TaskStopTool::new(self.clone())
    }

    pub(crate) fn description_text(&self) -> &str {
        &self.inner.description
    }

    pub(crate) fn schema(&self) -> &serde_json::Value {
        &self.inner.schema
    }

    /// Picks the agent for a call: the agent that produced `resume`'s session when known,
    /// else `subagent_type` (exact, then ignoring case).
    fn route(&self, call: &TaskCall) -> Result<usize, SubagentError> {
        if let Some(session) = &call.resume
            && let Some(i) = self.inner.sessions.get(session)
        {
            return Ok(*i);
        }
        self.find_index(&call.subagent_type)
            .ok_or_else(|| SubagentError::UnknownSubagent {
                name: call.subagent_type.clone(),
                available: self.agent_names(),
            })
    }

    fn executor_for(
        &self,
        def: &Arc<dyn SubagentDefinition>,
    ) -> Result<Arc<dyn SubagentExecutor>, SubagentError> {
        self.inner
            .executors
            .get(&def.kind().to_ascii_uppercase())
            .cloned()
            .ok_or_else(|| SubagentError::NoExecutor {
                kind: def.kind().to_string(),
            })
    }

    /// Runs a call: in the foreground (awaiting the outcome) or, when `run_in_background` is
    /// set, by starting it and returning its task id at once.
    pub async fn dispatch(
        &self,
        call: TaskCall,
        ctx: &TaskContext,
    ) -> Result<Dispatch, SubagentError> {
        let idx = self.route(&call)?;
        let def = self.inner.agents[idx].clone();
        let executor = self.executor_for(&def)?;
        let task_id = new_id("task");
        let child = ctx.child(def.name(), Some(task_id.clone()));
        if call.is_background() {
            self.inner
                .background
                .spawn(self.clone(), idx, def, executor, call, child)?;
            return Ok(Dispatch::Background {
                agent: self.inner.agents[idx].name().to_string(),
                task_id,
            });
        }
        let outcome = self.run_child(idx, &def, executor, call, child).await?;
        Ok(Dispatch::Foreground {
            agent: def.name().to_string(),
            kind: def.kind().to_string(),
            task_id,
            outcome,
        })
    }

    /// Runs one child to its end, with a tracing span, progress events, duration and session
    /// bookkeeping. Used by the foreground path and by background tasks.
    pub(crate) async fn run_child(
        &self,
        idx: usize,
        def: &Arc<dyn SubagentDefinition>,
        executor: Arc<dyn SubagentExecutor>,
        call: TaskCall,
        child: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let span = tracing::info_span!(
            "subagent_task",
            agent = def.name(),
            kind = def.kind(),
            depth = child.depth,
            task_id = child.task_id.as_deref().unwrap_or(""),
            background = call.is_background(),
        );
        let started = Instant::now();
        child.emit(ProgressKind::Started {
            description: call.description.clone(),
        });
        let result = executor
            .execute(call, def.clone(), child.clone())
            .instrument(span.clone())
            .await;
        let elapsed = started.elapsed();
        let _enter = span.enter();
        match &result {
            Ok(o) => {
                tracing::info!(status = %o.status, duration_ms = elapsed.as_millis() as u64, "subagent task finished");
            }
            Err(e) => {
                tracing::info!(error = %e, duration_ms = elapsed.as_millis() as u64, "subagent task failed");
            }
        }
        let mut outcome = match result {
            Ok(o) => o,
            Err(SubagentError::Cancelled { .. }) => {
                TaskOutcome::with_status(String::new(), TaskStatus::Cancelled)
            }
            Err(e) => {
                child.emit(ProgressKind::Finished {
                    status: TaskStatus::Failed,
                    usage: Default::default(),
                });
                return Err(e);
            }
        };
        if outcome.usage.duration_ms == 0 {
            outcome.usage.duration_ms = elapsed.as_millis() as u64;
        }
        if let Some(s) = &outcome.session_id {
            self.remember_session(s.clone(), idx);
        }
        child.emit(ProgressKind::Finished {
            status: outcome.status,
            usage: outcome.usage.clone(),
        });
        Ok(outcome)
    }

    fn remember_session(&self, session: String, idx: usize) {
        let sessions = &self.inner.sessions;
        if sessions.len() >= self.inner.config.max_sessions {
            // Bounded memory: forget an arbitrary tenth. Resume of a forgotten id still
            // reaches the executor named in `subagent_type`.
            let drop_n = (self.inner.config.max_sessions / 10).max(1);
            let victims: Vec<String> = sessions
                .iter()
                .take(drop_n)
                .map(|e| e.key().clone())
                .collect();
            for v in victims {
                sessions.remove(&v);
            }
        }
        sessions.insert(session, idx);
    }

    /// Runs a `Task` call given as JSON and renders the result as the text a model sees.
    /// Never fails: problems become error results the model can read.
    pub async fn call_tool(&self, input: serde_json::Value, ctx: &TaskContext) -> ToolOutput {
        let call: TaskCall = match serde_json::from_value(input) {
            Ok(c) => c,
            Err(e) => {
                return ToolOutput::error(format!(
                    "Invalid Task input: {e}. Required fields: description, prompt, subagent_type."
                ));
            }
        };
        match self.dispatch(call, ctx).await {
            Ok(Dispatch::Foreground {
                agent,
                kind,
                task_id,
                outcome,
            }) => {
                let mut out = format::foreground_result(&agent, &outcome);
                out.children = vec![outcome.usage_tree(&agent, &kind, Some(&task_id))];
                out
            }
            Ok(Dispatch::Background { agent, task_id }) => {
                ToolOutput::text(format::background_started(&agent, &task_id))
            }
            Err(e) => ToolOutput::error(format::error_text(&e)),
        }
    }
}
