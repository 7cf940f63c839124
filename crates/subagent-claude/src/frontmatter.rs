//! Frontmatter splitting and YAML reading, strict first and lenient as a fallback.
//!
//! The splitter is hand-written (BOM, CRLF and blank lines before the opening `---` are
//! tolerated); the YAML is read with `yaml-rust2`, the parser `gray_matter` uses internally, and
//! converted straight into [`serde_json::Value`] without intermediate copies.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

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

/// Reads frontmatter as strict YAML into a JSON object. An empty frontmatter is an empty map;
/// a document that is not a mapping is a failure.
pub(crate) fn strict(front: &str) -> Result<Map<String, Value>, YamlFailure> {
    if front.trim().is_empty() {
        return Ok(Map::new());
    }
    match YamlLoader::load_from_str(front) {
        Ok(docs) => match docs.into_iter().next() {
            None | Some(Yaml::Null) => Ok(Map::new()),
            Some(Yaml::Hash(h)) => Ok(hash_to_map(h)),
            Some(_) => Err(YamlFailure {
                message: "the frontmatter is not a mapping of `key: value` lines".into(),
                line: Some(1),
            }),
        },
        Err(e) => {
            let m = e.marker();
            Err(YamlFailure {
                message: e.info().to_string(),
                line: Some(m.line().max(1)),
            })
        }
    }
}

fn hash_to_map(h: yaml_rust2::yaml::Hash) -> Map<String, Value> {
    let mut map = Map::new();
    for (k, v) in h {
        let key = match k {
            Yaml::String(s) | Yaml::Real(s) => s,
            Yaml::Integer(i) => i.to_string(),
            Yaml::Boolean(b) => b.to_string(),
            Yaml::Null => "null".to_string(),
            _ => continue,
        };
        map.insert(key, yaml_to_json(v));
    }
    map
}

/// Converts a YAML node into JSON, moving strings rather than copying them.
pub(crate) fn yaml_to_json(y: Yaml) -> Value {
    match y {
        Yaml::String(s) => Value::String(s),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(s) => match s.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Value::Number(n),
            None => Value::String(s),
        },
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(a) => Value::Array(a.into_iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(hash_to_map(h)),
        _ => Value::Null,
    }
}

/// Keys that always start a new entry in the lenient reading, even inside a multi-line prose
/// value (compared after [`fold_key`]).
const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedtools",
    "allowedtools",
    "model",
    "permissionmode",
    "maxturns",
    "skills",
    "mcpservers",
    "hooks",
    "memory",
    "background",
    "effort",
    "isolation",
    "color",
    "initialprompt",
    "version",
    "license",
    "metadata",
];

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
    first: &'a str,
    rest: Vec<&'a str>,
}

impl Entry<'_> {
    fn open_examples(&self) -> bool {
        let count = |needle: &str| {
            self.rest
                .iter()
                .map(|l| l.matches(needle).count())
                .sum::<usize>()
                + self.first.matches(needle).count()
        };
        count("<example>") > count("</example>")
    }
}

