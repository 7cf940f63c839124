//! [`TaskTool`], the `Task` tool: its public API in one place, each job delegated to the
//! module that owns it. Routing (the agent table, sessions): `routing`. The checks and
//! defaults of a call: `dispatch`. One child's run, metered and settled: `metering` (with
//! `charge` and `typed`). The cap on children at once: `concurrency`. Background tasks:
//! `background` (the host's view of them all: `inventory`). Messaging (`SendMessage`):
//! `steer` (the mailbox of a task: `mailbox`). What a model is offered and told: `offer` and
//! `format`. Forks: `fork`.
//!
//! Its parts live below it: the builder (`builder`), the companion tools `TaskOutput` and
//! `TaskStop` (`tools`) and `SendMessage` (`send_message`). The modules it delegates to never
//! name `TaskTool` (background tasks get a `BackgroundRunner`, the ledger writer a `Persisted`
//! entry), so dependencies point one way (the workspace test `module_circles`).

mod builder;
mod send_message;
mod tools;

pub use builder::{BuildError, ReferenceFailure, TaskToolBuilder};
pub use send_message::{SendMessageInput, SendMessageTool};
pub use tools::{ApprovalAnswer, TaskOutputInput, TaskOutputTool, TaskStopInput, TaskStopTool};

use std::sync::Arc;
use std::time::Duration;

use subagent_spi::{
    ApprovalDecision, ApprovalRequest, BudgetLimits, Delegation, Kind, SubagentDefinition,
    SubagentError, SubagentExecutor, TaskCall, TaskContext, TaskOutcome, TaskStatus, Tool,
    ToolOutput, UsageNode,
};

use crate::background::{BackgroundRegistry, BackgroundSnapshot};
use crate::concurrency::{ChildWait, RunPermit, Slots};
use crate::config::TaskConfig;
use crate::format;
use crate::ids::new_id;
use crate::mailbox::Scope;
use crate::offer::Companions;
use crate::routing::{Agents, KindEntry, Target};
use crate::steer::{MessageReceipt, SendMessageError, Sender};

struct Inner {
    /// The agents and kinds, and the routing of a call (crate::routing).
    agents: Agents,
    background: BackgroundRegistry,
    /// The places under the concurrency cap, shared by every run of the tree.
    slots: Arc<Slots>,
    config: TaskConfig,
    description: String,
    schema: serde_json::Value,
}

/// The `Task` tool: a registry of named subagents and the dispatcher that runs them.
///
/// Cheap to clone (an `Arc` inside). Implements the SPI [`Tool`]; [`tools`](Self::tools) also
/// returns its `TaskOutput` and `TaskStop` companions.
#[derive(Clone)]
pub struct TaskTool {
    inner: Arc<Inner>,
    /// The companions the texts of this view name (crate::offer).
    offered: crate::offer::Companions,
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
// The foreground outcome (with a typed result's value) is the common case and is returned
// once per call; boxing it would change the public shape for no gain.
#[allow(clippy::large_enum_variant)]
pub enum Dispatch {
    /// The agent ran in the foreground and finished.
    Foreground {
        /// The agent's registered name.
        agent: String,
        /// Its kind.
        kind: Kind,
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
        agents: Vec<(Arc<dyn SubagentDefinition>, usize)>,
        n_defaults: usize,
        kinds: Vec<KindEntry>,
        config: TaskConfig,
        ledger: Option<Arc<dyn crate::TaskLedger>>,
    ) -> Self {
        let agents = Agents::new(agents, n_defaults, kinds, config.max_sessions);
        let description = format::task_description(agents.all(), crate::offer::Companions::all());
        let schema = subagent_spi::input_schema::<TaskCall>();
        Self {
            inner: Arc::new(Inner {
                agents,
                background: BackgroundRegistry::new(ledger.map(crate::persist::LedgerWriter::new)),
                slots: Arc::new(Slots::new(config.max_concurrent)),
                config,
                description,
                schema,
            }),
            offered: crate::offer::Companions::all(),
        }
    }

