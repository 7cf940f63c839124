use std::path::PathBuf;

/// Everything that can go wrong loading Claude-style agents and skills.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClaudeError {
    /// The file or directory could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no YAML frontmatter (its first non-blank line is not `---`).
    #[error("{}: no YAML frontmatter (the first non-blank line must be `---`)", .path.display())]
    NoFrontmatter {
        /// The file.
        path: PathBuf,
    },
    /// The opening `---` has no closing `---`.
    #[error("{}:{line}: the frontmatter opened here is never closed with `---`", .path.display())]
    UnclosedFrontmatter {
        /// The file.
        path: PathBuf,
        /// 1-based line of the opening delimiter.
        line: usize,
    },
    /// The frontmatter is not YAML, and the lenient reading found no usable fields either.
    #[error("{}{}: invalid YAML frontmatter: {message}", .path.display(), line_suffix(*.line))]
    Yaml {
        /// The file.
        path: PathBuf,
        /// 1-based line in the file, when the parser gave one.
        line: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// A required field (`name` or `description`) is absent or empty.
    #[error("{}:{line}: the frontmatter has no `{field}` (required)", .path.display())]
    MissingField {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// 1-based line of the frontmatter's opening `---`.
        line: usize,
    },
    /// A field has a value of the wrong shape (e.g. `name` as a list).
    #[error("{}:{line}: field `{field}` {message}", .path.display())]
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
    #[error("{}: {size} bytes is larger than the {limit}-byte limit for agent files", .path.display())]
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
    #[error("{}: {message}", .path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}
