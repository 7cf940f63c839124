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
    /// The task, with everything the agent needs (it sees nothing else).
    #[setters(skip)]
    pub prompt: String,
    /// The agent's name, as listed.
    #[setters(skip)]
    pub subagent_type: String,
    /// Optional: another model (an alias such as `sonnet`, or a spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub model: Option<String>,
    /// Optional: the `session` id a result ends with, to continue that agent with this prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(rename = "resuming", into)]
    pub resume: Option<String>,
    /// Optional: run in the background.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(rename = "in_background")]
    pub run_in_background: Option<bool>,
    /// Optional: a name for `SendMessage` to reach a background agent by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(into)]
    pub name: Option<String>,
    /// Optional: a JSON Schema the result must satisfy (the agent ends with a JSON value
    /// valid under it).
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
