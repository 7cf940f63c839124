//! The project's own control files: what a confined model may not change without a person.
//!
//! A file in the workspace that configures the agents or runs commands on its own would let a
//! model lift the limits the user set, for the *next* run: `subagents.toml` can turn the
//! sandbox off, `.claude/settings.json` can add a hook (a shell command run unconfined),
//! `.git/hooks/pre-commit` runs at the user's next `git commit`. These paths, relative to the
//! workspace root, are **protected** ([`PROTECTED_PATHS`]):
//!
//! - `Bash` cannot write them under Landlock (see [`SandboxPolicy`](crate::SandboxPolicy)):
//!   neither change them, nor create, remove or rename them, nor the directories that hold
//!   them;
//! - `Write` and `Edit` refuse them unless the call was approved by a person
//!   ([`ApprovedProtectedWrite`], which the permission guard of `subagent-claude` adds after
//!   asking; permission modes and allow rules never lift that).
//!
//! Names are compared without regard to ASCII case (a case-insensitive file system would open
//! the same file), and paths are compared after `..` and symlinks are resolved, so
//! `docs/x -> ../subagents.toml` is the same file. A control directory that is a symlink
//! (`.claude -> config/claude`) is protected where it really is.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use subagent_core::paths::real_prefix;
use subagent_spi::ToolError;

use crate::Workspace;

/// The protected paths, relative to the workspace root (a trailing `/` covers a directory and
/// everything beneath it; `*` any characters; `**/` at any depth: in the root and in every
/// directory beneath it, so nested repositories are covered too):
///
/// | path | why |
/// |---|---|
/// | `subagents.toml` | the command's configuration: sandbox, permissions, MCP and A2A peers |
/// | `.mcp.json` | MCP servers: commands agents start |
/// | `.claude/settings*.json` | Claude Code settings: hooks (shell commands), permission rules and mode |
/// | `.claude/agents/` | agent definitions: prompts, tools, permission modes, hooks |
/// | `.claude/skills/` | skills preloaded into agents' prompts |
/// | `.claude/commands/` | slash commands: prompts a person runs later |
/// | `.vscode/`, `.idea/` | editor settings and tasks: commands the editor runs when the folder opens |
/// | `**/.gitmodules` | submodule URLs and paths: what `git submodule update` fetches and checks out |
/// | `**/.git/hooks/` | commands git runs (`pre-commit`...) |
/// | `**/.git/config`, `**/.git/config.worktree` | `core.hooksPath`, `core.fsmonitor`, filters: commands git runs |
/// | `**/.git/modules/` | submodules' git directories (their hooks and config) |
/// | `**/.git/worktrees/` | linked worktrees' git directories (their `commondir` and config) |
/// | `**/.git/commondir` | points git at another directory's config and hooks |
/// | `**/.git` when it is a file | a `gitdir:` link, which could point git at hooks elsewhere |
pub const PROTECTED_PATHS: &[&str] = &[
    "subagents.toml",
    ".mcp.json",
    ".claude/settings*.json",
    ".claude/agents/",
    ".claude/skills/",
    ".claude/commands/",
    ".vscode/",
    ".idea/",
    "**/.gitmodules",
    "**/.git/hooks/",
    "**/.git/config",
    "**/.git/config.worktree",
    "**/.git/modules/",
    "**/.git/worktrees/",
    "**/.git/commondir",
    "**/.git",
];

