//! Loading agent files and scanning directories of them.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::definition::{ClaudeAgentDefinition, parse_agent};
use crate::error::ClaudeError;

/// Largest agent or skill file accepted (1 MiB); real ones are a few kilobytes.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Deepest directory level [`scan_dir`] descends to.
pub const MAX_SCAN_DEPTH: usize = 16;

/// Most `*.md` files [`scan_dir`] looks at (the first in path order); past it, the walk stops and
/// one [`SkippedFile`] entry for the directory says so.
pub const MAX_SCAN_FILES: usize = 10_000;

/// Reads a regular file of at most [`MAX_FILE_BYTES`] as UTF-8 (blocking).
pub(crate) fn read_limited(path: &Path) -> Result<String, ClaudeError> {
    let io = |source| ClaudeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let not_regular = || {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket or device)",
        ))
    };
    // Opening a FIFO blocks until something writes to it: look before opening.
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(not_regular());
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let size = meta.len();
    if size > MAX_FILE_BYTES {
        return Err(ClaudeError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit: MAX_FILE_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text ({e})"),
        ))
    })
}

/// Loads one agent file (blocking I/O). A file without `name` or `description` is an error
/// naming the path and line.
pub fn load_agent_file_blocking(
    path: &Path,
) -> Result<(ClaudeAgentDefinition, Vec<String>), ClaudeError> {
    let text = read_limited(path)?;
    let parsed = parse_agent(path, &text)?;
    Ok((parsed.definition, parsed.warnings))
}

/// Loads one agent file on the blocking pool. Returns the definition and its warnings.
pub async fn load_agent_file(
    path: impl Into<PathBuf>,
) -> Result<(ClaudeAgentDefinition, Vec<String>), ClaudeError> {
    let path = path.into();
    let p2 = path.clone();
    tokio::task::spawn_blocking(move || load_agent_file_blocking(&p2))
        .await
        .map_err(|e| ClaudeError::Io {
            path,
            source: std::io::Error::other(e.to_string()),
        })?
}

/// An agent [`scan_dir`] loaded.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoadedAgent {
    /// The file.
    pub path: PathBuf,
    /// The definition.
    pub definition: Arc<ClaudeAgentDefinition>,
    /// Warnings for this file (lenient YAML, odd name, duplicate name, ignored values...).
    pub warnings: Vec<String>,
}

/// A `*.md` file [`scan_dir`] did not load.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkippedFile {
    /// The file.
    pub path: PathBuf,
    /// Why it was not loaded.
    pub reason: String,
    /// True for an agent file that is broken (it has frontmatter, or cannot be read), false
    /// for a file that is no agent at all (a README without frontmatter, a `SKILL.md`) and for
    /// the note that a directory held too many files.
    pub invalid: bool,
}

/// What [`scan_dir`] found, in path order.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ScanReport {
    /// Files that loaded.
    pub loaded: Vec<LoadedAgent>,
    /// Files that did not, with the reason.
    pub skipped: Vec<SkippedFile>,
}

impl ScanReport {
    /// Total warnings across loaded files.
    pub fn warning_count(&self) -> usize {
        self.loaded.iter().map(|a| a.warnings.len()).sum()
    }
}

