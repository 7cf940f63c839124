//! # subagent-tools
//!
//! The built-in tools a local subagent can be given, each implementing the SPI
//! [`Tool`] trait with its [`ToolEffect`](subagent_spi::ToolEffect):
//!
//! | tool | effect | what it does |
//! |---|---|---|
//! | [`ReadTool`] `Read` | read-only | a text file with line numbers (`cat -n`), `offset`/`limit` |
//! | [`WriteTool`] `Write` | edit | creates or overwrites a file |
//! | [`EditTool`] `Edit` | edit | unique exact-string replacement (or `replace_all`) |
//! | [`GlobTool`] `Glob` | read-only | files by glob, gitignore-aware, newest first |
//! | [`GrepTool`] `Grep` | read-only | regex search (ripgrep's engine), gitignore-aware |
//! | [`BashTool`] `Bash` | execute | `sh -c` with a timeout, confined by a [`SandboxPolicy`] (on Linux: writes only in the workspace, less its protected control files, and the temp directory; an environment allow-list); everything it started is killed at the end |
//! | [`WebFetchTool`] `WebFetch` | execute | an http(s) URL as text (feature `web`, on by default) |
//! | [`TodoWriteTool`] `TodoWrite` | read-only | a todo list kept in memory and echoed back |
//!
//! Every file tool is confined to a [`Workspace`] root: `..` escapes, absolute paths outside the
//! root and symlinks leading out are refused with
//! [`ToolError::Denied`](subagent_spi::ToolError::Denied) naming the path and the root, and so
//! are files with more than one hard link (checked on the open handle), whose other names may
//! be outside the root. File
//! I/O uses `tokio::fs`; directory walks run on the blocking pool.
//!
//! The project's own control files ([`PROTECTED_PATHS`]: `subagents.toml`, `.mcp.json`,
//! `.claude/settings*.json`, `.claude/agents/`, `.vscode/`, `.git/hooks/` and `.git/config`
//! of every repository in the workspace...) are protected: confined commands cannot change
//! them, and `Write` and `Edit` refuse them unless the call carries an
//! [`ApprovedProtectedWrite`] for that file (the permission guard of `subagent-claude` adds
//! one after a person approved the call), so a model cannot switch the sandbox off or add a
//! hook for the next run.
//!
//! Commands that the sandbox covers (`Bash`, the hooks of `subagent-claude`, stdio MCP
//! servers) start through [`ConfinedCommand`]: in user, mount and PID namespaces where the
//! machine allows (the control files bind-mounted read-only, Landlock after; a program gets
//! this by calling [`sandbox_helper_main`] first in `main`), else with Landlock alone
//! ([`SandboxMode`], [`sandbox_report`]).
//!
//! Tool inputs use Claude Code's field names (`file_path`, `old_string`, `output_mode`...), and
//! their JSON Schemas are derived from the input structs.
//!
//! ```no_run
//! use subagent_tools::{ToolSet, Workspace};
//! let ws = Workspace::new(".").expect("workspace root");
//! let explorer_tools = ToolSet::read_only(ws.clone()); // Read, Glob, Grep
//! let all = ToolSet::all(ws);
//! assert!(ToolSet::find(&all, "Bash").is_some());
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

use std::sync::Arc;

use subagent_spi::Tool;

mod bash;
mod protected;
mod read;
mod sandbox;
mod scripts;
mod search;
mod todo;
mod util;
#[cfg(feature = "web")]
mod web;
mod workspace;
mod write;

