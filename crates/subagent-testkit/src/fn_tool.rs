//! [`FnTool`]: a tool made of a name, a description, an input schema and a function.

use std::fmt;

use serde_json::Value;
use subagent_spi::{TaskContext, Tool, ToolEffect, ToolError, ToolOutput, async_trait};

/// The function behind a [`FnTool`]: its input to its result.
type CallFn = dyn Fn(Value) -> Result<ToolOutput, ToolError> + Send + Sync;

/// A [`Tool`] whose call is a plain function of its input, for tests and benches that need a
/// tool (to offer a model, or to serve over MCP) without writing a type for it. Its effect is
/// the SPI's default ([`ToolEffect::Execute`]) unless [`with_effect`](Self::with_effect)
/// says otherwise.
///
/// ```
/// # async fn demo() {
/// use serde_json::json;
/// use subagent_spi::{TaskContext, Tool, ToolOutput};
/// use subagent_testkit::FnTool;
///
/// let echo = FnTool::new("echo", "Echoes `text`.", json!({"type": "object"}), |input| {
///     Ok(ToolOutput::text(input["text"].as_str().unwrap_or_default()))
/// });
/// let out = echo.call(json!({"text": "hi"}), &TaskContext::new()).await.unwrap();
/// assert_eq!(out.content, "hi");
/// # }
/// ```
pub struct FnTool {
    name: String,
    description: String,
    input_schema: Value,
    effect: ToolEffect,
    call: Box<CallFn>,
}

impl FnTool {
    /// A tool named `name`, described to models by `description`, taking input of
    /// `input_schema`, answering with `call`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        call: impl Fn(Value) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            effect: ToolEffect::Execute,
            call: Box::new(call),
        }
    }

    /// The tool's [`ToolEffect`] (builder style).
    #[must_use]
    pub fn with_effect(mut self, effect: ToolEffect) -> Self {
        self.effect = effect;
        self
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .field("effect", &self.effect)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for FnTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }

    fn effect(&self) -> ToolEffect {
        self.effect
    }

    async fn call(&self, input: Value, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        (self.call)(input)
    }
}
