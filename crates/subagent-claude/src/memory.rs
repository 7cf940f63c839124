//! Persistent agent memory (`memory:` in the frontmatter), as Claude Code keeps it: a directory
//! per agent whose `MEMORY.md` opens the agent's system prompt on every run.
//!
//! | scope | directory |
//! |---|---|
//! | `user` | `~/.claude/agent-memory/<agent>/` |
//! | `project` | `<project>/.claude/agent-memory/<agent>/` |
//! | `local` | `<project>/.claude/agent-memory-local/<agent>/` |
//!
//! The first [`MEMORY_MAX_LINES`] lines (at most [`MEMORY_MAX_BYTES`]) of `MEMORY.md` join the
//! system prompt with instructions to keep it curated; `Read`, `Write` and `Edit` reach the
//! directory (the executor adds them, confined to it, when the agent's tools lack them).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio::io::AsyncReadExt;

/// Lines of `MEMORY.md` loaded into the system prompt.
pub const MEMORY_MAX_LINES: usize = 200;
/// Bytes of `MEMORY.md` loaded into the system prompt (whichever limit comes first).
pub const MEMORY_MAX_BYTES: usize = 25 * 1024;

/// Where an agent's memory lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryScope {
    /// `~/.claude/agent-memory/<agent>/`: across projects.
    User,
    /// `.claude/agent-memory/<agent>/` in the project: shared through version control.
    Project,
    /// `.claude/agent-memory-local/<agent>/` in the project: not meant for version control.
    Local,
}

impl MemoryScope {
    /// Parses a `memory` frontmatter value (`user`, `project`, `local`, ignoring case).
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "user" => MemoryScope::User,
            "project" => MemoryScope::Project,
            "local" => MemoryScope::Local,
            _ => return None,
        })
    }

    /// Reads the frontmatter value: `None` when absent or `false`-like; an error text when it is
    /// not one of the scopes.
    pub fn from_value(value: Option<&Value>) -> Result<Option<Self>, String> {
        match value {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() || s.trim() == "none" => Ok(None),
            Some(Value::String(s)) => Self::parse(s).map(Some).ok_or_else(|| {
                format!("`memory` must be `user`, `project` or `local`; ignored `{s}`")
            }),
            Some(other) => Err(format!(
                "`memory` must be `user`, `project` or `local`; ignored {other}"
            )),
        }
    }

    /// The scope's name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::User => "user",
            MemoryScope::Project => "project",
            MemoryScope::Local => "local",
        }
    }

    /// The memory directory of `agent` in this scope: under `home` for `user`, under `project`
    /// otherwise. `None` for `user` without a home directory. The name becomes one path segment
    /// through [`agent_slug`](crate::agent_slug) (`code-reviewer` stays `code-reviewer`;
    /// `LSP/Index Engineer` becomes `lsp-index-engineer-<hash>`).
    pub fn dir(self, agent: &str, project: &Path, home: Option<&Path>) -> Option<PathBuf> {
        Some(
            self.root(project, home)?
                .join(crate::slug::agent_slug(agent)),
        )
    }

    /// The directory holding every agent's memory directory of this scope.
    fn root(self, project: &Path, home: Option<&Path>) -> Option<PathBuf> {
        Some(match self {
            MemoryScope::User => home?.join(".claude").join("agent-memory"),
            MemoryScope::Project => project.join(".claude").join("agent-memory"),
            MemoryScope::Local => project.join(".claude").join("agent-memory-local"),
        })
    }

    /// What the memory directory and `MEMORY.md` must stay inside once symlinks are resolved:
    /// the project for `project` and `local` (a repository decides what its `.claude` holds),
    /// the user's `~/.claude/agent-memory` for `user`.
    fn bound(self, project: &Path, home: Option<&Path>) -> Option<(PathBuf, &'static str)> {
        Some(match self {
            MemoryScope::User => (
                self.root(project, home)?,
                "the user's agent-memory directory",
            ),
            MemoryScope::Project | MemoryScope::Local => (project.to_path_buf(), "the workspace"),
        })
    }
}

