//! The tool implementations: `Task` (on the erased `Tool`: its schema follows the agents
//! offered), and `TaskOutput`, `TaskStop`, `SendMessage` on the SPI's `TypedTool`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use subagent_spi::{
    ApprovalDecision, TaskContext, Tool, ToolEffect, ToolError, ToolOutput, TypedTool, UsageNode,
    async_trait,
};

use super::TaskTool;
use super::{SendMessageInput, SendMessageTool};
use crate::concurrency::waiting_on_children;
use crate::format;
use crate::mailbox::Scope;

/// Default wait of `TaskOutput`.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// Longest wait `TaskOutput` accepts.
const MAX_WAIT_MS: u64 = 600_000;

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        "Task"
    }

    fn description(&self) -> String {
        self.description_text().to_string()
    }

    fn input_schema(&self) -> serde_json::Value {
        self.schema().into_owned()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Delegate
    }

    async fn call(
        &self,
        input: serde_json::Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        Ok(self.call_tool(input, ctx).await)
    }
}

/// Input of `TaskOutput`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TaskOutputInput {
    /// The id Task returned.
    pub task_id: String,
    /// Wait for the task to finish.
    #[serde(default = "yes")]
    pub block: bool,
    /// Most milliseconds to wait (at most 600000).
    #[serde(default = "default_wait")]
    pub timeout_ms: u64,
    /// Answers a task `waiting_for_approval`: `yes` (once), `always` (this session) or `no`.
    // A yes is confirmed with the caller's own approver (the user) when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<ApprovalAnswer>,
}

/// An answer to a background task's approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalAnswer {
    /// Run the call once.
    Yes,
    /// Refuse the call.
    No,
    /// Allow it for the rest of the session.
    Always,
}

fn yes() -> bool {
    true
}

fn default_wait() -> u64 {
    DEFAULT_WAIT_MS
}

/// Input of `TaskStop`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TaskStopInput {
    /// The id Task returned.
    pub task_id: String,
}

/// `TaskOutput`: reads (by default, waits for) a background task's result.
#[derive(Debug, Clone)]
pub struct TaskOutputTool {
    task: TaskTool,
}

impl TaskOutputTool {
    pub(crate) fn new(task: TaskTool) -> Self {
        Self { task }
    }
}

#[async_trait]
impl TypedTool for TaskOutputTool {
    type Input = TaskOutputInput;

    fn name(&self) -> &str {
        "TaskOutput"
    }

    fn description(&self) -> String {
        "Read the result of a background task (Task with run_in_background: true); waits for it \
         unless `block` is false. A foreground Task call's result is in its reply already."
            .to_string()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Delegate
    }

    fn input_hint(&self) -> String {
        r#"{"task_id": "task_...", "block"?: bool, "timeout_ms"?: number, "approve"?: "yes"|"no"|"always"}"#.to_string()
    }

    async fn run(
        &self,
        input: TaskOutputInput,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        TaskOutputTool::run(self, input, ctx).await
    }
}

impl TaskOutputTool {
    /// What `TaskOutput` answers about `snapshot` (without waiting): for a host that read the
    /// task itself ([`TaskTool::output`]) and shows it as the tool would.
    pub fn render(&self, snapshot: &crate::BackgroundSnapshot) -> ToolOutput {
        format::snapshot_text(snapshot, None, self.task.companions())
    }