    /// The registered agents, built-ins first, in registration order.
    pub fn agents(&self) -> &[Arc<dyn SubagentDefinition>] {
        self.inner.agents.all()
    }

    /// The registered agent names.
    pub fn agent_names(&self) -> Vec<String> {
        self.inner
            .agents
            .all()
            .iter()
            .map(|a| a.name().to_string())
            .collect()
    }

    /// Finds an agent by name: exact first, then ignoring case.
    pub fn find(&self, name: &str) -> Option<&Arc<dyn SubagentDefinition>> {
        self.inner
            .agents
            .find(name)
            .map(|i| self.inner.agents.get(i))
    }

    /// The kind of the agent of that name (exact first, then ignoring case).
    pub fn kind_of(&self, name: &str) -> Option<&Kind> {
        self.inner
            .agents
            .find(name)
            .map(|i| self.inner.agents.kind_of(i).kind())
    }

    /// The agents from references (not kinds' built-in defaults), in registration order.
    pub fn user_agents(&self) -> &[Arc<dyn SubagentDefinition>] {
        self.inner.agents.user()
    }

    /// The executor that runs the agent of that name (exact first, then ignoring case).
    pub fn executor_of(&self, name: &str) -> Option<Arc<dyn SubagentExecutor>> {
        self.inner
            .agents
            .find(name)
            .map(|i| self.inner.agents.executor_of(i).clone())
    }

    /// The registered kinds, in registration order.
    pub fn kinds(&self) -> impl Iterator<Item = &Kind> {
        self.inner.agents.kinds()
    }

    /// The limits in force.
    pub fn config(&self) -> &TaskConfig {
        &self.inner.config
    }

    /// The places under the concurrency cap, shared by every run of the tree (crate::concurrency).
    pub(crate) fn slots(&self) -> &Arc<Slots> {
        &self.inner.slots
    }

    /// The background tasks of this tool (crate::background).
    pub(crate) fn background(&self) -> &BackgroundRegistry {
        &self.inner.background
    }

    /// The `Task` tool plus its `TaskOutput`, `TaskStop` and `SendMessage` companions, by name.
    pub fn tools(&self) -> TaskTools {
        TaskTools {
            task: self.clone(),
            output: self.output_tool(),
            stop: self.stop_tool(),
            send: self.send_message_tool(),
        }
    }

    /// The `SendMessage` companion tool.
    pub fn send_message_tool(&self) -> SendMessageTool {
        SendMessageTool::new(self.clone())
    }

    /// This tool as the [`Delegation`] handle children see in their context.
    pub fn delegation(&self) -> Arc<dyn Delegation> {
        // Children get every companion their own rules allow, whatever this view offers.
        Arc::new(self.offering(crate::offer::Companions::all()))
    }

    /// The `TaskOutput` companion tool.
    pub fn output_tool(&self) -> TaskOutputTool {
        TaskOutputTool::new(self.clone())
    }

    /// The `TaskStop` companion tool.
    pub fn stop_tool(&self) -> TaskStopTool {
        TaskStopTool::new(self.clone())
    }

    pub(crate) fn description_text(&self) -> std::borrow::Cow<'_, str> {
        if self.offered == crate::offer::Companions::all() {
            return self.inner.description.as_str().into();
        }
        format::task_description(self.inner.agents.all(), self.offered).into()
    }