impl fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The start of a `MEMORY.md`, as loaded into a prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MemoryText {
    pub text: String,
    /// The file holds more than was loaded.
    pub truncated: bool,
}

/// Where an agent's memory is, once checked: the directory (canonical) and the `MEMORY.md` to
/// read (canonical; `None` when there is none or it was refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    pub dir: PathBuf,
    pub memory_md: Option<PathBuf>,
    /// Why `MEMORY.md` was refused, when it was.
    pub refused_md: Option<String>,
    /// Why the directory could not be created (a run then fails, as it cannot keep memory).
    pub create_failed: Option<String>,
}

/// `path` with its nearest existing ancestor's symlinks resolved (the rest appended as it is).
/// A dangling symlink on the way is an error.
fn resolve_existing(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        match std::fs::symlink_metadata(existing) {
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                rest.extend(existing.file_name());
                existing = existing.parent().ok_or(e)?;
            }
            Err(e) => return Err(e),
        }
    }
    let mut out = std::fs::canonicalize(existing)?;
    for part in rest.iter().rev() {
        out.push(part);
    }
    Ok(out)
}

/// Checks `scope`'s memory of `agent` stays inside its bound (the workspace for `project` and
/// `local`, `~/.claude/agent-memory` for `user`) once symlinks are resolved, creating the
/// directory when `create` is set (only after the check, so nothing is created outside).
/// Blocking. `Err` names the path that leaves the bound; a `MEMORY.md` that leaves it is
/// refused on its own ([`Location::refused_md`]): the directory stays usable.
pub(crate) fn locate(
    scope: MemoryScope,
    agent: &str,
    project: &Path,
    home: Option<&Path>,
    create: bool,
) -> Result<Location, String> {
    let (Some(dir), Some((bound, what))) =
        (scope.dir(agent, project, home), scope.bound(project, home))
    else {
        return Err(
            "`memory: user` needs a home directory (HOME); no memory for this agent".into(),
        );
    };
    let shown =
        |p: &Path| crate::terminal::escape_for_terminal(&p.display().to_string()).into_owned();
    let bound_real = resolve_existing(&bound)
        .map_err(|e| format!("memory: cannot resolve `{}`: {e}", shown(&bound)))?;
    let real = resolve_existing(&dir).map_err(|e| {
        format!(
            "memory: `{}` cannot be resolved ({e}); no memory for this agent",
            shown(&dir)
        )
    })?;
    if !real.starts_with(&bound_real) {
        return Err(format!(
            "memory: `{}` leads outside {what} (to `{}`); refused, no memory for this agent",
            shown(&dir),
            shown(&real)
        ));
    }
    let real = if create {
        if let Err(e) = std::fs::create_dir_all(&real) {
            return Ok(Location {
                dir: real,
                memory_md: None,
                refused_md: None,
                create_failed: Some(format!(
                    "cannot create the memory directory `{}`: {e}",
                    shown(&dir)
                )),
            });
        }
        // Checked again now that it exists (nothing may have been swapped in meanwhile).
        let again = std::fs::canonicalize(&dir)
            .map_err(|e| format!("memory: cannot resolve `{}`: {e}", shown(&dir)))?;
        if !again.starts_with(&bound_real) {
            return Err(format!(
                "memory: `{}` leads outside {what} (to `{}`); refused, no memory for this agent",
                shown(&dir),
                shown(&again)
            ));
        }
        again
    } else {
        real
    };
    let md = dir.join("MEMORY.md");
    let (memory_md, refused_md) = match std::fs::symlink_metadata(&md) {
        Err(_) => (None, None),
        Ok(_) => match std::fs::canonicalize(&md) {
            Ok(target) if target.starts_with(&bound_real) => (Some(target), None),
            Ok(target) => (
                None,
                Some(format!(
                    "memory: `{}` leads outside {what} (to `{}`); refused, it is not loaded",
                    shown(&md),
                    shown(&target)
                )),
            ),
            Err(e) => (
                None,
                Some(format!(
                    "memory: `{}` cannot be resolved ({e}); it is not loaded",
                    shown(&md)
                )),
            ),
        },
    };
    Ok(Location {
        dir: real,
        memory_md,
        refused_md,
        create_failed: None,
    })
}