    async fn run(
        &self,
        input: TaskOutputInput,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        if input.timeout_ms > MAX_WAIT_MS {
            return Err(ToolError::invalid(
                "TaskOutput",
                format!(
                    "timeout_ms {} is over the maximum of {MAX_WAIT_MS}",
                    input.timeout_ms
                ),
            ));
        }
        // A run reaches only the tasks it started (as SendMessage does, crate::steer).
        let scope = Scope::StartedBy(ctx.task_id());
        if let Some(answer) = input.approve {
            let Some(question) = self.task.pending_approval_in(&input.task_id, scope) else {
                return Ok(ToolOutput::error(format!(
                    "Task `{}` is not waiting for approval (or is unknown); nothing was answered.{}",
                    input.task_id,
                    session_hint(&input.task_id)
                )));
            };
            let mut decision = match answer {
                ApprovalAnswer::Yes => ApprovalDecision::AllowOnce,
                ApprovalAnswer::Always => ApprovalDecision::AllowSession,
                ApprovalAnswer::No => {
                    ApprovalDecision::deny("the agent that started this task declined the call.")
                }
            };
            // A yes from an agent is confirmed by whoever approves for it: an agent cannot
            // approve more than its own caller would.
            if decision.is_allowed()
                && let Some(approver) = ctx.approver()
            {
                let confirmed = tokio::select! {
                    d = approver.request(question.clone()) => d,
                    () = ctx.cancel().cancelled() => {
                        return Err(ToolError::Cancelled { tool: "TaskOutput".into() });
                    }
                };
                decision = match (confirmed, decision) {
                    (ApprovalDecision::AllowOnce, _) => ApprovalDecision::AllowOnce,
                    (ApprovalDecision::AllowSession, d) => d,
                    (denied, _) => denied,
                };
            }
            if let Err(e) = self
                .task
                .answer_approval_in(&input.task_id, decision, scope)
            {
                return Ok(ToolOutput::error(e.to_string()));
            }
        }
        let wait = input.block.then(|| Duration::from_millis(input.timeout_ms));
        let read = self.task.output_in(&input.task_id, wait, scope);
        let read = if wait.is_some() {
            waiting_on_children(ctx, read).await
        } else {
            read.await
        };
        match read {
            Ok(read) => Ok(answer(
                &self.task,
                ctx,
                read,
                input.block.then_some(input.timeout_ms),
            )),
            Err(e) => Ok(ToolOutput::error(format!(
                "{e}. Your tasks: {}.{}",
                list_or_none(&self.task.tasks_in(scope)),
                session_hint(&input.task_id)
            ))),
        }
    }
}

/// For an id that is a session (`sess_…`, what a result's footer names) rather than a task id:
/// what it is for, and that a foreground result needs no reading.
fn session_hint(id: &str) -> &'static str {
    if id.trim().starts_with("sess_") {
        " That is a session id (for Task's `resume`), not a task id: a foreground Task call's \
         answer is in its result already."
    } else {
        ""
    }
}

/// `TaskStop`: cancels a background task.
#[derive(Debug, Clone)]
pub struct TaskStopTool {
    task: TaskTool,
}

impl TaskStopTool {
    pub(crate) fn new(task: TaskTool) -> Self {
        Self { task }
    }
}

#[async_trait]
impl TypedTool for TaskStopTool {
    type Input = TaskStopInput;

    fn name(&self) -> &str {
        "TaskStop"
    }

    fn description(&self) -> String {
        "Cancel a background task started with Task; its partial output is returned.".to_string()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Delegate
    }

    fn input_hint(&self) -> String {
        r#"{"task_id": "task_..."}"#.to_string()
    }

    async fn run(&self, input: TaskStopInput, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        TaskStopTool::run(self, input, ctx).await
    }
}

impl TaskStopTool {
    async fn run(&self, input: TaskStopInput, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        // A run stops only the tasks it started (as SendMessage does, crate::steer).
        let scope = Scope::StartedBy(ctx.task_id());
        match waiting_on_children(ctx, self.task.stop_in(&input.task_id, scope)).await {
            Ok(read) => Ok(answer(&self.task, ctx, read, None)),
            Err(e) => Ok(ToolOutput::error(format!(
                "{e}. Your tasks: {}",
                list_or_none(&self.task.tasks_in(scope))
            ))),
        }
    }
}

/// What `TaskOutput` or `TaskStop` answers about the task it read: the snapshot's text (with
/// how long it waited, `waited_ms`), and the child's usage node, noted as settled (its own
/// meter charged it, crate::charge).
fn answer(
    task: &TaskTool,
    ctx: &TaskContext,
    (snap, usage): (crate::BackgroundSnapshot, Option<UsageNode>),
    waited_ms: Option<u64>,
) -> ToolOutput {
    let mut out = format::snapshot_text(&snap, waited_ms, task.companions());
    if let Some(id) = usage.as_ref().and_then(|n| n.task_id.as_deref()) {
        crate::charge::noted(ctx, id);
    }
    out.children.extend(usage);
    out
}

fn list_or_none(ids: &[String]) -> String {
    if ids.is_empty() {
        "(none)".into()
    } else {
        ids.join(", ")
    }
}

#[async_trait]
impl TypedTool for SendMessageTool {
    type Input = SendMessageInput;

    fn name(&self) -> &str {
        "SendMessage"
    }

    fn description(&self) -> String {
        self.description_text()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Delegate
    }

    fn input_hint(&self) -> String {
        r#"{"to": "task_... or the name you gave it", "message": "..."}"#.to_string()
    }

    async fn run(
        &self,
        input: SendMessageInput,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        SendMessageTool::run(self, input, ctx).await
    }
}