    pub(crate) fn schema(&self) -> std::borrow::Cow<'_, serde_json::Value> {
        if self.offered.output() {
            return std::borrow::Cow::Borrowed(&self.inner.schema);
        }
        std::borrow::Cow::Owned(crate::offer::foreground_schema(&self.inner.schema))
    }

    /// Runs a call: in the foreground (awaiting the outcome) or in the background, starting it
    /// and returning its task id at once. The call's `run_in_background` decides; when it is
    /// absent, the agent's
    /// [`runs_in_background_by_default`](SubagentDefinition::runs_in_background_by_default)
    /// does (a Markdown agent's `background: true`).
    ///
    /// The child runs at `ctx.depth() + 1` with this tool as its [`Delegation`] handle, so its
    /// executor can offer `Task` to the agent while `depth < max_depth`. A call from a context
    /// at or beyond the nesting limit is refused with [`SubagentError::LimitReached`].
    pub async fn dispatch(
        &self,
        call: TaskCall,
        ctx: &TaskContext,
    ) -> Result<Dispatch, SubagentError> {
        self.dispatch_noting(call, ctx)
            .await
            .map_err(crate::failed::Failed::into_error)
    }

    /// [`dispatch`](Self::dispatch), keeping the node of a child that ran and failed
    /// (crate::failed).
    async fn dispatch_noting(
        &self,
        mut call: TaskCall,
        ctx: &TaskContext,
    ) -> Result<Dispatch, crate::failed::Failed> {
        // `subagent_type: "fork"`: a copy of the caller (see `fork`), else a registered agent.
        let agents = &self.inner.agents;
        let target = match crate::fork::target(&call, ctx, |s| agents.knows_session(s))? {
            Some(fork) => fork,
            None => agents.route(&call)?,
        };
        let def = target.def().clone();
        // Its defaults, and what refuses it (crate::dispatch).
        crate::dispatch::apply_defaults(&mut call, def.as_ref());
        crate::dispatch::admit(ctx, def.as_ref(), self.inner.config.max_depth)?;
        let task_id = new_id("task");
        let child = ctx
            .child(def.name(), Some(task_id.clone()))
            .with_delegation(self.delegation());
        let child = self.with_agent_budget(child, &def, ctx);
        if call.is_background() {
            self.inner
                .background
                .spawn(self.clone(), target, call, child)?;
            return Ok(Dispatch::Background {
                agent: def.name().to_string(),
                task_id,
            });
        }
        // The caller gives its place under the cap back while it waits for this child (see
        // `concurrency`); the child waits its turn for one.
        // (Awaited here in line, not through a wrapper future: this is the per-dispatch path.)
        let wait = ChildWait::begin(ctx);
        // `child` is moved, never borrowed, here: a borrowed local stays in this future's state
        // across every later await (the state would grow by a whole context).
        let (permit, child) = match RunPermit::try_acquire(&self.inner.slots) {
            Some(p) => (Some(p), child),
            // Boxed: the waiting future is large and rare; this one is on every dispatch.
            None => Box::pin(RunPermit::acquire_for(&self.inner.slots, child)).await,
        };
        let result = match permit {
            None => {
                // Dropped here, not at the end: else it would be kept across the wait below.
                drop(child);
                Ok(TaskOutcome::with_status(
                    String::new(),
                    TaskStatus::Cancelled,
                ))
            }
            Some(permit) => {
                let child = child.with_extension_arc(permit.clone());
                // Boxed: the child's run (about 900 bytes of state) would otherwise sit inside
                // this future, which `Task`'s boxed tool future embeds; in two pieces both stay
                // within the allocator's cache of small blocks (glibc's tcache: up to 1 KiB), so
                // a nesting level costs less, not more (docs/PERFORMANCE.md, "dispatch").
                let result = Box::pin(self.run_child(&target, call, child)).await;
                permit.release();
                result
            }
        };
        if let Some(wait) = wait {
            wait.end(ctx).await;
        }
        let outcome = result.map_err(|e| {
            crate::failed::Failed::ran(e, def.name(), target.kind().as_str(), &task_id)
        })?;
        // Its report is settled: the caller's own settling skips it (crate::charge).
        crate::charge::noted(ctx, &task_id);
        Ok(Dispatch::Foreground {
            agent: def.name().to_string(),
            kind: target.kind().clone(),
            task_id,
            outcome,
        })
    }

    /// The budget an agent's run gets: its own (configured here, else its definition's),
    /// nested in the caller's so it gets at most what is left there, cancelling only its
    /// subtree when spent and naming the agent; else the caller's.
    pub fn agent_budget_of(&self, def: &dyn SubagentDefinition) -> Option<BudgetLimits> {
        self.inner
            .config
            .agent_budgets
            .get(def.name())
            .cloned()
            .or_else(|| def.budget())
            .filter(|l| !l.is_unlimited())
    }

    /// `child` with the agent's own budget, when it has one (crate::metering).
    fn with_agent_budget(
        &self,
        child: TaskContext,
        def: &Arc<dyn SubagentDefinition>,
        caller: &TaskContext,
    ) -> TaskContext {
        let Some(limits) = self.agent_budget_of(def.as_ref()) else {
            return child;
        };
        let prices = self.inner.config.prices.as_ref();
        crate::metering::with_agent_budget(child, def.as_ref(), limits, prices, caller)
    }

    /// Runs one child to its end, with a tracing span, progress events, duration and session
    /// bookkeeping. Used by the foreground path.
    pub(crate) fn run_child<'a>(
        &'a self,
        target: &'a Target,
        call: TaskCall,
        child: TaskContext,
    ) -> impl Future<Output = Result<TaskOutcome, SubagentError>> + Send + 'a {
        // Its reported usage is charged once, whatever its kind (crate::charge).
        self.run_metered(target, call, crate::charge::meter(child))
    }

    /// [`run_child`](Self::run_child) with `child` already given its meter
    /// (`crate::charge::meter`): background tasks keep the meter to settle a run that ends
    /// without an outcome. Metered and settled by crate::metering; the session it reports is
    /// remembered for `resume`. (Neither is an `async fn`: see `metering::run`.)
    pub(crate) fn run_metered<'a>(
        &'a self,
        target: &'a Target,
        call: TaskCall,
        child: TaskContext,
    ) -> impl Future<Output = Result<TaskOutcome, SubagentError>> + Send + 'a {
        crate::metering::run(target, call, child, move |session| {
            self.inner.agents.remember_session(target, session)
        })
    }

    /// Runs a `Task` call given as JSON and renders the result as the text a model sees.
    /// Never fails: problems become error results the model can read.
    pub async fn call_tool(&self, input: serde_json::Value, ctx: &TaskContext) -> ToolOutput {
        let mut call: TaskCall = match serde_json::from_value(with_description(input)) {
            Ok(c) => c,
            Err(e) => {
                return ToolOutput::error(format!(
                    "Invalid Task input: {e}. Required fields: description, prompt, subagent_type."
                ));
            }
        };
        // A schema from a model is checked under the strict profile (crate::typed).
        if let Err(e) = crate::typed::compile(
            &call,
            &call.subagent_type,
            subagent_schema::Profile::untrusted(),
        ) {
            return ToolOutput::error(crate::failed::error_text(&e));
        }
        // Only what the offered companions can follow (crate::offer).
        if let Err(why) = crate::offer::check_call(self.offered, &mut call) {
            return ToolOutput::error(why);
        }
        // An empty prompt asks for nothing to be done: the agent's full description comes back
        // (how a shortened agent list is read in full, see format::agent_list).
        if call.prompt.trim().is_empty()
            && call.resume.is_none()
            && let Some(i) = self.inner.agents.find(&call.subagent_type)
        {
            return ToolOutput::text(format::described(self.inner.agents.get(i).as_ref()));
        }
        match self.dispatch_noting(call, ctx).await {
            Ok(Dispatch::Foreground {
                agent,
                kind,
                task_id,
                outcome,
            }) => {
                let mut out = format::foreground_result(&agent, &outcome);
                // The child's node carries its answer (bounded) and, when it failed, why: a
                // host's usage tree shows what each child said, not only what it cost.
                out.children = vec![
                    crate::failed::outcome_node(&outcome, &agent, kind.as_str(), &task_id)
                        .with_answer(&outcome.text),
                ];
                out
            }
            Ok(Dispatch::Background { agent, task_id }) => {
                ToolOutput::text(format::background_started(&agent, &task_id, self.offered))
            }
            Err(f) => f.into_output(),
        }
    }
}