/// How a protected name is matched inside its directory.
#[derive(Debug, Clone, Copy)]
enum Name {
    /// This file.
    File(&'static str),
    /// This directory and everything beneath it.
    Tree(&'static str),
    /// `settings*.json`.
    Settings,
    /// `.git` when it is not a directory.
    GitFile,
}

/// Where a rule applies: in the workspace root only, or in every directory (nested
/// repositories).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    Root,
    Any,
}

/// The protected names, by the directory (relative to the root, or to any directory for
/// [`Depth::Any`]) that holds them.
const RULES: &[(&str, Name, &str, Depth)] = &[
    (
        "",
        Name::File("subagents.toml"),
        "subagents.toml",
        Depth::Root,
    ),
    ("", Name::File(".mcp.json"), ".mcp.json", Depth::Root),
    ("", Name::Tree(".vscode"), ".vscode/", Depth::Root),
    ("", Name::Tree(".idea"), ".idea/", Depth::Root),
    (
        ".claude",
        Name::Settings,
        ".claude/settings*.json",
        Depth::Root,
    ),
    (
        ".claude",
        Name::Tree("agents"),
        ".claude/agents/",
        Depth::Root,
    ),
    (
        ".claude",
        Name::Tree("skills"),
        ".claude/skills/",
        Depth::Root,
    ),
    (
        ".claude",
        Name::Tree("commands"),
        ".claude/commands/",
        Depth::Root,
    ),
    ("", Name::File(".gitmodules"), "**/.gitmodules", Depth::Any),
    ("", Name::GitFile, "**/.git", Depth::Any),
    (".git", Name::Tree("hooks"), "**/.git/hooks/", Depth::Any),
    (".git", Name::File("config"), "**/.git/config", Depth::Any),
    (
        ".git",
        Name::File("config.worktree"),
        "**/.git/config.worktree",
        Depth::Any,
    ),
    (
        ".git",
        Name::Tree("modules"),
        "**/.git/modules/",
        Depth::Any,
    ),
    (
        ".git",
        Name::Tree("worktrees"),
        "**/.git/worktrees/",
        Depth::Any,
    ),
    (
        ".git",
        Name::File("commondir"),
        "**/.git/commondir",
        Depth::Any,
    ),
];

/// The protected files and trees named directly in the workspace root (`subagents.toml`,
/// `.vscode`...; not `.claude` and `.git`, which hold protected names): the ones the namespace
/// sandbox reserves while they are missing.
pub(crate) fn root_names() -> impl Iterator<Item = &'static str> {
    RULES.iter().filter_map(|(dir, name, _, _)| match name {
        Name::File(n) | Name::Tree(n) if dir.is_empty() => Some(*n),
        _ => None,
    })
}

/// The directories (relative to the root) that hold protected names of the root.
const HOLDERS: &[&str] = &["", ".claude", ".git"];

fn name_matches(name: &OsStr, rule: Name, is_dir: bool) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    match rule {
        Name::File(n) | Name::Tree(n) => name.eq_ignore_ascii_case(n),
        Name::Settings => {
            let lower = name.to_ascii_lowercase();
            lower.starts_with("settings") && lower.ends_with(".json")
        }
        Name::GitFile => !is_dir && name.eq_ignore_ascii_case(".git"),
    }
}

/// True when `path` starts with `prefix`, comparing components without regard to ASCII case.
fn starts_with_ci(path: &Path, prefix: &Path) -> bool {
    let mut p = path.components();
    for want in prefix.components() {
        match p.next() {
            Some(got) if eq_ci(got.as_os_str(), want.as_os_str()) => {}
            _ => return false,
        }
    }
    true
}

fn eq_ci(a: &OsStr, b: &OsStr) -> bool {
    a.as_encoded_bytes()
        .eq_ignore_ascii_case(b.as_encoded_bytes())
}

