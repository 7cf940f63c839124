//! The `Glob` and `Grep` tools: gitignore-aware walks on the blocking pool.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::GlobBuilder;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use subagent_spi::{TaskContext, ToolEffect, ToolError, ToolOutput};

use crate::Workspace;
use crate::util::{StopFlag, blocking, cut_chars};
use crate::workspace::link_count;

/// At most this many paths are listed by `Glob` and by `Grep` in files mode.
pub const MAX_LISTED_FILES: usize = 1000;
/// At most this many lines are returned by `Grep` in content mode.
pub const MAX_CONTENT_LINES: usize = 2000;
/// Matched lines longer than this are cut in `Grep` content mode.
const MAX_MATCH_LINE_CHARS: usize = 500;

fn walker(base: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(base);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    b
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn newest_first(files: &mut [(PathBuf, SystemTime)]) {
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// Input of [`GlobTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// A glob relative to `path` (`*` does not cross `/`; `**` does).
    pub pattern: String,
    /// The directory (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
}

/// Lists files matching a glob pattern, newest first, skipping what `.gitignore` (and `.ignore`)
/// excludes and `.git` itself. Paths are shown relative to the workspace root.
#[derive(Debug, Clone)]
pub struct GlobTool {
    workspace: Workspace,
}

impl GlobTool {
    /// The tool's name.
    pub const NAME: &'static str = "Glob";

    /// A `Glob` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[subagent_spi::async_trait]
impl subagent_spi::TypedTool for GlobTool {
    type Input = GlobInput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        format!(
            "Finds files by glob pattern (e.g. `**/*.rs`), respecting .gitignore: paths relative to \
             the workspace root, newest first (at most {MAX_LISTED_FILES})."
        )
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    async fn run(&self, input: GlobInput, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let ws = self.workspace.clone();
        blocking(Self::NAME, move |stop| glob_blocking(&ws, &input, &stop)).await
    }
}

fn glob_blocking(
    ws: &Workspace,
    input: &GlobInput,
    stop: &StopFlag,
) -> Result<ToolOutput, ToolError> {
    const NAME: &str = GlobTool::NAME;
    let trimmed = input.pattern.trim();
    // An absolute pattern: its literal leading directories become the search base.
    let (base_arg, pattern) = match split_absolute_pattern(trimmed) {
        Some((dir, rest)) => (dir, rest),
        None => (
            input.path.clone().unwrap_or_else(|| ".".to_string()),
            trimmed.trim_start_matches("./").to_string(),
        ),
    };
    let base = ws.resolve_blocking(NAME, &base_arg)?;
    if !base.is_dir() {
        return Err(ToolError::invalid(
            NAME,
            format!("`{}` is not a directory", ws.display_path(&base)),
        ));
    }
    let pattern = pattern.as_str();
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::invalid(NAME, format!("bad glob `{}`: {e}", input.pattern)))?
        .compile_matcher();
    let mut found: Vec<(PathBuf, SystemTime)> = Vec::new();
    for entry in walker(&base).build() {
        if stop.is_set() {
            return Err(ToolError::Cancelled {
                tool: NAME.to_string(),
            });
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if matcher.is_match(rel) {
            let path = entry.path().to_path_buf();
            let t = mtime(&path);
            found.push((path, t));
        }
    }
    if found.is_empty() {
        return Ok(ToolOutput::text(format!(
            "No files match `{}` in `{}`",
            input.pattern,
            ws.display_path(&base)
        )));
    }
    newest_first(&mut found);
    let total = found.len();
    let mut out: String = found
        .iter()
        .take(MAX_LISTED_FILES)
        .map(|(p, _)| ws.display_path(p) + "\n")
        .collect();
    if total > MAX_LISTED_FILES {
        out.push_str(&format!(
            "(showing the {MAX_LISTED_FILES} newest of {total} matches; narrow the pattern)\n"
        ));
    }
    Ok(ToolOutput::text(out))
}

/// Splits an absolute glob like `/root/src/**/*.rs` into its literal directory (`/root/src`)
/// and the rest (`**/*.rs`); `None` for relative patterns.
fn split_absolute_pattern(pattern: &str) -> Option<(String, String)> {
    if !pattern.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = pattern.split('/').collect();
    let is_glob = |p: &str| p.contains(['*', '?', '[', '{']);
    let first_glob = parts
        .iter()
        .position(|p| is_glob(p))
        .unwrap_or(parts.len().saturating_sub(1));
    let dir = parts[..first_glob].join("/");
    let rest = parts[first_glob..].join("/");
    Some((if dir.is_empty() { "/".to_string() } else { dir }, rest))
}

/// What Grep returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GrepOutputMode {
    /// Paths of files with at least one match, newest first (the default).
    #[default]
    FilesWithMatches,
    /// Matching lines as `path:line:text`.
    Content,
    /// Matching line counts as `path:count`.
    Count,
}

/// Input of [`GrepTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// A regular expression (ripgrep syntax).
    pub pattern: String,
    /// A file or directory (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files matching this glob, e.g. `*.rs`.
    #[serde(default)]
    pub glob: Option<String>,
    /// What to return (default `files_with_matches`).
    #[serde(default)]
    pub output_mode: Option<GrepOutputMode>,
    /// Ignore case.
    #[serde(default, alias = "-i")]
    pub case_insensitive: bool,
    /// At most this many lines or entries.
    #[serde(default)]
    pub head_limit: Option<usize>,
    /// Lines around each match (content mode).
    #[serde(default, alias = "-C")]
    pub context: Option<usize>,
    /// Lines before each match.
    #[serde(default, alias = "-B")]
    pub before: Option<usize>,
    /// Lines after each match.
    #[serde(default, alias = "-A")]
    pub after: Option<usize>,
    /// Only files of this ripgrep type, e.g. `rust`, `py`.
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    /// Accepted for compatibility, not offered: content mode always shows line numbers (also
    /// accepted as `-n`).
    #[serde(default, alias = "-n")]
    #[schemars(skip)]
    pub line_numbers: Option<bool>,
}

