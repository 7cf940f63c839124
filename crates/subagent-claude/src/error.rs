use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::terminal::escape_for_terminal;

/// Everything that can go wrong loading Claude-style agents and skills.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClaudeError {
    /// The file or directory could not be read.
    #[error("cannot read {}: {source}", shown(.path))]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no YAML frontmatter (its first non-blank line is not `---`).
    #[error("{}: no YAML frontmatter (the first non-blank line must be `---`)", shown(.path))]
    NoFrontmatter {
        /// The file.
        path: PathBuf,
    },
    /// The opening `---` has no closing `---`.
    #[error("{}:{line}: the frontmatter opened here is never closed with `---`", shown(.path))]
    UnclosedFrontmatter {
        /// The file.
        path: PathBuf,
        /// 1-based line of the opening delimiter.
        line: usize,
    },
    /// The frontmatter is not YAML, and the lenient reading found no usable fields either.
    #[error("{}{}: invalid YAML frontmatter: {message}", shown(.path), line_suffix(*.line))]
    Yaml {
        /// The file.
        path: PathBuf,
        /// 1-based line in the file, when the parser gave one.
        line: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// The frontmatter's YAML would go over a loading limit: alias expansion
    /// (`MAX_YAML_NODES`, `MAX_YAML_SCALAR_BYTES`) or nesting (`MAX_YAML_DEPTH`). The file is
    /// refused as a whole; it is not read leniently instead.
    #[error("{}{}: frontmatter refused: {message} (limit `{limit}` = {max})", shown(.path), line_suffix(*.line))]
    YamlLimit {
        /// The file.
        path: PathBuf,
        /// 1-based line in the file where the limit was reached, when known.
        line: Option<usize>,
        /// The name of the limit's constant, e.g. `MAX_YAML_NODES`.
        limit: &'static str,
        /// The limit's value.
        max: u64,
        /// What would have gone over it.
        message: String,
    },
    /// The `name` cannot be used: it holds control characters (NUL, ESC, BEL, newline...) or
    /// bidirectional-text controls (U+202A–U+202E, U+2066–U+2069) that would corrupt a terminal
    /// or disguise the name. (Names with `/`, `\`, `.` or `..` load: they become paths only
    /// through [`agent_slug`](crate::agent_slug).) The name is shown escaped.
    #[error("{}:{line}: `name` value `{}` is refused: {reason}", shown(.path), escape_for_terminal(.name))]
    UnsafeName {
        /// The file.
        path: PathBuf,
        /// 1-based line of the `name` field (of the frontmatter's opening `---` when unknown).
        line: usize,
        /// The name as written (trimmed); may hold the characters that made it unsafe.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// A required field (`name` or `description`) is absent or empty.
    #[error("{}:{line}: the frontmatter has no `{field}` (required)", shown(.path))]
    MissingField {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// 1-based line of the frontmatter's opening `---`.
        line: usize,
    },
    /// A field has a value of the wrong shape (e.g. `name` as a list).
    #[error("{}:{line}: field `{field}` {message}", shown(.path))]
    InvalidField {
        /// The file.
        path: PathBuf,
        /// The field.
        field: String,
        /// 1-based line of the frontmatter's opening `---`.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file is larger than the loader accepts.
    #[error("{}: {size} bytes is larger than the {limit}-byte limit for agent files", shown(.path))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// No built-in (embedded) agent has that name.
    #[error("no embedded agent `{name}`; embedded agents: {}", .available.join(", "))]
    UnknownEmbedded {
        /// The name asked for.
        name: String,
        /// The embedded agents.
        available: Vec<String>,
    },
    /// A settings file (`.claude/settings.json`) cannot be used.
    #[error("{}: {message}", .path.display())]
    Settings {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A directory reference did not hold exactly one agent.
    #[error("{}: {message}", shown(.path))]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A path for a message: control and bidi characters in file names are shown escaped.
fn shown(path: &Path) -> Cow<'_, str> {
    match path.to_string_lossy() {
        Cow::Borrowed(s) => escape_for_terminal(s),
        Cow::Owned(s) => Cow::Owned(escape_for_terminal(&s).into_owned()),
    }
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}
