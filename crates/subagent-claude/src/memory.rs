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
    /// otherwise. `None` for `user` without a home directory. Colons in the name (plugin
    /// namespaces) become dashes, as Claude Code does.
    pub fn dir(self, agent: &str, project: &Path, home: Option<&Path>) -> Option<PathBuf> {
        let name = agent.replace(':', "-");
        Some(match self {
            MemoryScope::User => home?.join(".claude").join("agent-memory").join(name),
            MemoryScope::Project => project.join(".claude").join("agent-memory").join(name),
            MemoryScope::Local => project
                .join(".claude")
                .join("agent-memory-local")
                .join(name),
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

/// Reads at most [`MEMORY_MAX_LINES`] lines / [`MEMORY_MAX_BYTES`] bytes of `dir/MEMORY.md`.
/// A missing file is empty memory; a file that is not a regular file is an error.
pub(crate) async fn load(dir: &Path) -> Result<MemoryText, String> {
    let path = dir.join("MEMORY.md");
    let meta = match tokio::fs::metadata(&path).await {
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
    let file = tokio::fs::File::open(&path)
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
            Some(PathBuf::from("/p/.claude/agent-memory/plug-rev"))
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
        assert_eq!(load(dir.path()).await.unwrap(), MemoryText::default());
        let text: String = (1..=250).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("MEMORY.md"), text).unwrap();
        let m = load(dir.path()).await.unwrap();
        assert!(m.truncated);
        assert_eq!(m.text.lines().count(), MEMORY_MAX_LINES);
        assert!(m.text.ends_with("line 200"));
        std::fs::write(
            dir.path().join("MEMORY.md"),
            "x".repeat(MEMORY_MAX_BYTES * 2),
        )
        .unwrap();
        let m = load(dir.path()).await.unwrap();
        assert!(m.truncated && m.text.len() == MEMORY_MAX_BYTES);
        let section = prompt_section(MemoryScope::Project, dir.path(), &m);
        assert!(section.contains("the rest was not loaded"));
    }
}