/// Offering (crate::offer).
impl TaskTool {
    /// This tool (the same agents, tasks and limits) as a model is offered it with `offered`
    /// companions: its description, schema and results name no companion that is absent (see
    /// the module docs), and so do the `TaskOutput` / `TaskStop` tools made from it. The
    /// children it starts still get every delegation tool their own rules allow.
    pub fn offering(&self, offered: Companions) -> TaskTool {
        TaskTool {
            inner: self.inner.clone(),
            offered,
        }
    }

    /// The companions this view names (see [`offering`](Self::offering)).
    pub fn companions(&self) -> Companions {
        self.offered
    }
}

/// Background tasks (crate::background).
impl TaskTool {
    /// Reads a background task: waits up to `wait` for it to finish (`None` = don't wait).
    pub async fn output(
        &self,
        task_id: &str,
        wait: Option<Duration>,
    ) -> Result<BackgroundSnapshot, SubagentError> {
        self.output_with_usage(task_id, wait).await.map(|(s, _)| s)
    }

    pub(crate) async fn output_with_usage(
        &self,
        task_id: &str,
        wait: Option<Duration>,
    ) -> Result<(BackgroundSnapshot, Option<UsageNode>), SubagentError> {
        self.output_in(task_id, wait, Scope::Any).await
    }

