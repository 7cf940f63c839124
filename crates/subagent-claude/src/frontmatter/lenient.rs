//! The lenient reading, for frontmatter that is not valid YAML (unquoted colons in prose,
//! multi-line descriptions): top-level `key:` lines split it into entries, each read on its own
//! by the strict reading, the rest kept as text.

use serde_json::Value;

use super::{Budget, Fields, LimitHit, StrictError, strict};

/// The keys of a Claude Code agent file (compared after [`fold_key`]). The lenient reading
/// starts a new entry at each of them even inside a multi-line prose value, and the definition
/// checks misspelled keys against them.
pub(crate) const CLAUDE_CODE_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "permissionMode",
    "maxTurns",
    "skills",
    "mcpServers",
    "hooks",
    "memory",
    "background",
    "effort",
    "isolation",
    "color",
    "initialPrompt",
];

/// Keys other than [`CLAUDE_CODE_KEYS`] that also start a new entry in the lenient reading
/// (compared after [`fold_key`]): skill and plugin files' keys.
const OTHER_ENTRY_KEYS: &[&str] = &["allowedTools", "version", "license", "metadata"];

/// Whether a folded key always starts a new entry in the lenient reading.
fn starts_entry(folded: &str) -> bool {
    CLAUDE_CODE_KEYS
        .iter()
        .chain(OTHER_ENTRY_KEYS)
        .any(|k| fold_key(k) == folded)
}

/// Keys whose values are free prose that may run over many unindented lines.
const PROSE_KEYS: &[&str] = &["description", "initialprompt", "whentouse"];

/// Lower-cases a key and drops `-` and `_`, so `disallowedTools`, `disallowed-tools` and
/// `disallowed_tools` compare equal.
pub(crate) fn fold_key(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '-' && *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// If `line` is a top-level `key:` line, returns the key and the rest after the colon.
fn key_line(line: &str) -> Option<(&str, &str)> {
    let first = line.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    let colon = line.find(':')?;
    let key = &line[..colon];
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    let rest = &line[colon + 1..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    Some((key, rest))
}

struct Entry<'a> {
    key: &'a str,
    /// 1-based line of the key, relative to the frontmatter.
    line: usize,
    first: &'a str,
    rest: Vec<&'a str>,
    /// `<example>` and `</example>` tags seen so far (kept as lines are added, so deciding
    /// where an entry ends stays linear in the number of lines).
    opened: usize,
    closed: usize,
}

impl<'a> Entry<'a> {
    fn new(key: &'a str, line: usize, first: &'a str) -> Self {
        let mut e = Entry {
            key,
            line,
            first,
            rest: Vec::new(),
            opened: 0,
            closed: 0,
        };
        e.count_examples(first);
        e
    }

    fn count_examples(&mut self, text: &str) {
        if text.contains("example>") {
            self.opened += text.matches("<example>").count();
            self.closed += text.matches("</example>").count();
        }
    }

    fn push(&mut self, line: &'a str) {
        self.count_examples(line);
        self.rest.push(line);
    }

    fn open_examples(&self) -> bool {
        self.opened > self.closed
    }
}

/// Reads frontmatter that strict YAML rejected, line by line: every top-level `key:` line starts
/// an entry, other lines continue the current entry. Each entry is tried as YAML on its own;
/// one that still fails is kept as text (quotes stripped, indentation removed). All entries
/// share `budget`: going over a limit refuses the whole frontmatter.
pub(crate) fn lenient(front: &str, budget: &mut Budget) -> Result<Fields, LimitHit> {
    let mut entries: Vec<Entry<'_>> = Vec::new();
    for (index, line) in front.split('\n').enumerate() {
        if let Some((key, rest)) = key_line(line) {
            let folded = fold_key(key);
            let starts = match entries.last() {
                None => true,
                Some(cur) => {
                    let cur_folded = fold_key(cur.key);
                    if starts_entry(&folded) {
                        true
                    } else if PROSE_KEYS.contains(&cur_folded.as_str()) {
                        // Inside prose, `Context:` / `user:` lines belong to the text.
                        key.starts_with(|c: char| c.is_ascii_lowercase()) && !cur.open_examples()
                    } else {
                        true
                    }
                }
            };
            if starts {
                entries.push(Entry::new(key, index + 1, rest));
                continue;
            }
        }
        // Lines before the first key (comments, junk) are dropped.
        if let Some(cur) = entries.last_mut() {
            cur.push(line);
        }
    }
    let mut fields = Fields::default();
    for e in entries {
        let value = entry_value(&e, budget)?;
        if e.key == "name" {
            fields.name_line = Some(e.line);
        }
        fields.map.insert(e.key.to_string(), value);
    }
    Ok(fields)
}

fn entry_value(e: &Entry<'_>, budget: &mut Budget) -> Result<Value, LimitHit> {
    // First, the entry alone as YAML (handles lists, block scalars, quoted strings).
    let mut chunk = String::with_capacity(
        e.key.len() + e.first.len() + 2 + e.rest.iter().map(|l| l.len() + 1).sum::<usize>(),
    );
    chunk.push_str(e.key);
    chunk.push(':');
    chunk.push_str(e.first);
    for l in &e.rest {
        chunk.push('\n');
        chunk.push_str(l);
    }
    match strict(&chunk, budget) {
        Ok(mut fields) => {
            if fields.map.len() == 1
                && let Some(v) = fields.map.remove(e.key)
            {
                return Ok(v);
            }
        }
        Err(StrictError::Limit(mut hit)) => {
            // Lines relative to the frontmatter, not to the entry.
            hit.line = hit.line.map(|l| l + e.line - 1);
            return Err(hit);
        }
        Err(StrictError::Syntax(_)) => {}
    }
    // A list that YAML rejected: `- item` lines.
    let first = e.first.trim();
    let rest_nonblank: Vec<&str> = e
        .rest
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    if first.is_empty()
        && !rest_nonblank.is_empty()
        && rest_nonblank
            .iter()
            .all(|l| l.starts_with("- ") || *l == "-")
    {
        return Ok(Value::Array(
            rest_nonblank
                .iter()
                .map(|l| Value::String(unquote(l.trim_start_matches('-').trim()).to_string()))
                .collect(),
        ));
    }
    // Plain text: the first value and the continuation lines, de-indented.
    let first = match first {
        "|" | "|-" | "|+" | ">" | ">-" | ">+" => "",
        f => f,
    };
    let indent = e
        .rest
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut text = String::from(first);
    for l in &e.rest {
        text.push('\n');
        if l.len() >= indent {
            text.push_str(l.get(indent..).unwrap_or(l.trim_start()));
        }
    }
    let text = text.trim();
    if text.is_empty() {
        return Ok(Value::Null);
    }
    Ok(Value::String(unquote(text).to_string()))
}

/// Strips one pair of matching surrounding quotes.
pub(crate) fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}
