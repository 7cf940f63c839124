//! Typed results at the `Task` tool: whatever the kind (a local agent, an A2A or MCP peer), a
//! call with an `output_schema` returns a value valid under it, or fails saying why.
//!
//! The child's outcome is checked here: its `structured` value, else the JSON its text holds.
//! An invalid one is sent back to the child (a `resume` of its session with the errors as the
//! prompt) at most the schema's retries times, when the child has a session to resume; then
//! the outcome is `failed`, its text starting [`INVALID_OUTPUT_PREFIX`]. A valid one becomes
//! `structured`, and the text is its compact JSON.

use std::sync::Arc;

use subagent_schema::{INVALID_OUTPUT_PREFIX, OutputSchema, Profile, parse_json_text};
use subagent_spi::{
    SubagentDefinition, SubagentError, SubagentExecutor, TaskCall, TaskContext, TaskOutcome,
    TaskStatus,
};

/// Compiles a call's schema with `profile`; the error names the agent.
pub(crate) fn compile(
    call: &TaskCall,
    agent: &str,
    profile: Profile,
) -> Result<Option<OutputSchema>, SubagentError> {
    call.output_schema
        .as_ref()
        .map(|s| {
            OutputSchema::compile(s, profile).map_err(|e| {
                SubagentError::InvalidInput(format!("output_schema for agent `{agent}`: {e}"))
            })
        })
        .transpose()
}

/// Checks (and, by resuming, retries) a finished child's outcome against its schema.
pub(crate) async fn enforce(
    schema: &OutputSchema,
    call: &TaskCall,
    executor: &Arc<dyn SubagentExecutor>,
    def: &Arc<dyn SubagentDefinition>,
    child: &TaskContext,
    mut outcome: TaskOutcome,
) -> Result<TaskOutcome, SubagentError> {
    let mut attempts: u32 = 0;
    loop {
        if outcome.status != TaskStatus::Completed {
            return Ok(outcome);
        }
        attempts += 1;
        let error = match outcome
            .structured
            .take()
            .or_else(|| parse_json_text(&outcome.text))
        {
            // Off the async threads, at most until the run's deadline.
            Some(value) => match schema.check(value, child.deadline()).await {
                Ok(value) => {
                    outcome.text = value.to_string();
                    outcome.structured = Some(value);
                    return Ok(outcome);
                }
                Err(e) => e.to_string(),
            },
            None => "the result is not a JSON value".to_string(),
        };
        let session = match outcome.session_id.clone() {
            Some(s) if attempts <= schema.retries() && !child.cancel().is_cancelled() => s,
            _ => {
                outcome.status = TaskStatus::Failed;
                outcome.text = format!(
                    "{INVALID_OUTPUT_PREFIX} the result of agent `{}` is not valid under the \
                     output schema after {attempts} attempt{}: {error}",
                    def.name(),
                    if attempts == 1 { "" } else { "s" },
                );
                return Ok(outcome);
            }
        };
        let mut retry = TaskCall::new(
            call.subagent_type.clone(),
            call.description.clone(),
            retry_prompt(schema, &error),
        )
        .resuming(session);
        retry.model.clone_from(&call.model);
        retry.output_schema.clone_from(&call.output_schema);
        let mut next = executor.execute(retry, def.clone(), child.clone()).await?;
        // The run's usage is that of every attempt.
        next.usage.add_tokens(&outcome.usage);
        let mut children = std::mem::take(&mut outcome.children);
        children.append(&mut next.children);
        next.children = children;
        outcome = next;
    }
}

/// The prompt that sends an invalid result back: the errors, and the schema when it is short.
fn retry_prompt(schema: &OutputSchema, error: &str) -> String {
    let text = schema.schema().to_string();
    let schema_part = if text.len() <= MAX_SCHEMA_IN_PROMPT {
        format!(" valid under this JSON Schema: {text}")
    } else {
        " valid under the output schema you were given".to_string()
    };
    format!(
        "Your result is not valid under the output schema: {error}. Answer again with only a \
         JSON value{schema_part}"
    )
}

/// Longest schema text repeated in a retry prompt, in bytes.
const MAX_SCHEMA_IN_PROMPT: usize = 4096;