/// The protected locations of one workspace, resolved on the file system when made (so a
/// symlinked `.claude` is protected where it really is). Cheap to make: a few `canonicalize`
/// calls.
#[derive(Debug, Clone)]
pub struct ProtectedPaths {
    root: PathBuf,
    /// Each directory holding protected names, as (relative name, real location).
    holders: Vec<(&'static str, PathBuf)>,
    /// The real locations of the protected trees and files that exist through symlinks, with
    /// the entry of [`PROTECTED_PATHS`] they stand for.
    resolved: Vec<(PathBuf, &'static str)>,
    /// Nested repositories (directories beneath the root holding a `.git`), when a scan of the
    /// workspace found them: they hold protected names too.
    nested: Vec<PathBuf>,
}

impl ProtectedPaths {
    /// The protected locations of the workspace at `root` (a canonical directory).
    pub fn of(root: &Path) -> Self {
        let holders: Vec<(&'static str, PathBuf)> = HOLDERS
            .iter()
            .map(|rel| {
                let lexical = if rel.is_empty() {
                    root.to_path_buf()
                } else {
                    root.join(rel)
                };
                (*rel, real_prefix(&lexical))
            })
            .collect();
        let mut resolved = Vec::new();
        for (dir, name, shown, _) in RULES {
            let (Name::File(n) | Name::Tree(n)) = name else {
                continue;
            };
            let lexical = root.join(dir).join(n);
            if std::fs::symlink_metadata(&lexical).is_ok_and(|m| m.file_type().is_symlink()) {
                resolved.push((real_prefix(&lexical), *shown));
            }
        }
        Self {
            root: root.to_path_buf(),
            holders,
            resolved,
            nested: Vec::new(),
        }
    }

    /// The same, knowing the nested repositories a scan of the workspace found (their
    /// directories, real paths beneath the root).
    pub(crate) fn with_nested(mut self, nested: Vec<PathBuf>) -> Self {
        self.nested = nested;
        self
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The entry of [`PROTECTED_PATHS`] that covers `path` (absolute, with `..` applied; best
    /// with symlinks resolved, as [`Workspace::resolve_blocking`](crate::Workspace) returns
    /// it), or `None`.
    pub fn matches(&self, path: &Path) -> Option<&'static str> {
        let is_dir = path.is_dir();
        // Lexically, relative to the root.
        if let Ok(rel) = path.strip_prefix(&self.root)
            && let Some(hit) = match_relative(rel, is_dir)
        {
            return Some(hit);
        }
        // Where the holders really are.
        for (rel_dir, real_dir) in &self.holders {
            let Ok(rest) = strip_prefix_ci(path, real_dir) else {
                continue;
            };
            let parts: Vec<&OsStr> = rest.components().map(|c| c.as_os_str()).collect();
            if parts.is_empty() {
                continue;
            }
            for (dir, name, shown, _) in RULES {
                if dir == rel_dir && rule_hits(&parts, *name, is_dir) {
                    return Some(shown);
                }
            }
        }
        self.resolved
            .iter()
            .find(|(p, _)| starts_with_ci(path, p))
            .map(|(_, shown)| *shown)
    }

    /// True when `dir` (a real path) holds protected names or is an ancestor of a directory
    /// that does (such a directory may not be granted to `Bash` as a whole).
    pub(crate) fn holds_protected(&self, dir: &Path) -> bool {
        self.holders.iter().any(|(_, h)| starts_with_ci(h, dir))
            || self.resolved.iter().any(|(p, _)| starts_with_ci(p, dir))
            || self
                .nested
                .iter()
                .any(|n| starts_with_ci(n, dir) || starts_with_ci(&n.join(".git"), dir))
    }
}

/// `path` without `prefix` (compared without regard to ASCII case).
fn strip_prefix_ci<'a>(path: &'a Path, prefix: &Path) -> Result<&'a Path, ()> {
    if !starts_with_ci(path, prefix) {
        return Err(());
    }
    let mut it = path.components();
    for _ in prefix.components() {
        it.next();
    }
    Ok(it.as_path())
}

/// True when `parts` (relative to the directory holding the name) is the protected `name` or,
/// for a tree, lies beneath it.
fn rule_hits(parts: &[&OsStr], name: Name, is_dir: bool) -> bool {
    let Some(first) = parts.first() else {
        return false;
    };
    match name {
        Name::Tree(_) => name_matches(first, name, is_dir),
        _ => parts.len() == 1 && name_matches(first, name, is_dir),
    }
}

/// The entry of [`PROTECTED_PATHS`] covering `rel` (relative to the root, normalized).
fn match_relative(rel: &Path, is_dir: bool) -> Option<&'static str> {
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for (dir, name, shown, depth) in RULES {
        // Where the holding directory may start: the root, or any directory for `**/` rules.
        let starts = match depth {
            Depth::Root => 0..1,
            Depth::Any => 0..parts.len(),
        };
        for start in starts {
            let from = &parts[start.min(parts.len())..];
            let rest: &[&OsStr] = if dir.is_empty() {
                from
            } else {
                match from.split_first() {
                    Some((first, rest)) if eq_ci(first, OsStr::new(dir)) => rest,
                    _ => continue,
                }
            };
            if rule_hits(rest, *name, is_dir) {
                return Some(shown);
            }
        }
    }
    None
}

/// The mark of a person's approval to write one protected file: `Write` and `Edit` change a
/// [protected path](PROTECTED_PATHS) only when the call's context carries one for that very
/// file (`TaskContext::with_extension`). The permission guard of `subagent-claude` adds it to a
/// call's context after the approver said yes to that call; a host that wires the tools
/// itself can add it after asking in its own way. A model cannot add it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovedProtectedWrite {
    path: PathBuf,
}

