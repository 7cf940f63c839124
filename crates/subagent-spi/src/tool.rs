use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{BoxError, TaskContext, ToolError, UsageNode};

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
#[non_exhaustive]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: serde_json::Value,
}

impl ToolSpec {
    /// A spec from its three parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: serde_json::Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
        }
    }
}

/// A tool's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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

    /// Adds usage nodes of subagent runs this call made (builder style).
    #[must_use]
    pub fn with_children(mut self, children: Vec<UsageNode>) -> Self {
        self.children = children;
        self
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
        ToolSpec::new(self.name(), self.description(), self.input_schema())
    }
}

/// Supplies tools for an agent from a piece of its configuration: the contract between a kind
/// that runs agents and a crate that makes tools, so neither depends on the other.
///
/// The Markdown kind asks one for the tools of an agent's `mcpServers` value (the
/// `subagent-mcp` crate implements it); a host wires the two together (the `subagents` facade
/// does). Tools a source returns are filtered by the agent's own tool rules like any other.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The tools for one agent's configuration `value` (passed as written, e.g. a list of
    /// server names or a map of inline server configs). An error names what failed; the caller
    /// decides whether the agent runs without those tools.
    async fn tools_for(
        &self,
        agent: &str,
        value: &serde_json::Value,
    ) -> Result<Vec<Arc<dyn Tool>>, BoxError>;
}
