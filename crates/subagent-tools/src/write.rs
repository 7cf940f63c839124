//! The `Write` and `Edit` tools.

use schemars::JsonSchema;
use serde::Deserialize;
use subagent_spi::{TaskContext, ToolEffect, ToolError, ToolOutput};

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::Workspace;
use crate::protected::{ApprovedProtectedWrite, check_write, handle_path};
use crate::util::blocking;
use crate::workspace::not_regular;

/// Largest file `Edit` reads, and largest result it writes (16 MiB).
pub const MAX_EDIT_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Input of [`WriteTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The file: relative to the workspace root, or absolute inside it.
    pub file_path: String,
    /// The whole new content.
    pub content: String,
}

/// Creates or overwrites a file (creating parent directories) inside the workspace. An existing
/// file must be a regular file with a single hard link (checked on the open handle before
/// anything is changed).
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

#[subagent_spi::async_trait]
impl subagent_spi::TypedTool for WriteTool {
    type Input = WriteInput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Writes a file (replacing it; parent directories are created). Prefer Edit to change part \
         of a file."
            .into()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Edit
    }

    async fn run(&self, input: WriteInput, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let path = self.workspace.resolve(Self::NAME, &input.file_path).await?;
        let shown = self.workspace.display_path(&path);
        let approved = approved_path(ctx);
        {
            let (ws, path, approved) = (self.workspace.clone(), path.clone(), approved.clone());
            blocking(Self::NAME, move |_| {
                check_write(&ws, Self::NAME, &path, approved.as_deref())
            })
            .await?;
        }
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
        let (bytes, lines) = (input.content.len(), input.content.lines().count());
        let ws = self.workspace.clone();
        let shown2 = shown.clone();
        let existed = blocking(Self::NAME, move |_| {
            write_checked(
                &ws,
                &path,
                &input.file_path,
                &shown2,
                input.content.as_bytes(),
                approved.as_deref(),
            )
        })
        .await?;
        Ok(ToolOutput::text(format!(
            "{} `{shown}` ({} bytes, {} lines)",
            if existed { "Overwrote" } else { "Created" },
            bytes,
            lines
        )))
    }
}

/// Input of [`EditTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The file: relative to the workspace root, or absolute inside it.
    pub file_path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Replace every occurrence (default: it must occur once).
    #[serde(default)]
    pub replace_all: bool,
}

/// Replaces an exact string in a file: it must occur exactly once, unless `replace_all` is set.
/// The file must be a regular file with a single hard link, of at most [`MAX_EDIT_FILE_BYTES`]
/// before and after the edit; it is read and written through one checked handle.
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

#[subagent_spi::async_trait]
impl subagent_spi::TypedTool for EditTool {
    type Input = EditInput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Replaces an exact string in a file: `old_string` (indentation included) must occur once \
         (add surrounding lines to make it unique) unless `replace_all`."
            .into()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Edit
    }

    async fn run(&self, input: EditInput, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
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
        let ws = self.workspace.clone();
        let shown2 = shown.clone();
        let approved = approved_path(ctx);
        let count = blocking(Self::NAME, move |_| {
            check_write(&ws, Self::NAME, &path, approved.as_deref())?;
            edit_checked(&ws, &path, &shown2, &input, approved.as_deref())
        })
        .await?;
        Ok(ToolOutput::text(format!(
            "Replaced {count} occurrence{} in `{shown}`",
            if count == 1 { "" } else { "s" }
        )))
    }
}

/// The protected file the call's context approves writing, if any.
fn approved_path(ctx: &TaskContext) -> Option<std::path::PathBuf> {
    ctx.extensions()
        .get::<ApprovedProtectedWrite>()
        .map(|a| a.path().to_path_buf())
}

