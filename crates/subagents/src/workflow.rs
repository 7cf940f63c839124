//! Workflows from Rust (feature `workflow`): [`Subagents::workflow`] runs a script over the
//! assembled agents, [`Subagents::resume_workflow`] resumes one from its journal (the store's
//! database when the assembly has one, else this assembly's memory).
//!
//! ```no_run
//! # async fn demo(agents: subagents::Subagents) -> Result<(), Box<dyn std::error::Error>> {
//! let out = agents
//!     .workflow(r#"
//!         const [a, b] = await parallel([() => agent("researcher", args.q1), () => agent("researcher", args.q2)]);
//!         return await agent("writer", `Compare:\n${a}\n${b}`);
//!     "#)
//!     .args(serde_json::json!({"q1": "…", "q2": "…"}))
//!     .run()
//!     .await?;
//! println!("{} {:?}", out.run_id, out.result);
//! # Ok(()) }
//! ```

use std::sync::Arc;

use subagent_core::{BudgetExt, SessionApprover};
use subagent_spi::{CancellationToken, ProgressSink, TaskContext};
use subagent_workflow::{
    PreparedRun, WorkflowError, WorkflowLimits, WorkflowOutcome, WorkflowTool, Workflows,
};

use crate::Subagents;

impl Subagents {
    /// The workflow runner over these agents: calls go through the `Task` tool (every kind, the
    /// concurrency cap, budgets, typed results), runs are journaled in the store (memory
    /// without one), with the builder's
    /// [`workflow_limits`](crate::SubagentsBuilder::workflow_limits).
    pub fn workflows(&self) -> Workflows {
        Workflows::new(Arc::new(self.task.clone()), self.workflow_journal.clone())
            .with_limits(self.workflow_limits.clone())
    }

    /// The `Workflow` tool over [`workflows`](Self::workflows) (the main agent has it beside
    /// `Task`).
    pub fn workflow_tool(&self) -> WorkflowTool {
        WorkflowTool::new(self.workflows())
    }

    /// A run of `script` (its `args` default to `null`), as the root of a delegation tree.
    pub fn workflow(&self, script: impl Into<String>) -> WorkflowRun<'_> {
        WorkflowRun::new(self, What::New(script.into()))
    }

    /// A resume of run `run_id` from its journal: the script runs again from the top, each call
    /// that finished before gets its journaled value without running.
    pub fn resume_workflow(&self, run_id: impl Into<String>) -> WorkflowRun<'_> {
        WorkflowRun::new(self, What::Resume(run_id.into()))
    }
}

#[derive(Debug)]
enum What {
    New(String),
    Resume(String),
}

/// A workflow run being set up: [`Subagents::workflow`] or [`Subagents::resume_workflow`].
#[must_use]
pub struct WorkflowRun<'a> {
    agents: &'a Subagents,
    what: What,
    args: serde_json::Value,
    script: Option<String>,
    progress: Option<Arc<dyn ProgressSink>>,
    cancel: Option<CancellationToken>,
    limits: Option<WorkflowLimits>,
}

impl std::fmt::Debug for WorkflowRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowRun")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl<'a> WorkflowRun<'a> {
    fn new(agents: &'a Subagents, what: What) -> Self {
        Self {
            agents,
            what,
            args: serde_json::Value::Null,
            script: None,
            progress: None,
            cancel: None,
            limits: None,
        }
    }

    /// This run's limits instead of the builder's
    /// [`workflow_limits`](crate::SubagentsBuilder::workflow_limits).
    pub fn limits(mut self, limits: WorkflowLimits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// The JSON the script reads as `args` (a new run; a resume keeps the run's).
    pub fn args(mut self, args: serde_json::Value) -> Self {
        self.args = args;
        self
    }

    /// A resume runs this script instead of the journaled one (a call whose inputs changed at a
    /// journaled position then stops it, naming the call).
    pub fn script(mut self, script: impl Into<String>) -> Self {
        self.script = Some(script.into());
        self
    }

    /// Where progress of the workflow and every call goes.
    pub fn progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// A token that cancels the run (its calls stay unfinished in the journal: a resume runs
    /// them again).
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Saves the new run (or reads the journal of the one to resume) and returns it ready to
    /// run, with its id.
    pub async fn start(self) -> Result<StartedWorkflow, WorkflowError> {
        let mut workflows = self.agents.workflows();
        if let Some(l) = self.limits {
            workflows = workflows.with_limits(l);
        }
        let prepared = match &self.what {
            What::New(script) => workflows.prepare(script, self.args.clone()).await?,
            What::Resume(id) => workflows.prepare_resume(id, self.script.as_deref()).await?,
        };
        let mut ctx = TaskContext::new();
        if let Some(a) = self.agents.approver() {
            ctx = ctx.with_approver(Arc::new(SessionApprover::new(a.clone())));
        }
        if let Some(sink) = self.progress {
            ctx = ctx.with_progress(sink);
        }
        if let Some(token) = self.cancel {
            ctx = ctx.with_cancel(token);
        }
        if let Some(budget) = self.agents.root_budget(&ctx) {
            ctx = ctx.with_budget(budget);
        }
        Ok(StartedWorkflow {
            workflows,
            prepared,
            ctx,
        })
    }

    /// Runs it to its end ([`start`](Self::start), then [`StartedWorkflow::finish`]). A script
    /// that fails or crosses a limit is an outcome with status `failed` and its error; `Err` is
    /// a run that could not start (unknown run id, a store that cannot be written).
    pub async fn run(self) -> Result<WorkflowOutcome, WorkflowError> {
        Ok(self.start().await?.finish().await)
    }
}

/// A workflow run saved and ready: its id is known before anything runs.
#[derive(Debug)]
pub struct StartedWorkflow {
    workflows: Workflows,
    prepared: PreparedRun,
    ctx: TaskContext,
}

impl StartedWorkflow {
    /// The run's id (`wf_…`).
    pub fn run_id(&self) -> &str {
        self.prepared.run_id()
    }

    /// Runs it to its end.
    pub async fn finish(self) -> WorkflowOutcome {
        self.workflows.execute(self.prepared, &self.ctx).await
    }
}