/// Reads frontmatter that strict YAML rejected, line by line: every top-level `key:` line starts
/// an entry, other lines continue the current entry. Each entry is tried as YAML on its own;
/// one that still fails is kept as text (quotes stripped, indentation removed).
pub(crate) fn lenient(front: &str) -> Map<String, Value> {
    let mut entries: Vec<Entry<'_>> = Vec::new();
    for line in front.split('\n') {
        if let Some((key, rest)) = key_line(line) {
            let folded = fold_key(key);
            let starts = match entries.last() {
                None => true,
                Some(cur) => {
                    let cur_folded = fold_key(cur.key);
                    if KNOWN_KEYS.contains(&folded.as_str()) {
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
                entries.push(Entry {
                    key,
                    first: rest,
                    rest: Vec::new(),
                });
                continue;
            }
        }
        // Lines before the first key (comments, junk) are dropped.
        if let Some(cur) = entries.last_mut() {
            cur.rest.push(line);
        }
    }
    let mut map = Map::new();
    for e in entries {
        let value = entry_value(&e);
        map.insert(e.key.to_string(), value);
    }
    map
}

fn entry_value(e: &Entry<'_>) -> Value {
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
    if let Ok(mut map) = strict(&chunk)
        && map.len() == 1
        && let Some(v) = map.remove(e.key)
    {
        return v;
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
        return Value::Array(
            rest_nonblank
                .iter()
                .map(|l| Value::String(unquote(l.trim_start_matches('-').trim()).to_string()))
                .collect(),
        );
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
        return Value::Null;
    }
    Value::String(unquote(text).to_string())
}

/// Strips one pair of matching surrounding quotes.
fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_with_blank_lines_bom_and_crlf() {
        let raw = "\u{feff}\r\n\r\n---\r\nname: a\r\n---\r\nbody\r\n";
        let n = normalize(raw);
        let s = split(&n).unwrap();
        assert_eq!(s.front, "name: a\n");
        assert_eq!(s.body, "body\n");
        assert_eq!(s.open_line, 3);
    }

    #[test]
    fn no_frontmatter_and_unclosed() {
        assert_eq!(split("# Title\n").unwrap_err(), SplitError::NoFrontmatter);
        assert_eq!(split("").unwrap_err(), SplitError::NoFrontmatter);
        assert_eq!(
            split("\n---\nname: a\n").unwrap_err(),
            SplitError::Unclosed(2)
        );
    }

    #[test]
    fn closing_at_end_of_file_without_newline() {
        let s = split("---\nname: a\n---").unwrap();
        assert_eq!(s.front, "name: a\n");
        assert_eq!(s.body, "");
    }

    #[test]
    fn strict_reports_line() {
        let err = strict("name: a\ndescription: x: y\n").unwrap_err();
        assert_eq!(err.line, Some(2), "{err:?}");
    }

    #[test]
    fn strict_converts_types() {
        let m = strict("a: 1\nb: 2.5\nc: true\nd: [x, y]\ne:\n  f: g\n").unwrap();
        assert_eq!(
            Value::Object(m),
            serde_json::json!({"a":1,"b":2.5,"c":true,"d":["x","y"],"e":{"f":"g"}})
        );
    }

    #[test]
    fn lenient_reads_colons_and_examples() {
        let front = "name: x\ndescription: Use when: you want it.\n\n<example>\nContext: c\nuser: hi\nassistant: ok\n</example>\nmore text\ntools: Read, Grep\nmodel: sonnet\n";
        assert!(strict(front).is_err());
        let m = lenient(front);
        assert_eq!(m["name"], "x");
        let d = m["description"].as_str().unwrap();
        assert!(d.starts_with("Use when: you want it."), "{d}");
        assert!(d.contains("user: hi"));
        assert!(d.ends_with("more text"));
        assert_eq!(m["tools"], "Read, Grep");
        assert_eq!(m["model"], "sonnet");
    }

    #[test]
    fn lenient_keeps_yaml_lists_and_unknown_keys() {
        let front = "name: x\ndescription: a: b\ntools:\n  - Read\n  - Grep\ncustom: 3\n";
        let m = lenient(front);
        assert_eq!(m["tools"], serde_json::json!(["Read", "Grep"]));
        assert_eq!(m["custom"], 3);
        assert_eq!(m["description"], "a: b");
    }
}

#[cfg(test)]
mod robustness {
    use crate::parse_agent;
    use std::path::Path;

    #[test]
    fn odd_inputs_never_panic() {
        let deep = format!("---\nname: {}\n---\n", "[".repeat(200_000));
        let deep_map = format!("---\n{}\n---\n", "a:\n ".repeat(50_000));
        let cases: Vec<String> = vec![
            "".into(),
            "---".into(),
            "---\n---".into(),
            "\u{feff}".into(),
            "---\r\n".into(),
            "---\n: \n---\n".into(),
            "---\n- a\n- b\n---\n".into(),
            "---\nname: |\n---\n".into(),
            "---\nname: \"unterminated\ndescription: x\n---\n".into(),
            "---\n\tname: tab\n---\n".into(),
            "---\nnäme: ü: ö\ndescription: é\n---\n".into(),
            "---\nname: a\ndescription: b\nname: c\n---\n".into(),
            "---\n&a [*a]\n---\n".into(),
            "---\nname: *nope\ndescription: d\n---\n".into(),
            deep,
            deep_map,
        ];
        for c in &cases {
            let _ = parse_agent(Path::new("odd.md"), c);
        }
    }
}