    /// [`output`](Self::output) of a task `scope` admits, with its usage the first time.
    pub(crate) async fn output_in(
        &self,
        task_id: &str,
        wait: Option<Duration>,
        scope: Scope<'_>,
    ) -> Result<(BackgroundSnapshot, Option<UsageNode>), SubagentError> {
        self.inner
            .background
            .output(task_id, wait, scope, self.inner.config.result_ttl)
            .await
    }

    /// Cancels a background task; returns its state once it wound down (or the grace ran out).
    pub async fn stop(&self, task_id: &str) -> Result<BackgroundSnapshot, SubagentError> {
        self.stop_with_usage(task_id).await.map(|(s, _)| s)
    }

    pub(crate) async fn stop_with_usage(
        &self,
        task_id: &str,
    ) -> Result<(BackgroundSnapshot, Option<UsageNode>), SubagentError> {
        self.stop_in(task_id, Scope::Any).await
    }

    /// [`stop`](Self::stop) of a task `scope` admits, with its usage the first time.
    pub(crate) async fn stop_in(
        &self,
        task_id: &str,
        scope: Scope<'_>,
    ) -> Result<(BackgroundSnapshot, Option<UsageNode>), SubagentError> {
        self.inner
            .background
            .stop(
                task_id,
                self.inner.config.stop_grace,
                scope,
                self.inner.config.result_ttl,
            )
            .await
    }

    /// Answers the oldest approval request a background task waits on, as the task's caller:
    /// the answer is final (the `TaskOutput` tool confirms a yes with the caller's own
    /// approver first). Returns the request answered.
    pub fn answer_approval(
        &self,
        task_id: &str,
        decision: ApprovalDecision,
    ) -> Result<ApprovalRequest, SubagentError> {
        self.answer_approval_in(task_id, decision, Scope::Any)
    }

    /// [`answer_approval`](Self::answer_approval) for a task `scope` admits.
    pub(crate) fn answer_approval_in(
        &self,
        task_id: &str,
        decision: ApprovalDecision,
        scope: Scope<'_>,
    ) -> Result<ApprovalRequest, SubagentError> {
        self.inner
            .background
            .answer(task_id, decision, scope, self.inner.config.result_ttl)
    }

    /// The oldest approval request a background task waits on, if any.
    pub fn pending_approval(&self, task_id: &str) -> Option<ApprovalRequest> {
        self.pending_approval_in(task_id, Scope::Any)
    }

