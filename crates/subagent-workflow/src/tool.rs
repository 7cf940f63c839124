//! The `Workflow` tool: a model writes the orchestration as a script.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;
use subagent_spi::{TaskContext, ToolEffect, ToolError, ToolOutput, TypedTool, async_trait};

use crate::journal::RunStatus;
use crate::runner::{WorkflowOutcome, Workflows};

/// The tool's name.
pub const WORKFLOW_TOOL: &str = "Workflow";

/// What the model reads.
const DESCRIPTION: &str = "Run a JavaScript workflow orchestrating the agents Task lists, in \
one call. `await agent(name, prompt, {schema, model, description})` returns the agent's answer \
(with `schema`, a value valid under it); `await parallel([() => ..., ...])` runs calls at once, \
results in order (a failure is an Error in its place); `await ask(question)` asks the user \
(true/false); `log(text)`; `args` is the JSON you pass; the return value is the result. No \
clock, randomness, network or files. `resume` with a run id finishes a run without repeating \
its finished calls. Example:\nconst [a, b] = await parallel([() => agent(\"researcher\", \"Find X\"), () => \
agent(\"researcher\", \"Find Y\")]);\nreturn await agent(\"writer\", `Compare:\\n${a}\\n${b}`);";

/// The `Workflow` tool's input: a script to run, or a run to resume.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct WorkflowInput {
    /// The JavaScript body (top-level await and return allowed).
    #[serde(default)]
    script: Option<String>,
    /// JSON the script reads as `args`.
    #[serde(default)]
    args: Option<Value>,
    /// A run id to resume (with `script`: that script instead of the run's).
    #[serde(default)]
    resume: Option<String>,
}

/// The runs one tool remembers having started, for `resume`.
const MAX_STARTED: usize = 1_000;

/// The `Workflow` tool over a [`Workflows`] runner (offered to a main agent beside `Task`).
///
/// A model may `resume` only runs this tool started (at most the last 1,000): on a store shared
/// by several users or sessions it cannot run someone else's script. `subagents workflow
/// resume` (a person) resumes any.
#[derive(Debug, Clone)]
pub struct WorkflowTool {
    workflows: Workflows,
    started: Arc<Mutex<VecDeque<String>>>,
}

impl WorkflowTool {
    /// The tool over `workflows`.
    pub fn new(workflows: Workflows) -> Self {
        Self {
            workflows,
            started: Arc::default(),
        }
    }

    fn remember(&self, run_id: &str) {
        let mut started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        if started.len() >= MAX_STARTED {
            started.pop_front();
        }
        started.push_back(run_id.to_string());
    }

    fn started(&self, run_id: &str) -> bool {
        self.started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|r| r == run_id)
    }
}

#[async_trait]
impl TypedTool for WorkflowTool {
    type Input = WorkflowInput;

    fn name(&self) -> &str {
        WORKFLOW_TOOL
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Delegate
    }

    async fn run(&self, input: WorkflowInput, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let result = match (&input.resume, &input.script) {
            (Some(run_id), _) if !self.started(run_id) => {
                return Ok(ToolOutput::error(format!(
                    "workflow: `{run_id}` is not a run this tool started in this session; a \
                     person resumes other runs with `subagents workflow resume RUN_ID`"
                )));
            }
            (Some(run_id), script) => self.workflows.resume(run_id, script.as_deref(), ctx).await,
            (None, Some(script)) => {
                match self
                    .workflows
                    .prepare(script, input.args.unwrap_or(Value::Null))
                    .await
                {
                    Ok(prepared) => {
                        self.remember(prepared.run_id());
                        Ok(self.workflows.execute(prepared, ctx).await)
                    }
                    Err(e) => Err(e),
                }
            }
            (None, None) => {
                return Err(ToolError::invalid(
                    WORKFLOW_TOOL,
                    "give `script` (or `resume` with a run id)",
                ));
            }
        };
        Ok(match result {
            Ok(outcome) => output(&outcome),
            Err(e) => ToolOutput::error(format!("workflow: {e}")),
        })
    }
}

/// What the model reads of a run: its result as JSON, or its error and how to resume.
fn output(o: &WorkflowOutcome) -> ToolOutput {
    let n = o.calls.replayed + o.calls.done + o.calls.failed;
    let out = match (o.status, &o.result, &o.error) {
        (RunStatus::Completed, Some(result), _) => {
            let text = match result {
                Value::String(s) => s.clone(),
                v => serde_json::to_string_pretty(v).unwrap_or_default(),
            };
            ToolOutput::text(format!(
                "{text}\n\n[workflow {} completed · {n} agent calls]",
                o.run_id
            ))
        }
        (status, _, error) => ToolOutput::error(format!(
            "workflow {} {status}: {}. Finished calls are kept: fix the script if needed and call \
             Workflow with {{\"resume\": \"{}\", \"script\": ...}} to go on without repeating them.",
            o.run_id,
            error.as_ref().map(ToString::to_string).unwrap_or_default(),
            o.run_id
        )),
    };
    out.with_children(vec![o.usage_tree()])
}