/// Context lines are capped at this many on each side.
const MAX_CONTEXT_LINES: usize = 20;

/// Collects content-mode lines ripgrep style: `path:line:text` for matches, `path-line-text`
/// for context, `--` between separate groups.
struct ContentSink<'a> {
    shown: &'a str,
    lines: &'a mut Vec<String>,
    limit: usize,
    truncated: &'a mut bool,
    pending_break: bool,
}

impl ContentSink<'_> {
    fn push(&mut self, lnum: Option<u64>, bytes: &[u8], sep: char) -> bool {
        if self.pending_break {
            self.pending_break = false;
            if self.lines.len() < self.limit {
                self.lines.push("--".to_string());
            }
        }
        if self.lines.len() >= self.limit {
            *self.truncated = true;
            return false;
        }
        let text = String::from_utf8_lossy(bytes);
        let (text, cut) = cut_chars(text.trim_end_matches(['\n', '\r']), MAX_MATCH_LINE_CHARS);
        let marker = if cut > 0 { " [… line cut]" } else { "" };
        let lnum = lnum.unwrap_or(0);
        self.lines
            .push(format!("{}{sep}{lnum}{sep}{text}{marker}", self.shown));
        true
    }
}

impl Sink for ContentSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        Ok(self.push(m.line_number(), m.bytes(), ':'))
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        Ok(self.push(c.line_number(), c.bytes(), '-'))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.pending_break = true;
        Ok(true)
    }
}

/// Searches file contents with a regular expression (ripgrep's engine), skipping what
/// `.gitignore` excludes, binary files, and files with more than one hard link (their other
/// names may be outside the workspace; the output says how many were skipped, and naming such a
/// file directly is refused). Paths are shown relative to the workspace root.
#[derive(Debug, Clone)]
pub struct GrepTool {
    workspace: Workspace,
}

impl GrepTool {
    /// The tool's name.
    pub const NAME: &'static str = "Grep";

    /// A `Grep` tool confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[subagent_spi::async_trait]
impl subagent_spi::TypedTool for GrepTool {
    type Input = GrepInput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Searches file contents with a regular expression (ripgrep syntax; .gitignore respected, \
         binary files skipped). `output_mode`: `files_with_matches` (default, newest first), \
         `content` (path:line:text) or `count`."
            .into()
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::ReadOnly
    }

    async fn run(&self, input: GrepInput, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let ws = self.workspace.clone();
        blocking(Self::NAME, move |stop| grep_blocking(&ws, &input, &stop)).await
    }
}

