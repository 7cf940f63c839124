use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{TaskContext, ToolError, UsageNode};

/// What a tool may do to the world; permission modes decide on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolEffect {
    /// Reads only (Read, Glob, Grep).
    ReadOnly,
    /// Changes files in the workspace (Write, Edit).
    Edit,
    /// Runs commands or reaches the network (Bash, WebFetch).
    Execute,
    /// Delegates to other agents (Task); safe by itself, the children have their own policies.
    Delegate,
}

/// The name, description and input schema of a tool, as sent to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: serde_json::Value,
}

/// A tool's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Text returned to the model.
    pub content: String,
    /// True when the text describes a failure the model should react to.
    pub is_error: bool,
    /// Usage of subagent runs this call made (the `Task` tool fills it), folded into the
    /// caller's usage tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<UsageNode>,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// An error text result (the model sees it and can recover).
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            children: Vec::new(),
        }
    }
}

/// A function a model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Tool name, unique within an agent's tool set.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> String;

    /// JSON Schema of the input object.
    fn input_schema(&self) -> serde_json::Value;

    /// What the tool may do; defaults to [`ToolEffect::Execute`] (the most guarded).
    fn effect(&self) -> ToolEffect {
        ToolEffect::Execute
    }

    /// Runs the tool. `Err` is turned into an error result for the model by the agent loop.
    async fn call(
        &self,
        input: serde_json::Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError>;

    /// The spec sent to models.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description(),
            input_schema: self.input_schema(),
        }
    }
}