/// What is wrong with where `scope`'s memory of `agent` would be, without creating anything:
/// the load warning of [`crate::agent_load_warnings`].
pub(crate) fn location_warning(
    scope: MemoryScope,
    agent: &str,
    project: &Path,
    home: Option<&Path>,
) -> Option<String> {
    match locate(scope, agent, project, home, false) {
        Ok(loc) => loc.refused_md,
        Err(e) => Some(e),
    }
}

/// Reads at most [`MEMORY_MAX_LINES`] lines / [`MEMORY_MAX_BYTES`] bytes of `path` (a
/// `MEMORY.md` that [`locate`] checked). A file that is not a regular file is an error.
pub(crate) async fn load(path: &Path) -> Result<MemoryText, String> {
    let meta = match tokio::fs::metadata(path).await {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(MemoryText::default()),
        Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
    };
    if !meta.is_file() {
        return Err(format!(
            "`{}` is not a regular file; memory not loaded",
            path.display()
        ));
    }
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MEMORY_MAX_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut truncated = bytes.len() > MEMORY_MAX_BYTES;
    bytes.truncate(MEMORY_MAX_BYTES);
    let text = String::from_utf8_lossy(&bytes);
    let mut out = String::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i == MEMORY_MAX_LINES {
            truncated = true;
            break;
        }
        out.push_str(line);
    }
    Ok(MemoryText {
        text: out.trim_end().to_string(),
        truncated,
    })
}