impl ApprovedProtectedWrite {
    /// Approval to write `path` (as [`ProtectedTarget::path`] names it: canonical).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The approved file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A protected file a tool call would change.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProtectedTarget {
    /// The file, canonical (symlinks and `..` resolved).
    pub path: PathBuf,
    /// The entry of [`PROTECTED_PATHS`] covering it.
    pub entry: &'static str,
    /// The path relative to the workspace root, for messages.
    pub shown: String,
}

/// The protected file a call of a file-changing tool would write: the input's `file_path`
/// (`Write`, `Edit`, `MultiEdit`), `notebook_path` (`NotebookEdit`) or `path`, resolved in
/// `workspace`. `None` when it names no protected path (or cannot be resolved: the tool then
/// refuses it itself). Blocking (a few file-system calls).
pub fn protected_write_target(
    workspace: &Workspace,
    input: &serde_json::Value,
) -> Option<ProtectedTarget> {
    let given = ["file_path", "notebook_path", "path"]
        .iter()
        .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str))?;
    let path = workspace
        .resolve_blocking("protected-path check", given)
        .ok()?;
    protected_target(workspace, &path)
}

/// [`ProtectedTarget`] of a resolved path, when it is protected. Blocking.
pub(crate) fn protected_target(workspace: &Workspace, path: &Path) -> Option<ProtectedTarget> {
    let entry = ProtectedPaths::of(workspace.root()).matches(path)?;
    Some(ProtectedTarget {
        path: path.to_path_buf(),
        entry,
        shown: workspace.display_path(path),
    })
}

/// Why a protected file was not changed: what the model reads.
pub(crate) fn refusal(tool: &str, target: &ProtectedTarget) -> ToolError {
    ToolError::denied(
        tool,
        format!(
            "`{}` is one of the project's protected control files (`{}`): it can lift the \
             sandbox, permissions or run commands for later runs, so only a person may change \
             it, approving each write, and this call was not approved. Do not retry it with \
             another tool; tell the user what change you would make and why.",
            target.shown, target.entry
        ),
    )
}

/// Refuses a write of `path` when it is protected and `approved` does not name it. Blocking.
pub(crate) fn check_write(
    workspace: &Workspace,
    tool: &str,
    path: &Path,
    approved: Option<&Path>,
) -> Result<(), ToolError> {
    match protected_target(workspace, path) {
        Some(t) if approved != Some(t.path.as_path()) => Err(refusal(tool, &t)),
        _ => Ok(()),
    }
}

/// Where an open file really is (Linux: `/proc/self/fd`), to catch a path swapped for a
/// symlink between the check and the open. `None` elsewhere.
pub(crate) fn handle_path(file: &std::fs::File) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}

/// What confined `Bash` may write in a workspace: directory trees it gets every right in, and
/// files it may write (but not remove or rename) in the directories that hold protected names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WorkspaceGrants {
    /// Directories: every right beneath them.
    pub trees: Vec<PathBuf>,
    /// Files: write and truncate only.
    pub files: Vec<PathBuf>,
    /// More entries than [`MAX_SANDBOX_ENTRIES`]: nothing is granted in the workspace.
    pub capped: bool,
}

