//! The `TodoWrite` tool.

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use subagent_spi::{TaskContext, ToolEffect, ToolError, ToolOutput};

/// At most this many items are kept.
pub const MAX_TODOS: usize = 200;

/// The state of one todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on (keep one at a time).
    InProgress,
    /// Done.
    Completed,
}

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    /// What to do ("Run the tests").
    pub content: String,
    /// Its state.
    pub status: TodoStatus,
    /// The same as in progress ("Running the tests").
    #[serde(
        default,
        rename = "activeForm",
        alias = "active_form",
        skip_serializing_if = "Option::is_none"
    )]
    pub active_form: Option<String>,
}

/// Input of [`TodoWriteTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteInput {
    /// The whole updated list.
    pub todos: Vec<TodoItem>,
}

/// Keeps a todo list for the agent (in memory, per tool instance) and echoes it back, so a model
/// can plan multi-step work and track its progress.
#[derive(Debug, Default)]
pub struct TodoWriteTool {
    todos: Mutex<Vec<TodoItem>>,
}

impl TodoWriteTool {
    /// The tool's name.
    pub const NAME: &'static str = "TodoWrite";

    /// A tool with an empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current list.
    pub fn todos(&self) -> Vec<TodoItem> {
        self.todos.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Renders a list as `[x] done`, `[>] in progress`, `[ ] pending` lines.
fn render(todos: &[TodoItem]) -> String {
    if todos.is_empty() {
        return "The todo list is now empty.".to_string();
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let mut out = format!("Todo list ({done}/{} done):\n", todos.len());
    for t in todos {
        let mark = match t.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
        };
        out.push_str(&format!("{mark} {}\n", t.content));
    }
    out
}

#[subagent_spi::async_trait]
impl subagent_spi::TypedTool for TodoWriteTool {
    type Input = TodoWriteInput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Replaces your todo list and shows it: plan multi-step work and mark progress (one item \
         in progress at a time)."
            .into()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    async fn run(
        &self,
        input: TodoWriteInput,
        _ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        if input.todos.len() > MAX_TODOS {
            return Err(ToolError::invalid(
                Self::NAME,
                format!(
                    "{} items is more than the {MAX_TODOS} a list may hold",
                    input.todos.len()
                ),
            ));
        }
        if let Some(i) = input.todos.iter().position(|t| t.content.trim().is_empty()) {
            return Err(ToolError::invalid(
                Self::NAME,
                format!("item {} has an empty `content`", i + 1),
            ));
        }
        let text = render(&input.todos);
        *self.todos.lock().unwrap_or_else(|p| p.into_inner()) = input.todos;
        Ok(ToolOutput::text(text))
    }
}
