//! The workspace root every file tool is confined to.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use subagent_spi::ToolError;

/// Why a [`Workspace`] could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The root does not exist or cannot be resolved.
    #[error("workspace root `{path}` cannot be opened: {source}")]
    Io {
        /// The root given.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The root is not a directory.
    #[error("workspace root `{path}` is not a directory")]
    NotADirectory {
        /// The root given.
        path: PathBuf,
    },
}

/// A directory the file tools may not leave. Cheap to clone (shared by all tools of a set).
///
/// [`resolve`](Self::resolve) turns a path from a model (relative to the root, or absolute)
/// into a canonical path inside the root, and refuses with [`ToolError::Denied`] naming the path
/// and the root when it:
/// - climbs out with `..`,
/// - is absolute and outside the root,
/// - goes through a symlink that points outside the root (checked on the nearest existing
///   ancestor for paths that do not exist yet, so `Write` cannot create a file through an
///   outward symlinked directory), or is a dangling symlink.
///
/// The tools that open files (`Read`, `Write`, `Edit`, `Grep`) also refuse, on the opened
/// handle, regular files with more than one hard link: a hard link inside the root may be
/// another name of a file outside it (`Grep` skips such files in a directory and says how many
/// it skipped). They open regular files only (not FIFOs, sockets or devices).
///
/// The check and the later file operation are not atomic: a process that swaps a directory for a
/// symlink in between can still race it. The tools are a guard against a model's mistakes, not a
/// sandbox against hostile local processes.
///
/// A workspace may also allow a few **extra roots** ([`with_extra_root`](Self::with_extra_root)):
/// directories outside the root that the file tools may read and write too, with the same
/// checks (an agent's memory directory under `~/.claude/agent-memory/`, say). Relative paths
/// still resolve against the root, and `Bash` still runs in the root.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: Arc<PathBuf>,
    extra_roots: Arc<Vec<PathBuf>>,
}

impl Workspace {
    /// Opens `root` (which must be an existing directory); it is canonicalized once here.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let path = root.as_ref();
        let canonical = std::fs::canonicalize(path).map_err(|source| WorkspaceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if !canonical.is_dir() {
            return Err(WorkspaceError::NotADirectory {
                path: path.to_path_buf(),
            });
        }
        Ok(Self {
            root: Arc::new(canonical),
            extra_roots: Arc::new(Vec::new()),
        })
    }