/// The system-prompt section for an agent's memory.
pub(crate) fn prompt_section(scope: MemoryScope, dir: &Path, memory: &MemoryText) -> String {
    let mut s = format!(
        "# Persistent agent memory\n\n\
         You have a memory directory that persists across your runs: `{}` ({} scope). Before \
         you start, consult what you recorded there; as you work, record what is worth \
         remembering next time (conventions, decisions, recurring problems and their fixes) \
         with the Read, Write and Edit tools.\n\n\
         - `MEMORY.md` in that directory opens this prompt on every run, but only its first \
         {MEMORY_MAX_LINES} lines are loaded: keep it a short index and put details in topic \
         files next to it (for example `patterns.md`), linked from it.\n\
         - Update or remove entries that turn out to be wrong instead of adding contradicting \
         ones.\n\n",
        dir.display(),
        scope
    );
    if memory.text.is_empty() {
        s.push_str("`MEMORY.md` is empty or does not exist yet.");
    } else {
        s.push_str("## MEMORY.md\n\n");
        s.push_str(&memory.text);
        if memory.truncated {
            s.push_str(&format!(
                "\n\n(`MEMORY.md` is longer than {MEMORY_MAX_LINES} lines or \
                 {MEMORY_MAX_BYTES} bytes; the rest was not loaded. Move details into topic \
                 files to keep it within the limit.)"
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_map_to_claude_code_directories() {
        let project = Path::new("/p");
        let home = Path::new("/h");
        assert_eq!(
            MemoryScope::User.dir("rev", project, Some(home)),
            Some(PathBuf::from("/h/.claude/agent-memory/rev"))
        );
        assert_eq!(
            MemoryScope::Project.dir("plug:rev", project, None),
            Some(PathBuf::from("/p/.claude/agent-memory").join(crate::agent_slug("plug:rev")))
        );
        assert_eq!(
            MemoryScope::Project.dir("../../x", project, None),
            Some(PathBuf::from("/p/.claude/agent-memory").join(crate::agent_slug("../../x")))
        );
        assert_eq!(
            MemoryScope::Local.dir("rev", project, None),
            Some(PathBuf::from("/p/.claude/agent-memory-local/rev"))
        );
        assert_eq!(MemoryScope::User.dir("rev", project, None), None);
        assert!(MemoryScope::from_value(Some(&Value::String("team".into()))).is_err());
        assert_eq!(
            MemoryScope::from_value(Some(&Value::String("Project".into()))),
            Ok(Some(MemoryScope::Project))
        );
    }

    #[tokio::test]
    async fn loads_the_first_200_lines() {
        let dir = tempfile::tempdir().unwrap();
        let md = dir.path().join("MEMORY.md");
        assert_eq!(load(&md).await.unwrap(), MemoryText::default());
        let text: String = (1..=250).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&md, text).unwrap();
        let m = load(&md).await.unwrap();
        assert!(m.truncated);
        assert_eq!(m.text.lines().count(), MEMORY_MAX_LINES);
        assert!(m.text.ends_with("line 200"));
        std::fs::write(
            dir.path().join("MEMORY.md"),
            "x".repeat(MEMORY_MAX_BYTES * 2),
        )
        .unwrap();
        let m = load(&md).await.unwrap();
        assert!(m.truncated && m.text.len() == MEMORY_MAX_BYTES);
        let section = prompt_section(MemoryScope::Project, dir.path(), &m);
        assert!(section.contains("the rest was not loaded"));
    }

    #[cfg(unix)]
    #[test]
    fn memory_that_leaves_its_bound_is_refused() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("p");
        let home = tmp.path().join("h");
        let outside = tmp.path().join("outside");
        for d in [&project, &home, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(outside.join("key"), "secret").unwrap();

        // A plain directory: created inside, no MEMORY.md yet.
        let loc = locate(MemoryScope::Project, "a", &project, None, true).unwrap();
        assert!(loc.dir.ends_with(".claude/agent-memory/a") && loc.dir.is_dir());
        assert_eq!(loc.memory_md, None);

        // MEMORY.md linked out of the workspace: refused alone, naming it.
        symlink(outside.join("key"), loc.dir.join("MEMORY.md")).unwrap();
        let loc = locate(MemoryScope::Project, "a", &project, None, true).unwrap();
        assert_eq!(loc.memory_md, None);
        let why = loc.refused_md.unwrap();
        assert!(
            why.contains("MEMORY.md") && why.contains("outside the workspace"),
            "{why}"
        );
        // A link to a file inside the workspace is fine.
        std::fs::write(project.join("notes.md"), "n").unwrap();
        std::fs::remove_file(loc.dir.join("MEMORY.md")).unwrap();
        symlink(project.join("notes.md"), loc.dir.join("MEMORY.md")).unwrap();
        let loc = locate(MemoryScope::Project, "a", &project, None, true).unwrap();
        assert!(loc.memory_md.unwrap().ends_with("notes.md"));

        // The scope's root linked out: refused before anything is created there.
        symlink(&outside, project.join(".claude/agent-memory-local")).unwrap();
        let e = locate(MemoryScope::Local, "b", &project, None, true).unwrap_err();
        assert!(
            e.contains("agent-memory-local") && e.contains("outside the workspace"),
            "{e}"
        );
        assert!(!outside.join("b").exists(), "created outside");
        assert_eq!(
            location_warning(MemoryScope::Local, "b", &project, None).as_deref(),
            Some(e.as_str())
        );

        // User scope: bound by ~/.claude/agent-memory.
        let root = home.join(".claude/agent-memory");
        std::fs::create_dir_all(&root).unwrap();
        symlink(&outside, root.join("c")).unwrap();
        let e = locate(MemoryScope::User, "c", &project, Some(&home), true).unwrap_err();
        assert!(e.contains("agent-memory directory"), "{e}");
        assert!(locate(MemoryScope::User, "d", &project, Some(&home), true).is_ok());
        // A dangling link is refused too.
        symlink(tmp.path().join("nowhere"), root.join("e")).unwrap();
        assert!(locate(MemoryScope::User, "e", &project, Some(&home), true).is_err());
    }
}