    /// [`pending_approval`](Self::pending_approval) of a task `scope` admits.
    pub(crate) fn pending_approval_in(
        &self,
        task_id: &str,
        scope: Scope<'_>,
    ) -> Option<ApprovalRequest> {
        self.inner
            .background
            .pending(task_id, scope, self.inner.config.result_ttl)
    }

    /// The tasks `scope` admits, running or recently ended, as `id (state)` (at most 20; for
    /// error messages).
    pub(crate) fn tasks_in(&self, scope: Scope<'_>) -> Vec<String> {
        self.inner
            .background
            .tasks_of(scope, self.inner.config.result_ttl)
    }

    /// Writes every pending background-task change to the ledger now (a no-op without one).
    /// Call it before the process exits: the writer otherwise batches changes for a few
    /// milliseconds.
    pub async fn flush_ledger(&self) -> Result<(), crate::LedgerError> {
        self.inner.background.flush_ledger().await
    }

    /// True when background tasks are recorded in a ledger.
    pub fn has_ledger(&self) -> bool {
        self.inner.background.has_ledger()
    }

    /// Number of background tasks running now.
    pub fn running_background(&self) -> usize {
        self.inner.background.running()
    }

    /// Number of background entries held (running, plus finished results not yet evicted).
    pub fn retained_background(&self) -> usize {
        self.inner.background.len()
    }

    /// Ids of the background tasks running now.
    pub fn running_background_ids(&self) -> Vec<String> {
        self.inner.background.running_ids()
    }
}

/// Background tasks as a whole, for hosts (crate::inventory).
impl TaskTool {
    /// The background tasks this process holds (running, and finished results not yet
    /// expired), oldest first. Reading them takes nothing: their usage is still reported once
    /// to the first `TaskOutput` (or [`take_unreported_usage`](Self::take_unreported_usage)).
    pub fn background_tasks(&self) -> Vec<BackgroundSnapshot> {
        self.inner
            .background
            .snapshots(self.inner.config.result_ttl)
    }

    /// The background tasks of this process and, with a ledger, those it keeps from other and
    /// earlier processes (tasks whose process ended read as `interrupted`), newest first, at
    /// most `limit` (capped at [`MAX_LISTED`](crate::MAX_LISTED)). A task of this process shows its live state.
    ///
    /// Without a ledger only this process's tasks are listed; a ledger that cannot be read is
    /// an error naming it.
    pub async fn list_background(
        &self,
        limit: usize,
    ) -> Result<Vec<BackgroundSnapshot>, SubagentError> {
        crate::inventory::list(self.background_tasks(), &self.inner.background, limit).await
    }

    /// Waits up to `wait` for a background task to end or to need an approval answer, then
    /// reads it, like [`output`](Self::output) but leaving its usage unreported (for
    /// [`take_unreported_usage`](Self::take_unreported_usage)).
    pub async fn watch_background(
        &self,
        task_id: &str,
        wait: Duration,
    ) -> Result<BackgroundSnapshot, SubagentError> {
        self.inner
            .background
            .watch(task_id, wait, self.inner.config.result_ttl)
            .await
    }

    /// Cancels every background task of this process that has not ended (as `TaskStop`
    /// does, without waiting): each winds down within the stop grace and ends `cancelled`
    /// with its partial output, recorded in the ledger like any result. Returns how many were
    /// cancelled.
    pub fn cancel_background(&self) -> usize {
        self.inner.background.cancel_running()
    }

    /// The usage trees of the background tasks of this process that ended and whose usage no
    /// caller has read yet (with `TaskOutput` or `TaskStop`), oldest first; each tree is
    /// reported once. A host adds them to its run's usage tree when the run ends, so the work
    /// of a child the model never read still counts.
    pub fn take_unreported_usage(&self) -> Vec<UsageNode> {
        self.inner.background.take_unreported_usage()
    }
}

