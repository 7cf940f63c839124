//! The `Write` and `Edit` tools.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use subagent_spi::{TaskContext, Tool, ToolEffect, ToolError, ToolOutput, async_trait};

use crate::Workspace;
use crate::util::{parse, schema_for};

/// Input of [`WriteTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The file to write: a path relative to the workspace root, or an absolute path inside it.
    /// Missing parent directories are created.
    pub file_path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// Creates or overwrites a file (creating parent directories) inside the workspace.
#[derive(Debug, Clone)]
pub struct WriteTool {
    workspace: Workspace,
}

impl WriteTool {
    /// The tool's name.
    pub const NAME: &'static str = "Write";

    /// A `Write` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Writes a file in the workspace, replacing it if it exists and creating missing parent \
         directories. Prefer Edit for changing part of an existing file."
            .to_string()
    }

    fn input_schema(&self) -> Value {
        schema_for::<WriteInput>()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Edit
    }

    async fn call(&self, input: Value, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let input: WriteInput = parse(Self::NAME, input)?;
        let path = self.workspace.resolve(Self::NAME, &input.file_path).await?;
        let shown = self.workspace.display_path(&path);
        if tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir()) {
            return Err(ToolError::failed(
                Self::NAME,
                format!("`{shown}` is a directory"),
            ));
        }
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(|e| {
                ToolError::failed(
                    Self::NAME,
                    format!("cannot create the directories for `{shown}`: {e}"),
                )
            })?;
        }
        let existed = tokio::fs::try_exists(&path).await.unwrap_or(false);
        tokio::fs::write(&path, input.content.as_bytes())
            .await
            .map_err(|e| ToolError::failed(Self::NAME, format!("cannot write `{shown}`: {e}")))?;
        Ok(ToolOutput::text(format!(
            "{} `{shown}` ({} bytes, {} lines)",
            if existed { "Overwrote" } else { "Created" },
            input.content.len(),
            input.content.lines().count()
        )))
    }
}

/// Input of [`EditTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The file to edit: a path relative to the workspace root, or an absolute path inside it.
    pub file_path: String,
    /// The exact text to replace (must occur exactly once unless `replace_all` is set).
    pub old_string: String,
    /// The text to put in its place (must differ from `old_string`).
    pub new_string: String,
    /// Replace every occurrence instead of requiring a unique one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// Replaces an exact string in a file: it must occur exactly once, unless `replace_all` is set.
#[derive(Debug, Clone)]
pub struct EditTool {
    workspace: Workspace,
}

impl EditTool {
    /// The tool's name.
    pub const NAME: &'static str = "Edit";

    /// An `Edit` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Replaces an exact string in a file of the workspace. `old_string` must match the file \
         exactly (including indentation) and occur exactly once; include surrounding lines to \
         make it unique, or set `replace_all` to replace every occurrence."
            .to_string()
    }

    fn input_schema(&self) -> Value {
        schema_for::<EditInput>()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Edit
    }

    async fn call(&self, input: Value, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let input: EditInput = parse(Self::NAME, input)?;
        if input.old_string.is_empty() {
            return Err(ToolError::invalid(
                Self::NAME,
                "`old_string` is empty; use Write to create a file",
            ));
        }
        if input.old_string == input.new_string {
            return Err(ToolError::invalid(
                Self::NAME,
                "`old_string` and `new_string` are the same; nothing would change",
            ));
        }
        let path = self.workspace.resolve(Self::NAME, &input.file_path).await?;
        let shown = self.workspace.display_path(&path);
        let text = tokio::fs::read_to_string(&path)
            .await
            .map_err(|e| ToolError::failed(Self::NAME, format!("cannot read `{shown}`: {e}")))?;
        let count = text.matches(input.old_string.as_str()).count();
        if count == 0 {
            return Err(ToolError::failed(
                Self::NAME,
                format!(
                    "`old_string` was not found in `{shown}`; Read the file and copy the text exactly"
                ),
            ));
        }
        if count > 1 && !input.replace_all {
            return Err(ToolError::failed(
                Self::NAME,
                format!(
                    "`old_string` occurs {count} times in `{shown}`; include more surrounding \
                     text to make it unique, or set `replace_all` to true"
                ),
            ));
        }
        let updated = if input.replace_all {
            text.replace(input.old_string.as_str(), &input.new_string)
        } else {
            text.replacen(input.old_string.as_str(), &input.new_string, 1)
        };
        tokio::fs::write(&path, updated.as_bytes())
            .await
            .map_err(|e| ToolError::failed(Self::NAME, format!("cannot write `{shown}`: {e}")))?;
        Ok(ToolOutput::text(format!(
            "Replaced {count} occurrence{} in `{shown}`",
            if count == 1 { "" } else { "s" }
        )))
    }
}