/// The most workspace entries enumerated to give confined `Bash` write access around the
/// protected paths (the entries of the root, `.claude` and `.git` together). Beyond it the
/// workspace is read-only to `Bash` (its output says so) rather than partly writable.
pub const MAX_SANDBOX_ENTRIES: usize = 4096;

/// The grants for a workspace at `root`: everything except the protected paths and the right
/// to create or remove entries directly in the directories holding them. Blocking.
pub(crate) fn workspace_grants(protected: &ProtectedPaths, cap: usize) -> WorkspaceGrants {
    let root = protected.root().to_path_buf();
    let mut out = WorkspaceGrants::default();
    let mut seen = 0usize;
    let mut visited: HashSet<PathBuf> = HashSet::new();
    let mut queue = vec![root.clone()];
    while let Some(dir) = queue.pop() {
        if !visited.insert(dir.clone()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > cap {
                return WorkspaceGrants {
                    capped: true,
                    ..WorkspaceGrants::default()
                };
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let target = if meta.file_type().is_symlink() {
                match std::fs::canonicalize(&path) {
                    // A symlink counts only when it stays inside the workspace.
                    Ok(t) if t.starts_with(&root) => t,
                    _ => continue,
                }
            } else {
                path.clone()
            };
            if protected.matches(&path).is_some() || protected.matches(&target).is_some() {
                continue;
            }
            let is_dir = std::fs::metadata(&target).is_ok_and(|m| m.is_dir());
            if is_dir {
                if protected.holds_protected(&target) {
                    queue.push(target);
                } else {
                    out.trees.push(target);
                }
            } else {
                out.files.push(target);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    fn hit(ws: &Workspace, given: &str) -> Option<&'static str> {
        let path = ws.resolve_blocking("Write", given).unwrap();
        ProtectedPaths::of(ws.root()).matches(&path)
    }

    #[test]
    fn the_listed_paths_are_protected_and_their_neighbours_are_not() {
        let (_d, ws) = ws();
        for (given, entry) in [
            ("subagents.toml", "subagents.toml"),
            (".mcp.json", ".mcp.json"),
            (".claude/settings.json", ".claude/settings*.json"),
            (".claude/settings.local.json", ".claude/settings*.json"),
            (".claude/settings-extra.json", ".claude/settings*.json"),
            (".claude/agents/evil.md", ".claude/agents/"),
            (".claude/agents", ".claude/agents/"),
            (".claude/skills/x/SKILL.md", ".claude/skills/"),
            (".claude/commands/deploy.md", ".claude/commands/"),
            (".vscode/settings.json", ".vscode/"),
            (".vscode", ".vscode/"),
            (".idea/workspace.xml", ".idea/"),
            (".gitmodules", "**/.gitmodules"),
            (".git/hooks/pre-commit", "**/.git/hooks/"),
            (".git/config", "**/.git/config"),
            (".git/modules/sub/hooks/post-checkout", "**/.git/modules/"),
            (".git", "**/.git"),
            // Nested repositories, at any depth.
            ("vendor/lib/.git/config", "**/.git/config"),
            ("a/b/c/.git/hooks/pre-push", "**/.git/hooks/"),
            ("vendor/lib/.gitmodules", "**/.gitmodules"),
            ("vendor/lib/.git/config.worktree", "**/.git/config.worktree"),
            (".git/commondir", "**/.git/commondir"),
            (".git/worktrees/wt/config.worktree", "**/.git/worktrees/"),
            ("sub/.git", "**/.git"),
        ] {
            assert_eq!(hit(&ws, given), Some(entry), "{given}");
        }
        for given in [
            "src/subagents.toml",
            "docs/.claude/settings.json",
            ".claude/notes.md",
            ".claude/agent-memory/x/MEMORY.md",
            ".git/index",
            ".git/objects/ab/cd",
            "vendor/lib/.git/index",
            "src/.vscode/settings.json",
            "src/.claude/commands/x.md",
            "settings.json",
            "README.md",
        ] {
            assert_eq!(hit(&ws, given), None, "{given}");
        }
    }

    #[test]
    fn dots_case_and_trailing_slashes_do_not_hide_a_protected_path() {
        let (_d, ws) = ws();
        for given in [
            "./subagents.toml",
            "src/../subagents.toml",
            "SUBAGENTS.TOML",
            ".Claude/Settings.JSON",
            ".claude//agents/",
            ".claude/agents/../agents/x.md",
            ".GIT/Hooks/pre-push",
            "subagents.toml/",
        ] {
            assert!(hit(&ws, given).is_some(), "{given}");
        }
        let abs = ws.root().join("x/../.mcp.json");
        assert_eq!(hit(&ws, abs.to_str().unwrap()), Some(".mcp.json"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_to_the_real_file() {
        let (d, ws) = ws();
        let root = d.path();
        std::fs::write(root.join("subagents.toml"), "").unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::os::unix::fs::symlink("../subagents.toml", root.join("docs/x")).unwrap();
        assert_eq!(hit(&ws, "docs/x"), Some("subagents.toml"));
        // A symlinked directory leading into .git/hooks.
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink("../.git/hooks", root.join("docs/h")).unwrap();
        assert_eq!(hit(&ws, "docs/h/pre-commit"), Some("**/.git/hooks/"));
        // A symlinked .claude is protected where it really is.
        std::fs::create_dir_all(root.join("cfg/claude")).unwrap();
        std::os::unix::fs::symlink("cfg/claude", root.join(".claude")).unwrap();
        assert_eq!(
            hit(&ws, "cfg/claude/settings.json"),
            Some(".claude/settings*.json")
        );
        assert_eq!(hit(&ws, "cfg/claude/agents/a.md"), Some(".claude/agents/"));
        assert_eq!(hit(&ws, "cfg/other.md"), None);
    }

    #[cfg(unix)]
    #[test]
    fn grants_leave_out_the_protected_paths_and_their_holders() {
        let (d, ws) = ws();
        let root = ws.root().to_path_buf();
        // Each entry (a directory ends in `/`; parents first) and whether the grants hold it.
        let entries = [
            ("src/", true),
            (".claude/agents/", false),
            (".claude/memory/", true),
            (".git/hooks/", false),
            (".git/objects/", true),
            ("README.md", true),
            ("subagents.toml", false),
            (".claude/settings.json", false),
            (".claude/notes.md", true),
            (".git/config", false),
            (".git/index", true),
        ];
        for (entry, _) in entries {
            match entry.strip_suffix('/') {
                Some(dir) => std::fs::create_dir_all(root.join(dir)).unwrap(),
                None => std::fs::write(root.join(entry), "").unwrap(),
            }
        }
        std::os::unix::fs::symlink("/etc", d.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(".git", d.path().join("g")).unwrap();
        let g = workspace_grants(&ProtectedPaths::of(&root), 100);
        // The granted entries of `kind` (trees or files), relative to the root and sorted.
        let granted = |kind: &[PathBuf]| {
            let mut rel: Vec<PathBuf> = kind
                .iter()
                .map(|p| p.strip_prefix(&root).unwrap().to_path_buf())
                .collect();
            rel.sort();
            rel
        };
        let expected = |dirs: bool| {
            let mut want: Vec<_> = entries
                .iter()
                .filter(|(e, granted)| *granted && e.ends_with('/') == dirs)
                .map(|(e, _)| PathBuf::from(e.trim_end_matches('/')))
                .collect();
            want.sort();
            want
        };
        assert_eq!(granted(&g.trees), expected(true), "{g:?}");
        assert_eq!(granted(&g.files), expected(false), "{g:?}");
        assert!(!g.capped);
        let capped = workspace_grants(&ProtectedPaths::of(&root), 3);
        assert!(capped.capped && capped.trees.is_empty() && capped.files.is_empty());
    }
}
