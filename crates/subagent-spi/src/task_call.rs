use derive_setters::Setters;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The input of the `Task` tool, and what every executor receives.
///
/// The serde names are exactly the field names (snake_case); the JSON schema derived from this
/// type is the `Task` tool's input schema, so its doc comments are what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema, Setters)]
#[setters(prefix = "with_", strip_option)]
#[non_exhaustive]
pub struct TaskCall {
    /// A short (3-5 word) description of the task.
    #[setters(skip)]
    pub description: String,
    /// The task for the agent to perform. The agent starts with no other context, so include
    /// everything it needs.
    #[setters(skip)]
    pub prompt: String,
    /// The name of the agent to use, as listed in this tool's description.
    #[setters(skip)]
    pub subagent_type: String,
    /// Optional model override for this agent (an alias such as `sonnet`, or a model spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub model: Option<String>,
    /// Optional id of an earlier run (the `session` shown in its result) to continue it with
    /// this prompt as the next message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(rename = "resuming", into)]
    pub resume: Option<String>,
    /// Set to true to run the agent in the background. You get a task id back at once and read
    /// the result later with `TaskOutput`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(rename = "in_background")]
    pub run_in_background: Option<bool>,
    /// Optional name for a background agent (letters, digits, `-`, `_`, `.`; at most 64):
    /// while it runs, `SendMessage` can reach it by this name as well as by its task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub name: Option<String>,
    /// Optional JSON Schema the result must satisfy. The agent then ends with a JSON value valid
    /// under it (invalid values are sent back to it to fix, a bounded number of times), and
    /// that value is the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub output_schema: Option<serde_json::Value>,
}

impl TaskCall {
    /// A foreground call with the three required fields.
    pub fn new(
        subagent_type: impl Into<String>,
        description: impl Into<String>,
        prompt: impl Into<String>,
    ) -> Self {
        Self {
            description: description.into(),
            prompt: prompt.into(),
            subagent_type: subagent_type.into(),
            ..Self::default()
        }
    }

    /// True when the call asks for a background run.
    pub fn is_background(&self) -> bool {
        self.run_in_background.unwrap_or(false)
    }
}