pub use bash::{
    BashInput, BashTool, CONFINEMENT_NOTE, DEFAULT_BASH_TIMEOUT, FALLBACK_CONFINEMENT_NOTE,
    MAX_BASH_OUTPUT_CHARS, MAX_BASH_TIMEOUT, ProcessGroupGuard, is_secret_env,
};
pub use protected::{
    ApprovedProtectedWrite, MAX_SANDBOX_ENTRIES, PROTECTED_PATHS, ProtectedPaths, ProtectedTarget,
    protected_write_target,
};
pub use read::{DEFAULT_READ_LINES, MAX_LINE_CHARS, ReadInput, ReadTool};
pub use sandbox::{
    ConfinedChild, ConfinedCommand, DEFAULT_ENV_ALLOW, LandlockSupport, NamespaceSupport,
    SANDBOX_HELPER_ENV, SANDBOX_MODE_ENV, SandboxError, SandboxMode, SandboxPolicy, SandboxReport,
    landlock_abi, landlock_support, sandbox_helper_main, sandbox_report,
};
pub use scripts::{MAX_PINNED_BYTES, MAX_PINNED_FILES, ScriptPins};
pub use search::{
    GlobInput, GlobTool, GrepInput, GrepOutputMode, GrepTool, MAX_CONTENT_LINES, MAX_LISTED_FILES,
};
pub use todo::{MAX_TODOS, TodoItem, TodoStatus, TodoWriteInput, TodoWriteTool};
#[cfg(feature = "web")]
pub use web::{
    DEFAULT_FETCH_TIMEOUT, DEFAULT_MAX_BODY_BYTES, MAX_FETCH_TEXT_CHARS, WebFetchInput,
    WebFetchTool, html_to_text,
};
pub use workspace::{Workspace, WorkspaceError, normalize_path};
pub use write::{EditInput, EditTool, MAX_EDIT_FILE_BYTES, WriteInput, WriteTool};

/// Builds tool sets from the built-in tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolSet;

impl ToolSet {
    /// The names of every built-in tool, in the order [`all`](Self::all) returns them
    /// (`WebFetch` only with the `web` feature).
    pub const NAMES: &'static [&'static str] = &[
        ReadTool::NAME,
        WriteTool::NAME,
        EditTool::NAME,
        GlobTool::NAME,
        GrepTool::NAME,
        BashTool::NAME,
        #[cfg(feature = "web")]
        WebFetchTool::NAME,
        TodoWriteTool::NAME,
    ];

    /// The names of the read-only set.
    pub const READ_ONLY_NAMES: &'static [&'static str] =
        &[ReadTool::NAME, GlobTool::NAME, GrepTool::NAME];

    /// Every built-in tool, file tools confined to `workspace`, `Bash` by the default
    /// [`SandboxPolicy`].
    pub fn all(workspace: Workspace) -> Vec<Arc<dyn Tool>> {
        Self::all_with_sandbox(workspace, &SandboxPolicy::default())
    }

    /// Every built-in tool, file tools confined to `workspace`, `Bash` by `sandbox`.
    pub fn all_with_sandbox(workspace: Workspace, sandbox: &SandboxPolicy) -> Vec<Arc<dyn Tool>> {
        Self::NAMES
            .iter()
            .filter_map(|n| {
                if n.eq_ignore_ascii_case(BashTool::NAME) {
                    Some(
                        Arc::new(BashTool::with_sandbox(workspace.clone(), sandbox.clone()))
                            as Arc<dyn Tool>,
                    )
                } else {
                    Self::get(&workspace, n)
                }
            })
            .collect()
    }

    /// `Read`, `Glob` and `Grep`: the set for read-only agents.
    pub fn read_only(workspace: Workspace) -> Vec<Arc<dyn Tool>> {
        Self::READ_ONLY_NAMES
            .iter()
            .filter_map(|n| Self::get(&workspace, n))
            .collect()
    }

    /// A new instance of the built-in tool called `name` (case-insensitive), or `None`.
    pub fn get(workspace: &Workspace, name: &str) -> Option<Arc<dyn Tool>> {
        let ws = workspace.clone();
        let tool: Arc<dyn Tool> = match name.trim().to_ascii_lowercase().as_str() {
            "read" => Arc::new(ReadTool::new(ws)),
            "write" => Arc::new(WriteTool::new(ws)),
            "edit" => Arc::new(EditTool::new(ws)),
            "glob" => Arc::new(GlobTool::new(ws)),
            "grep" => Arc::new(GrepTool::new(ws)),
            "bash" => Arc::new(BashTool::new(ws)),
            #[cfg(feature = "web")]
            "webfetch" => Arc::new(WebFetchTool::new()),
            "todowrite" => Arc::new(TodoWriteTool::new()),
            _ => return None,
        };
        Some(tool)
    }

    /// The tool called `name` in `tools` (exact match first, then case-insensitive).
    pub fn find<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> Option<&'a Arc<dyn Tool>> {
        tools
            .iter()
            .find(|t| t.name() == name)
            .or_else(|| tools.iter().find(|t| t.name().eq_ignore_ascii_case(name)))
    }
}