/// Collects `*.md` files under `dir` (sorted; hidden directories and symlinked directories are
/// not entered), stopping once it holds more than [`MAX_SCAN_FILES`].
fn collect_md(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() > MAX_SCAN_FILES {
            return Ok(());
        }
        let path = entry.path();
        let Ok(ft) = entry.file_type() else { continue };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if ft.is_dir() {
            if !name.starts_with('.') && depth < MAX_SCAN_DEPTH {
                // Unreadable subdirectories are ignored rather than failing the scan.
                let _ = collect_md(&path, out, depth + 1);
            }
        } else if (ft.is_file() || (ft.is_symlink() && path.is_file()))
            && Path::new(name.as_ref())
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("md"))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// Scans `dir` recursively for agent files (blocking I/O).
///
/// Every `*.md` file is tried. Loaded: files with frontmatter holding `name` and `description`.
/// Skipped, with a reason: files without frontmatter (READMEs, notes), `SKILL.md` files
/// (skills, not agents), files missing `name` or `description`, unreadable or oversized files.
/// A missing directory is an error.
pub fn scan_dir_blocking(dir: &Path) -> Result<ScanReport, ClaudeError> {
    let mut files = Vec::new();
    collect_md(dir, &mut files, 0).map_err(|source| ClaudeError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut report = ScanReport::default();
    // Past the limit the walk stopped early: the rest of the tree is neither listed nor kept.
    let overflow = files.len() > MAX_SCAN_FILES;
    files.truncate(MAX_SCAN_FILES);
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for path in files {
        if path
            .file_name()
            .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"))
        {
            report.skipped.push(SkippedFile {
                path,
                reason: "an Agent Skill (SKILL.md), not an agent".into(),
                invalid: false,
            });
            continue;
        }
        let text = match read_limited(&path) {
            Ok(t) => t,
            Err(e) => {
                report.skipped.push(SkippedFile {
                    path,
                    reason: e.to_string(),
                    invalid: true,
                });
                continue;
            }
        };
        match parse_agent(&path, &text) {
            Ok(parsed) => {
                let mut warnings = parsed.warnings;
                let key = parsed.definition.name.to_lowercase();
                if let Some(first) = seen.get(&key) {
                    warnings.push(format!(
                        "agent name `{}` is also defined in {}",
                        parsed.definition.name,
                        crate::terminal::escape_for_terminal(&first.display().to_string())
                    ));
                } else {
                    seen.insert(key, path.clone());
                }
                report.loaded.push(LoadedAgent {
                    path,
                    definition: Arc::new(parsed.definition),
                    warnings,
                });
            }
            Err(e) => {
                let (reason, invalid) = match e {
                    ClaudeError::NoFrontmatter { .. } => (
                        "no YAML frontmatter: not an agent file (e.g. a README)".to_string(),
                        false,
                    ),
                    other => (other.to_string(), true),
                };
                report.skipped.push(SkippedFile {
                    path,
                    reason,
                    invalid,
                });
            }
        }
    }
    if overflow {
        report.skipped.push(SkippedFile {
            path: dir.to_path_buf(),
            reason: format!(
                "more than {MAX_SCAN_FILES} Markdown files under the directory; the first \
                 {MAX_SCAN_FILES} in path order were looked at, the rest were not"
            ),
            invalid: false,
        });
    }
    Ok(report)
}

/// Scans `dir` recursively for agent files on the blocking pool; see [`scan_dir_blocking`].
pub async fn scan_dir(dir: impl Into<PathBuf>) -> Result<ScanReport, ClaudeError> {
    let dir = dir.into();
    let d2 = dir.clone();
    tokio::task::spawn_blocking(move || scan_dir_blocking(&d2))
        .await
        .map_err(|e| ClaudeError::Io {
            path: dir,
            source: std::io::Error::other(e.to_string()),
        })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_loads_and_skips_with_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            ("README.md", "# Agents\nSome notes.\n"),
            ("a.md", "---\nname: a\ndescription: first\n---\nA\n"),
            (
                "sub/deeper/b.MD",
                "---\nname: b\ndescription: second\n---\nB\n",
            ),
            ("sub/noname.md", "---\ndescription: x\n---\n"),
            ("sub/dup.md", "---\nname: A\ndescription: y\n---\n"),
            ("notes.txt", "---\nname: t\ndescription: t\n---\n"),
            (".hidden/h.md", "---\nname: h\ndescription: h\n---\n"),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let r = scan_dir_blocking(root).unwrap();
        let names: Vec<_> = r
            .loaded
            .iter()
            .map(|a| a.definition.name.as_str())
            .collect();
        assert_eq!(names, vec!["a", "b", "A"]);
        assert!(
            r.loaded[2]
                .warnings
                .iter()
                .any(|w| w.contains("also defined"))
        );
        assert_eq!(r.skipped.len(), 2, "{:?}", r.skipped);
        assert!(r.skipped.iter().any(|s| s.reason.contains("README")));
        assert!(r.skipped.iter().any(|s| s.reason.contains("`name`")));
    }

    #[test]
    fn missing_dir_is_error_and_explicit_load_errors_name_path() {
        assert!(scan_dir_blocking(Path::new("/definitely/not/here")).is_err());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.md");
        std::fs::write(&p, "---\nname: x\n---\n").unwrap();
        let e = load_agent_file_blocking(&p).unwrap_err().to_string();
        assert!(e.contains("x.md:1") && e.contains("description"), "{e}");
    }
}
