//! Typed results in the loop: a run given an [`OutputSchema`] offers the model a final
//! `StructuredOutput` tool whose input schema is the output schema, and ends when the model
//! calls it with a valid value (or answers with JSON text valid under the schema). Invalid
//! values are sent back with the validator's (bounded) errors, at most
//! [`OutputSchema::retries`] times; then the run fails saying why.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use subagent_schema::INVALID_OUTPUT_PREFIX;
use subagent_schema::{OutputSchema, STRUCTURED_OUTPUT_TOOL};
use subagent_spi::{TaskContext, Tool, ToolEffect, ToolError, ToolOutput};

/// What the model's final text (a reply without tool calls) leads to.
pub(crate) enum FinalText {
    /// A valid value: the run ends with it.
    Accept,
    /// Not valid: this message goes back to the model as the next user message.
    Retry(String),
    /// Not valid and no retries left: the run fails with this text.
    GiveUp(String),
}

#[derive(Default)]
struct State {
    value: Option<Value>,
    /// Invalid attempts so far (tool calls and final texts).
    failures: u32,
    last_error: Option<String>,
}

/// The state of one run's typed result, shared with its `StructuredOutput` tool.
#[derive(Clone)]
pub(crate) struct Structured {
    schema: OutputSchema,
    state: Arc<Mutex<State>>,
    /// The result comes as JSON text only (a fork's: no `StructuredOutput` tool is offered).
    by_text: bool,
}

impl Structured {
    pub(crate) fn new(schema: OutputSchema) -> Self {
        Self {
            schema,
            state: Arc::default(),
            by_text: false,
        }
    }

    /// The same, the result coming as JSON text when `by_text` (builder style).
    pub(crate) fn by_text(mut self, by_text: bool) -> Self {
        self.by_text = by_text;
        self
    }

    /// What a task asking for a result as JSON text ends with: the schema, and how to answer.
    pub(crate) fn text_instruction(schema: &OutputSchema) -> String {
        format!(
            "\n\nEnd with your result as your final answer: only a JSON value valid under this \
             JSON Schema, nothing else (no tool call, no text around it):\n{}",
            schema.schema()
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tool the model ends the run with.
    pub(crate) fn tool(&self) -> Arc<dyn Tool> {
        Arc::new(StructuredOutputTool(self.clone()))
    }

    /// The line added to the system prompt.
    pub(crate) fn instruction() -> String {
        format!(
            "\n\nWhen you have the result, call the `{STRUCTURED_OUTPUT_TOOL}` tool once with it \
             (its input must be valid under the tool's schema); that call ends the task."
        )
    }

    /// The accepted value, once there is one.
    pub(crate) fn accepted(&self) -> Option<Value> {
        self.lock().value.clone()
    }

    /// The failure text when the attempts are used up.
    pub(crate) fn exhausted(&self) -> Option<String> {
        let st = self.lock();
        (st.value.is_none() && st.failures > self.schema.retries()).then(|| self.give_up(&st))
    }

    fn give_up(&self, st: &State) -> String {
        format!(
            "{INVALID_OUTPUT_PREFIX} no result valid under the output schema after {} attempt{}; \
             last error: {}",
            st.failures,
            if st.failures == 1 { "" } else { "s" },
            st.last_error.as_deref().unwrap_or("none")
        )
    }

    /// Records an invalid attempt; true while retries are left.
    fn fail(&self, st: &mut State, error: String) -> bool {
        st.failures += 1;
        st.last_error = Some(error);
        st.failures <= self.schema.retries()
    }

    /// The model answered with text and no tool call; its check runs off the async threads,
    /// at most until `deadline`.
    pub(crate) async fn on_final_text(
        &self,
        text: &str,
        deadline: Option<std::time::Instant>,
    ) -> FinalText {
        let checked = self.schema.check_text_within(text, deadline).await;
        let mut st = self.lock();
        match checked {
            Ok(v) => {
                st.value = Some(v);
                FinalText::Accept
            }
            Err(e) => {
                let error = e.to_string();
                if self.fail(&mut st, error.clone()) {
                    let how = if self.by_text {
                        "Answer with only a JSON value valid under the schema you were given."
                            .to_string()
                    } else {
                        format!(
                            "Call the `{STRUCTURED_OUTPUT_TOOL}` tool with a value valid under \
                             its schema."
                        )
                    };
                    FinalText::Retry(format!("Your answer is not a valid result: {error}. {how}"))
                } else {
                    FinalText::GiveUp(self.give_up(&st))
                }
            }
        }
    }
}

/// The final tool of a typed run: `StructuredOutput`.
struct StructuredOutputTool(Structured);

#[async_trait]
impl Tool for StructuredOutputTool {
    fn name(&self) -> &str {
        STRUCTURED_OUTPUT_TOOL
    }

    fn description(&self) -> String {
        "Ends the task with its result: call it once, when you are done, with the result as \
         input (valid under this tool's schema). Invalid input is refused with the reasons; \
         fix it and call again."
            .to_string()
    }

    fn input_schema(&self) -> Value {
        self.0.schema.tool_input_schema()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    async fn call(&self, input: Value, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let s = &self.0;
        if s.lock().value.is_some() {
            return Ok(ToolOutput::text("A result was already accepted."));
        }
        let value = s.schema.from_tool_input(input);
        // Off the async threads, at most until the run's deadline.
        let checked = s.schema.check(value, ctx.deadline()).await;
        let mut st = s.lock();
        if st.value.is_some() {
            return Ok(ToolOutput::text("A result was already accepted."));
        }
        match checked {
            Ok(value) => {
                st.value = Some(value);
                Ok(ToolOutput::text("Result accepted."))
            }
            Err(e) => {
                let error = e.to_string();
                let more = s.fail(&mut st, error.clone());
                Ok(ToolOutput::error(if more {
                    format!("Not valid under the output schema: {error}. Fix it and call again.")
                } else {
                    format!("Not valid under the output schema: {error}. No attempts are left.")
                }))
            }
        }
    }
}
