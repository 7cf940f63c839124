//! Frontmatter splitting and YAML reading, strict first and lenient as a fallback.
//!
//! The splitter is hand-written (BOM, CRLF and blank lines before the opening `---` are
//! tolerated); the YAML is parsed with `yaml-rust2`, the parser `gray_matter` uses internally,
//! and its events are built straight into [`serde_json::Value`] here rather than through
//! `YamlLoader`, for two reasons:
//!
//! - **Bounds.** An alias is a full copy of its anchor, so a few hundred bytes of nested
//!   anchors (`b: &b [*a,*a,...]`, `c: &c [*b,*b,...]`, ...) expand to billions of values.
//!   Every value built, every alias copy and the copy kept for each anchor is charged to a
//!   per-document [`Budget`] checked against [`MAX_YAML_NODES`] and [`MAX_YAML_SCALAR_BYTES`],
//!   and nesting (aliases included) against [`MAX_YAML_DEPTH`]; the first limit reached stops
//!   the reading with a [`LimitHit`]. The lenient reading shares one budget across its entries.
//! - **No recursion.** `YamlLoader` and `Parser::load` recurse once per nesting level, so a
//!   deeply nested flow (`[[[[...]]]]`) overflows the stack; this builder keeps its own stack
//!   and pulls events one at a time.
//!
//! The typing of scalars and keys follows `YamlLoader` exactly (tests compare the two).

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Most values one agent or skill file's YAML frontmatter may build: every scalar, list and map,
/// counting each copy an alias makes and the copy kept for each anchor. Real frontmatter builds
/// a few dozen; an alias expansion bomb ("billion laughs") is refused when it reaches this.
pub const MAX_YAML_NODES: usize = 100_000;

/// Most bytes of scalar text one file's YAML frontmatter may build, counting alias copies (the
/// text itself is at most [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES); escapes can grow it by half).
pub const MAX_YAML_SCALAR_BYTES: usize = 4 * 1024 * 1024;

/// Deepest nesting of lists and maps in a file's YAML frontmatter, aliases included (the
/// top-level mapping is level 1).
pub const MAX_YAML_DEPTH: usize = 64;

/// A document split into its frontmatter and body.
#[derive(Debug)]
pub(crate) struct Split<'a> {
    /// The frontmatter text between the delimiters (no delimiters).
    pub front: &'a str,
    /// 1-based line number, in the file, of the opening `---`.
    pub open_line: usize,
    /// The text after the closing delimiter.
    pub body: &'a str,
}

/// Why a document could not be split.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SplitError {
    /// The first non-blank line is not `---`.
    NoFrontmatter,
    /// The opening `---` (at this 1-based line) has no closing `---`.
    Unclosed(usize),
}

/// Strips a BOM and turns CRLF / lone CR line ends into LF (allocating only when needed).
pub(crate) fn normalize(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Splits normalized text (see [`normalize`]) into frontmatter and body.
pub(crate) fn split(text: &str) -> Result<Split<'_>, SplitError> {
    let mut pos = 0usize;
    let mut line_no = 0usize;
    // Skip blank lines before the opening delimiter.
    let open_line;
    loop {
        if pos >= text.len() {
            return Err(SplitError::NoFrontmatter);
        }
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = &text[pos..end];
        line_no += 1;
        let next = (end + 1).min(text.len());
        if line.trim().is_empty() {
            pos = next;
            continue;
        }
        if line.trim_end() == "---" {
            open_line = line_no;
            pos = next;
            break;
        }
        return Err(SplitError::NoFrontmatter);
    }
    let front_start = pos;
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = &text[pos..end];
        if line.trim_end() == "---" {
            let body_start = (end + 1).min(text.len());
            return Ok(Split {
                front: &text[front_start..pos],
                open_line,
                body: &text[body_start..],
            });
        }
        pos = end + 1;
    }
    Err(SplitError::Unclosed(open_line))
}

/// A strict YAML failure: a message and, when the parser gives one, a 1-based line number
/// relative to the frontmatter's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlFailure {
    pub message: String,
    pub line: Option<usize>,
}

/// A loading limit the YAML would go over ([`MAX_YAML_NODES`], [`MAX_YAML_SCALAR_BYTES`],
/// [`MAX_YAML_DEPTH`]): the document is refused, never read leniently instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LimitHit {
    /// The constant's name, e.g. `MAX_YAML_NODES`.
    pub limit: &'static str,
    /// Its value.
    pub max: usize,
    /// 1-based line, relative to the frontmatter's first line, where the limit was reached.
    pub line: Option<usize>,
    /// What would have gone over it.
    pub message: String,
}

impl LimitHit {
    /// The limit `limit` of value `max` reached at `line` (1-based; 0 reads as 1).
    pub(crate) fn at(limit: &'static str, max: usize, line: usize, message: String) -> Self {
        Self {
            limit,
            max,
            line: Some(line.max(1)),
            message,
        }
    }
}

/// Why alias expansion can reach the value and text limits, for their messages.
const ALIAS_COPIES: &str = "each alias is a full copy of its anchor: an alias expansion bomb?";

/// Why strict YAML reading failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StrictError {
    /// Not YAML (or not a mapping): the lenient reading may still make sense of it.
    Syntax(YamlFailure),
    /// Over a limit: the document is refused.
    Limit(LimitHit),
}

/// Frontmatter read as YAML: the fields and where some of them are.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    pub map: Map<String, Value>,
    /// 1-based line (relative to the frontmatter) of the top-level `name` key.
    pub name_line: Option<usize>,
}

/// What one reading of a document's YAML has built so far (the strict reading, or all the
/// entries of the lenient one together): values and scalar bytes, counting each copy an alias
/// makes and the copy kept for each anchor.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    nodes: usize,
    bytes: usize,
}

impl Budget {
    fn charge(&mut self, nodes: usize, bytes: usize, line: usize) -> Result<(), LimitHit> {
        self.nodes = self.nodes.saturating_add(nodes);
        self.bytes = self.bytes.saturating_add(bytes);
        if self.nodes > MAX_YAML_NODES {
            return Err(LimitHit::at(
                "MAX_YAML_NODES",
                MAX_YAML_NODES,
                line,
                format!("the YAML would build more than {MAX_YAML_NODES} values ({ALIAS_COPIES})"),
            ));
        }
        if self.bytes > MAX_YAML_SCALAR_BYTES {
            return Err(LimitHit::at(
                "MAX_YAML_SCALAR_BYTES",
                MAX_YAML_SCALAR_BYTES,
                line,
                format!(
                    "the YAML's text would grow past {MAX_YAML_SCALAR_BYTES} bytes ({ALIAS_COPIES})"
                ),
            ));
        }
        Ok(())
    }
}

mod build;
mod lenient;

pub(crate) use build::strict;
#[cfg(test)]
pub(crate) use build::strict_reference;
pub(crate) use lenient::{CLAUDE_CODE_KEYS, fold_key, lenient, unquote};

#[cfg(test)]
mod differential;
#[cfg(test)]
mod robustness;
#[cfg(test)]
mod tests;