/// Opens `path` (already resolved inside the workspace) for writing without truncating it, and
/// refuses anything but a regular file with one link, checked on the open handle; then replaces
/// its content. Returns whether the file existed. Blocking.
fn write_checked(
    ws: &Workspace,
    path: &Path,
    given: &str,
    shown: &str,
    content: &[u8],
    approved: Option<&Path>,
) -> Result<bool, ToolError> {
    const NAME: &str = WriteTool::NAME;
    let failed = |what: &str, e: std::io::Error| {
        ToolError::failed(NAME, format!("cannot {what} `{shown}`: {e}"))
    };
    let existed = match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return Err(not_regular(NAME, shown)),
        Ok(_) => true,
        Err(_) => false,
    };
    // No `truncate` yet: nothing changes until the handle has passed the checks.
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| failed("open", e))?;
    if let Err(e) = check_handle(ws, NAME, &file, given, shown, approved) {
        if !existed {
            // Created by this call through a swapped path: take it back.
            if let Some(real) = handle_path(&file) {
                let _ = std::fs::remove_file(real);
            }
        }
        return Err(e);
    }
    file.set_len(0).map_err(|e| failed("write", e))?;
    file.write_all(content).map_err(|e| failed("write", e))?;
    file.flush().map_err(|e| failed("write", e))?;
    Ok(existed)
}

/// Checks an open handle: a regular file with a single hard link, and not a protected file
/// (where the handle really is: a path swapped for a symlink after the path check is caught)
/// unless `approved` names it.
fn check_handle(
    ws: &Workspace,
    tool: &str,
    file: &File,
    given: &str,
    shown: &str,
    approved: Option<&Path>,
) -> Result<std::fs::Metadata, ToolError> {
    let meta = file
        .metadata()
        .map_err(|e| ToolError::failed(tool, format!("cannot inspect `{shown}`: {e}")))?;
    if !meta.is_file() {
        return Err(not_regular(tool, shown));
    }
    ws.check_links(tool, given, &meta)?;
    if let Some(real) = handle_path(file) {
        check_write(ws, tool, &real, approved)?;
    }
    Ok(meta)
}

/// Reads, replaces and writes back through one checked handle. Returns the number of
/// occurrences replaced. Blocking.
fn edit_checked(
    ws: &Workspace,
    path: &Path,
    shown: &str,
    input: &EditInput,
    approved: Option<&Path>,
) -> Result<usize, ToolError> {
    const NAME: &str = EditTool::NAME;
    let failed = |what: &str, e: std::io::Error| {
        ToolError::failed(NAME, format!("cannot {what} `{shown}`: {e}"))
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::failed(NAME, format!("`{shown}` is a directory")));
        }
        Ok(meta) if !meta.is_file() => return Err(not_regular(NAME, shown)),
        Ok(_) => {}
        Err(e) => return Err(failed("read", e)),
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| failed("open", e))?;
    let meta = check_handle(ws, NAME, &file, &input.file_path, shown, approved)?;
    if meta.len() > MAX_EDIT_FILE_BYTES {
        return Err(ToolError::failed(
            NAME,
            format!(
                "`{shown}` is {} bytes, more than Edit's limit of {MAX_EDIT_FILE_BYTES} bytes",
                meta.len()
            ),
        ));
    }
    let mut text = String::new();
    (&mut file)
        .take(MAX_EDIT_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| failed("read", e))?;
    let count = text.matches(input.old_string.as_str()).count();
    if count == 0 {
        return Err(ToolError::failed(
            NAME,
            format!(
                "`old_string` was not found in `{shown}`; Read the file and copy the text exactly"
            ),
        ));
    }
    if count > 1 && !input.replace_all {
        return Err(ToolError::failed(
            NAME,
            format!(
                "`old_string` occurs {count} times in `{shown}`; include more surrounding \
                 text to make it unique, or set `replace_all` to true"
            ),
        ));
    }
    let replaced = if input.replace_all { count } else { 1 };
    let new_len = (text.len() as u64)
        .saturating_sub(input.old_string.len() as u64 * replaced as u64)
        .saturating_add(input.new_string.len() as u64 * replaced as u64);
    if new_len > MAX_EDIT_FILE_BYTES {
        return Err(ToolError::failed(
            NAME,
            format!(
                "the edited `{shown}` would be {new_len} bytes, more than Edit's limit of \
                 {MAX_EDIT_FILE_BYTES} bytes"
            ),
        ));
    }
    let updated = if input.replace_all {
        text.replace(input.old_string.as_str(), &input.new_string)
    } else {
        text.replacen(input.old_string.as_str(), &input.new_string, 1)
    };
    file.seek(SeekFrom::Start(0))
        .map_err(|e| failed("write", e))?;
    file.set_len(0).map_err(|e| failed("write", e))?;
    file.write_all(updated.as_bytes())
        .map_err(|e| failed("write", e))?;
    file.flush().map_err(|e| failed("write", e))?;
    Ok(count)
}