/// Messaging (crate::steer).
impl TaskTool {
    /// Sends `message` to a running background task of this process, as the host application:
    /// `to` is its task id or the `name` its `Task` call gave it. The task reads it as its kind
    /// allows ([`MessageReceipt::delivery`]); one that ends before reading it lists it as
    /// unread in its [`BackgroundSnapshot::unread_messages`].
    pub fn send_message(
        &self,
        to: &str,
        message: &str,
    ) -> Result<MessageReceipt, SendMessageError> {
        self.send_as(Sender::Host, to, message)
    }

    /// Sends `message` as `sender` (crate::steer).
    pub(crate) fn send_as(
        &self,
        sender: Sender<'_>,
        to: &str,
        message: &str,
    ) -> Result<MessageReceipt, SendMessageError> {
        let ttl = self.inner.config.result_ttl;
        crate::steer::send(&self.inner.background, ttl, sender, to, message)
    }
}

/// The delegation tools of one [`TaskTool`], by name (see [`TaskTool::tools`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskTools {
    /// `Task`: starts a subagent.
    pub task: TaskTool,
    /// `TaskOutput`: reads a background task's result.
    pub output: TaskOutputTool,
    /// `TaskStop`: cancels a background task.
    pub stop: TaskStopTool,
    /// `SendMessage`: sends a message to a running background task.
    pub send: SendMessageTool,
}

impl TaskTools {
    /// The tools for a model's tool list: `Task`, `TaskOutput`, `TaskStop`, `SendMessage`.
    pub fn to_vec(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(self.task.clone()),
            Arc::new(self.output.clone()),
            Arc::new(self.stop.clone()),
            Arc::new(self.send.clone()),
        ]
    }
}

impl IntoIterator for TaskTools {
    type Item = Arc<dyn Tool>;
    type IntoIter = std::vec::IntoIter<Arc<dyn Tool>>;

    fn into_iter(self) -> Self::IntoIter {
        self.to_vec().into_iter()
    }
}

impl Delegation for TaskTool {
    fn max_depth(&self) -> u32 {
        self.inner.config.max_depth
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        TaskTool::tools(self).to_vec()
    }

    fn agent_names(&self) -> Vec<String> {
        TaskTool::agent_names(self)
    }
}

/// The longest description made up for a call without one, in words.
const MADE_UP_DESCRIPTION_WORDS: usize = 5;

/// The longest description made up for a call without one, in characters.
const MADE_UP_DESCRIPTION_CHARS: usize = 80;

/// `input` with a `description` made of its prompt's first words when it has none (small
/// models often leave it out; it only labels the task in progress and listings).
fn with_description(mut input: serde_json::Value) -> serde_json::Value {
    if let Some(obj) = input.as_object_mut()
        && obj
            .get("description")
            .is_none_or(serde_json::Value::is_null)
        && let Some(prompt) = obj.get("prompt").and_then(serde_json::Value::as_str)
    {
        let words: Vec<&str> = prompt
            .split_whitespace()
            .take(MADE_UP_DESCRIPTION_WORDS)
            .collect();
        let mut description = if words.is_empty() {
            "task".to_string()
        } else {
            words.join(" ")
        };
        // Bounded like a description a model writes: a "word" may be a megabyte.
        if let Some((cut, _)) = description.char_indices().nth(MADE_UP_DESCRIPTION_CHARS) {
            description.truncate(cut);
        }
        obj.insert("description".into(), serde_json::Value::String(description));
    }
    input
}

impl crate::background::BackgroundRunner for TaskTool {
    fn config(&self) -> &TaskConfig {
        TaskTool::config(self)
    }

    fn slots(&self) -> &Arc<Slots> {
        TaskTool::slots(self)
    }

    fn offers_stop(&self) -> bool {
        self.companions().stop()
    }

    fn background(&self) -> &BackgroundRegistry {
        TaskTool::background(self)
    }

    fn run<'a>(
        &'a self,
        target: &'a Target,
        call: TaskCall,
        child: TaskContext,
    ) -> impl Future<Output = Result<TaskOutcome, SubagentError>> + Send + 'a {
        self.run_metered(target, call, child)
    }
}