    /// This workspace plus `dir` (an existing directory, canonicalized here) as an extra root
    /// the file tools may use. The root itself is unchanged.
    pub fn with_extra_root(&self, dir: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let extra = Self::new(dir)?;
        let mut roots = Vec::clone(&self.extra_roots);
        let dir = Arc::unwrap_or_clone(extra.root);
        if !roots.contains(&dir) && dir != *self.root {
            roots.push(dir);
        }
        Ok(Self {
            root: self.root.clone(),
            extra_roots: Arc::new(roots),
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The extra roots, canonical (see [`with_extra_root`](Self::with_extra_root)).
    pub fn extra_roots(&self) -> &[PathBuf] {
        &self.extra_roots
    }

    /// True when `path` (absolute and normalized) is inside the root or an extra root.
    fn inside(&self, path: &Path) -> bool {
        path.starts_with(self.root.as_path())
            || self.extra_roots.iter().any(|r| path.starts_with(r))
    }

    /// [`resolve_blocking`](Self::resolve_blocking) on the blocking thread pool.
    pub async fn resolve(&self, tool: &str, path: &str) -> Result<PathBuf, ToolError> {
        let this = self.clone();
        let tool_name = tool.to_string();
        let p = path.to_string();
        tokio::task::spawn_blocking(move || this.resolve_blocking(&tool_name, &p))
            .await
            .map_err(|e| ToolError::failed(tool, format!("path check for `{path}` failed: {e}")))?
    }

    /// Resolves `path` (relative to the root, or absolute) to a canonical path inside the root;
    /// the path itself need not exist. Does blocking file-system calls: use it from blocking
    /// code only.
    pub fn resolve_blocking(&self, tool: &str, path: &str) -> Result<PathBuf, ToolError> {
        if path.trim().is_empty() {
            return Err(ToolError::invalid(tool, "the path is empty"));
        }
        if path.contains('\0') {
            return Err(ToolError::invalid(tool, "the path contains a NUL byte"));
        }
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let normalized = normalize_path(&joined);
        if !self.inside(&normalized) {
            return Err(self.denied(tool, path, "it is outside the workspace"));
        }
        // Find the nearest existing ancestor (or the path itself) and resolve its symlinks.
        let mut existing = normalized.as_path();
        let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
        loop {
            match std::fs::symlink_metadata(existing) {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let (Some(parent), Some(name)) = (existing.parent(), existing.file_name())
                    else {
                        return Err(self.denied(tool, path, "no part of it exists"));
                    };
                    rest.push(name);
                    existing = parent;
                }
                Err(e) => {
                    return Err(ToolError::failed(
                        tool,
                        format!("cannot inspect `{}`: {e}", existing.display()),
                    ));
                }
            }
        }
        let canonical = std::fs::canonicalize(existing).map_err(|e| {
            self.denied(
                tool,
                path,
                &format!(
                    "`{}` is a symlink that cannot be resolved ({e})",
                    existing.display()
                ),
            )
        })?;
        if !self.inside(&canonical) {
            return Err(self.denied(
                tool,
                path,
                &format!(
                    "it resolves through a symlink to `{}`, outside the workspace",
                    canonical.display()
                ),
            ));
        }
        let mut out = canonical;
        for name in rest.into_iter().rev() {
            out.push(name);
        }
        Ok(out)
    }

    /// `path` relative to the root for display, or the path itself when it is not inside.
    pub fn display_path(&self, path: &Path) -> String {
        path.strip_prefix(self.root.as_path())
            .map(|p| {
                if p.as_os_str().is_empty() {
                    ".".to_string()
                } else {
                    p.display().to_string()
                }
            })
            .unwrap_or_else(|_| path.display().to_string())
    }

    /// Refuses an opened file with more than one hard link: its other names may be outside the
    /// workspace (a hard link to a file outside passes every path check, since the path itself
    /// is inside), and finding them would mean searching the whole file system. Call it on the
    /// metadata of the open handle (`File::metadata`), not of the path, so a link added between
    /// the path check and the open is still caught. Always passes on non-Unix systems.
    pub(crate) fn check_links(
        &self,
        tool: &str,
        path: &str,
        meta: &std::fs::Metadata,
    ) -> Result<(), ToolError> {
        let links = link_count(meta);
        if meta.is_file() && links > 1 {
            return Err(self.denied(
                tool,
                path,
                &format!(
                    "the file has {links} hard links, and the other names may be outside the \
                     workspace (they cannot be found without searching the whole file system, \
                     so file tools refuse files with more than one link; copy the file instead)"
                ),
            ));
        }
        Ok(())
    }

    fn denied(&self, tool: &str, path: &str, why: &str) -> ToolError {
        let extra = if self.extra_roots.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self
                .extra_roots
                .iter()
                .map(|r| format!("`{}`", r.display()))
                .collect();
            format!(" (and {})", list.join(", "))
        };
        ToolError::denied(
            tool,
            format!(
                "path `{path}` is not allowed: {why}; file tools are confined to the workspace root `{}`{extra}",
                self.root.display()
            ),
        )
    }
}

/// How many hard links (names) the file has; 1 where the platform does not say.
pub(crate) fn link_count(meta: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::nlink(meta)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        1
    }
}

/// The refusal for a path that exists but is not a regular file (a FIFO would block the tool
/// forever; a device or socket is not a file to read or edit).
pub(crate) fn not_regular(tool: &str, shown: &str) -> ToolError {
    ToolError::failed(
        tool,
        format!(
            "`{shown}` is not a regular file (a FIFO, socket or device); file tools open regular files only"
        ),
    )
}

/// `path` with `.` removed and `..` applied lexically (never above the filesystem root),
/// without touching the filesystem.
pub fn normalize_path(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_roots_are_allowed_and_nothing_else() {
        let root = tempfile::tempdir().unwrap();
        let extra = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let ws = Workspace::new(root.path()).unwrap();
        let outside = extra.path().join("MEMORY.md");
        let outside = outside.to_str().unwrap();
        assert!(ws.resolve_blocking("Write", outside).is_err());
        let ws = ws.with_extra_root(extra.path()).unwrap();
        assert_eq!(ws.extra_roots().len(), 1);
        assert!(ws.resolve_blocking("Write", outside).is_ok());
        assert!(ws.resolve_blocking("Write", "inside.txt").is_ok());
        let escape = format!("{}/../x", extra.path().display());
        assert!(ws.resolve_blocking("Write", &escape).is_err());
        let err = ws
            .resolve_blocking("Write", other.path().join("x").to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("and `"), "{err}");
    }

    #[test]
    fn normalize_applies_dots() {
        assert_eq!(
            normalize_path(Path::new("/a/./b/../c")),
            PathBuf::from("/a/c")
        );
        assert_eq!(normalize_path(Path::new("/../..")), PathBuf::from("/"));
    }
}