fn grep_blocking(
    ws: &Workspace,
    input: &GrepInput,
    stop: &StopFlag,
) -> Result<ToolOutput, ToolError> {
    const NAME: &str = GrepTool::NAME;
    let base = ws.resolve_blocking(NAME, input.path.as_deref().unwrap_or("."))?;
    if !base.exists() {
        return Err(ToolError::failed(
            NAME,
            format!("`{}` does not exist", ws.display_path(&base)),
        ));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive)
        .build(&input.pattern)
        .map_err(|e| ToolError::invalid(NAME, format!("bad regex `{}`: {e}", input.pattern)))?;
    let mode = input.output_mode.unwrap_or_default();
    let limit = match mode {
        GrepOutputMode::Content => MAX_CONTENT_LINES,
        _ => MAX_LISTED_FILES,
    }
    .min(input.head_limit.unwrap_or(usize::MAX).max(1));

    let mut walk = walker(&base);
    if let Some(glob) = input.glob.as_deref().filter(|g| !g.trim().is_empty()) {
        let root = if base.is_dir() {
            base.as_path()
        } else {
            ws.root()
        };
        let overrides = OverrideBuilder::new(root)
            .add(glob)
            .and_then(|b| b.build())
            .map_err(|e| ToolError::invalid(NAME, format!("bad glob `{glob}`: {e}")))?;
        walk.overrides(overrides);
    }
    let before = input
        .before
        .or(input.context)
        .unwrap_or(0)
        .min(MAX_CONTEXT_LINES);
    let after = input
        .after
        .or(input.context)
        .unwrap_or(0)
        .min(MAX_CONTEXT_LINES);
    let context = before.max(after);
    if let Some(file_type) = input.file_type.as_deref().filter(|t| !t.trim().is_empty()) {
        let mut types = ignore::types::TypesBuilder::new();
        types.add_defaults();
        types.select(file_type.trim());
        let types = types.build().map_err(|e| {
            ToolError::invalid(NAME, format!("unknown file type `{file_type}`: {e}"))
        })?;
        if !types
            .definitions()
            .iter()
            .any(|d| d.name() == file_type.trim())
        {
            return Err(ToolError::invalid(
                NAME,
                format!("unknown file type `{file_type}` (use ripgrep's names: rust, py, js, ...)"),
            ));
        }
        walk.types(types);
    }
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .before_context(if mode == GrepOutputMode::Content {
            before
        } else {
            0
        })
        .after_context(if mode == GrepOutputMode::Content {
            after
        } else {
            0
        })
        .build();
    let mut pending_break = false;

    let mut files: Vec<(PathBuf, SystemTime)> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut skipped_links = 0usize;
    for entry in walk.build() {
        if stop.is_set() {
            return Err(ToolError::Cancelled {
                tool: NAME.to_string(),
            });
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        // Open it here so the checks apply to the handle that is searched.
        let Ok(file) = std::fs::File::open(path) else {
            continue;
        };
        let Ok(meta) = file.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        if link_count(&meta) > 1 {
            if entry.depth() == 0 {
                // The file was named directly: refuse, explaining why.
                ws.check_links(NAME, input.path.as_deref().unwrap_or("."), &meta)?;
            }
            skipped_links += 1;
            continue;
        }
        let shown = ws.display_path(path);
        match mode {
            GrepOutputMode::FilesWithMatches => {
                let mut hit = false;
                let _ = searcher.search_file(
                    &matcher,
                    &file,
                    Lossy(|_, _| {
                        hit = true;
                        Ok(false)
                    }),
                );
                if hit {
                    files.push((path.to_path_buf(), mtime(path)));
                }
            }
            GrepOutputMode::Count => {
                let mut n: u64 = 0;
                let _ = searcher.search_file(
                    &matcher,
                    &file,
                    Lossy(|_, _| {
                        n += 1;
                        Ok(true)
                    }),
                );
                if n > 0 {
                    if lines.len() == limit {
                        truncated = true;
                        break;
                    }
                    lines.push(format!("{shown}:{n}"));
                }
            }
            GrepOutputMode::Content => {
                if context > 0 && !lines.is_empty() && lines.len() < limit {
                    pending_break = true;
                }
                let mut sink = ContentSink {
                    shown: &shown,
                    lines: &mut lines,
                    limit,
                    truncated: &mut truncated,
                    pending_break,
                };
                let _ = searcher.search_file(&matcher, &file, &mut sink);
                pending_break = sink.pending_break;
                if truncated {
                    break;
                }
            }
        }
    }

    let mut out = String::new();
    if mode == GrepOutputMode::FilesWithMatches {
        newest_first(&mut files);
        if files.len() > limit {
            truncated = true;
        }
        for (p, _) in files.iter().take(limit) {
            out.push_str(&ws.display_path(p));
            out.push('\n');
        }
    } else {
        for l in &lines {
            out.push_str(l);
            out.push('\n');
        }
    }
    let links_note = match skipped_links {
        0 => String::new(),
        n => format!(
            "(skipped {n} file{} with more than one hard link: the other names may be outside \
             the workspace)\n",
            if n == 1 { "" } else { "s" }
        ),
    };
    if out.is_empty() {
        return Ok(ToolOutput::text(format!(
            "No matches for `{}` in `{}`\n{links_note}",
            input.pattern,
            ws.display_path(&base)
        )));
    }
    if truncated {
        out.push_str(&format!(
            "(results stop at {limit}; narrow the search with `path`, `glob` or a tighter pattern)\n"
        ));
    }
    out.push_str(&links_note);
    Ok(ToolOutput::text(out))
}
