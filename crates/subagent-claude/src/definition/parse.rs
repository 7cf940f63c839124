//! The parser: Markdown text (frontmatter and body) into a [`ClaudeAgentDefinition`], with the
//! file's line in every error.

use std::path::Path;

use serde_json::{Map, Value};
use subagent_spi::SubagentReference;

use super::fields::{description_warning, field_warnings};
use super::*;
use crate::KIND;
use crate::error::ClaudeError;
use crate::frontmatter::{self, Budget, SplitError, StrictError};
use crate::terminal::{escape_for_terminal, terminal_safe};

/// Frontmatter read from a document: the fields, the body, and how it was read.
pub(crate) struct Document<'a> {
    pub fields: Map<String, Value>,
    pub body: &'a str,
    pub open_line: usize,
    /// 1-based line, in the file, of the `name` field when it was found.
    pub name_line: Option<usize>,
    /// Set when strict YAML failed (and the lenient reading was used).
    pub strict_failure: Option<frontmatter::YamlFailure>,
}

/// Splits and reads a document's frontmatter (strict YAML, then lenient). `text` must already
/// be normalized.
fn read_document<'a>(
    path: &Path,
    text: &'a str,
    warnings: &mut Vec<String>,
) -> Result<Document<'a>, ClaudeError> {
    let split = frontmatter::split(text).map_err(|e| match e {
        SplitError::NoFrontmatter => ClaudeError::NoFrontmatter {
            path: path.to_path_buf(),
        },
        SplitError::Unclosed(line) => ClaudeError::UnclosedFrontmatter {
            path: path.to_path_buf(),
            line,
        },
    })?;
    // yaml-rust2 reads a NUL as the end of the input: the fields after it would vanish
    // silently (a `permissionMode: plan` or `disallowedTools` line, say).
    if let Some(at) = split.front.find('\0') {
        return Err(nul_error(path, split.front, at, split.open_line));
    }
    let limit_error = |hit: frontmatter::LimitHit| ClaudeError::YamlLimit {
        path: path.to_path_buf(),
        line: hit.line.map(|l| l + split.open_line),
        limit: hit.limit,
        max: hit.max as u64,
        message: hit.message,
    };
    let (fields, strict_failure) = match frontmatter::strict(split.front, &mut Budget::default()) {
        Ok(fields) => (fields, None),
        Err(StrictError::Limit(hit)) => return Err(limit_error(hit)),
        Err(StrictError::Syntax(failure)) => {
            // A fresh budget: the failed strict reading's values are already dropped.
            let fields =
                frontmatter::lenient(split.front, &mut Budget::default()).map_err(limit_error)?;
            let file_line = failure.line.map(|l| l + split.open_line);
            if fields.map.is_empty() {
                return Err(ClaudeError::Yaml {
                    path: path.to_path_buf(),
                    line: file_line,
                    message: failure.message,
                });
            }
            warnings.push(format!(
                "frontmatter is not strict YAML ({}{}); read it leniently",
                failure.message,
                file_line
                    .map(|l| format!(" at line {l}"))
                    .unwrap_or_default()
            ));
            (fields, Some(failure))
        }
    };
    Ok(Document {
        name_line: fields.name_line.map(|l| l + split.open_line),
        fields: fields.map,
        body: split.body,
        open_line: split.open_line,
        strict_failure,
    })
}

/// The error for a NUL byte at byte `at` of the frontmatter: an unsafe name when it is on the
/// `name` line, a YAML error naming the line otherwise.
fn nul_error(path: &Path, front: &str, at: usize, open_line: usize) -> ClaudeError {
    let line_start = front[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = front[at..].find('\n').map_or(front.len(), |i| at + i);
    let line = open_line + 1 + front[..line_start].matches('\n').count();
    let text = &front[line_start..line_end];
    if let Some((key, value)) = text.split_once(':')
        && key.trim_end() == "name"
    {
        return ClaudeError::UnsafeName {
            path: path.to_path_buf(),
            line,
            name: frontmatter::unquote(value.trim()).to_string(),
            reason: "it contains a NUL byte (U+0000), where the YAML reader would stop reading"
                .to_string(),
        };
    }
    ClaudeError::Yaml {
        path: path.to_path_buf(),
        line: Some(line),
        message: "the frontmatter contains a NUL byte (U+0000); YAML does not allow it, and the \
                  reader would silently drop everything after it"
            .to_string(),
    }
}

/// A scalar as text (numbers and booleans are written out); `None` for null, lists and maps.
pub(crate) fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Reads a document (see [`read_document`]) and takes the fields agent and skill files both
/// require: a safe `name` ([`required_name`]) and a `description`.
pub(crate) fn read_named_document<'a>(
    path: &Path,
    text: &'a str,
    warnings: &mut Vec<String>,
) -> Result<(Document<'a>, String, String), ClaudeError> {
    let mut doc = read_document(path, text, warnings)?;
    let name = required_name(&mut doc, path)?;
    let description = required_text(&mut doc, path, "description")?;
    Ok((doc, name, description))
}

/// Takes a required text field, erroring with the path and line when absent or empty.
fn required_text(
    doc: &mut Document<'_>,
    path: &Path,
    field: &'static str,
) -> Result<String, ClaudeError> {
    match doc.fields.remove(field) {
        None | Some(Value::Null) => Err(missing(doc, path, field)),
        Some(v) => match scalar_text(&v) {
            Some(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(_) => Err(missing(doc, path, field)),
            None => Err(ClaudeError::InvalidField {
                path: path.to_path_buf(),
                field: field.to_string(),
                line: doc.open_line,
                message: "must be text, not a list or a map".to_string(),
            }),
        },
    }
}

/// Takes the required `name`, refusing names that hold control or bidi characters
/// ([`unsafe_name_reason`]).
fn required_name(doc: &mut Document<'_>, path: &Path) -> Result<String, ClaudeError> {
    let name = required_text(doc, path, "name")?;
    match unsafe_name_reason(&name) {
        None => Ok(name),
        Some(reason) => Err(ClaudeError::UnsafeName {
            path: path.to_path_buf(),
            line: doc.name_line.unwrap_or(doc.open_line),
            name,
            reason,
        }),
    }
}

fn missing(doc: &Document<'_>, path: &Path, field: &'static str) -> ClaudeError {
    // When strict YAML failed, the YAML error is the better explanation.
    if let Some(f) = &doc.strict_failure {
        return ClaudeError::Yaml {
            path: path.to_path_buf(),
            line: f.line.map(|l| l + doc.open_line),
            message: format!("{} (and no `{field}` could be read leniently)", f.message),
        };
    }
    ClaudeError::MissingField {
        path: path.to_path_buf(),
        field,
        line: doc.open_line,
    }
}

/// Parses one agent file's text. `path_for_errors` names the file in errors and becomes the
/// definition's reference URI and `source`.
///
/// ```
/// let parsed = subagent_claude::parse_agent(
///     "agents/reviewer.md".as_ref(),
///     "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\n---\nYou review code.\n",
/// ).unwrap();
/// assert_eq!(parsed.definition.name, "reviewer");
/// assert_eq!(parsed.definition.prompt, "You review code.");
/// assert!(parsed.warnings.is_empty());
/// ```
pub fn parse_agent(path_for_errors: &Path, text: &str) -> Result<ParsedAgent, ClaudeError> {
    let normalized = frontmatter::normalize(text);
    let mut warnings = Vec::new();
    let (mut doc, name, description) =
        read_named_document(path_for_errors, &normalized, &mut warnings)?;
    warnings.extend(description_warning(&description));
    let reference = SubagentReference::new(path_for_errors.to_string_lossy().into_owned(), KIND);
    let mut def = ClaudeAgentDefinition::new(name, description, doc.body.trim());
    def.reference = reference;
    def.source = Some(path_for_errors.to_path_buf());
    def.name_line = doc.name_line;
    check_permission_mode(&doc, path_for_errors, &normalized)?;
    apply_fields(&mut def, std::mem::take(&mut doc.fields), &mut warnings);
    warnings.extend(field_warnings(&def));
    let warnings = terminal_safe(warnings);
    def.load_warnings = warnings.clone();
    Ok(ParsedAgent {
        definition: def,
        warnings,
    })
}

/// An unknown `permissionMode` is an error naming the file, the line and the valid modes (the
/// file is skipped like any invalid agent).
fn check_permission_mode(doc: &Document<'_>, path: &Path, text: &str) -> Result<(), ClaudeError> {
    let Some((key, value)) = doc
        .fields
        .iter()
        .find(|(k, _)| frontmatter::fold_key(k) == "permissionmode")
    else {
        return Ok(());
    };
    let Some(mode) = scalar_text(value).map(|s| s.trim().to_string()) else {
        return Ok(());
    };
    if mode.is_empty() || PermissionMode::parse(&mode).is_some() {
        return Ok(());
    }
    // The line of the key: the first line after the opening `---` that starts with it.
    let line = text
        .lines()
        .enumerate()
        .skip(doc.open_line)
        .find(|(_, l)| {
            l.split_once(':')
                .is_some_and(|(k, _)| k.trim() == key.as_str())
        })
        .map_or(doc.open_line, |(i, _)| i + 1);
    Err(ClaudeError::InvalidField {
        path: path.to_path_buf(),
        field: key.clone(),
        line,
        message: format!(
            "is `{}`, which is not a permission mode; valid modes: {}",
            escape_for_terminal(&mode),
            PermissionMode::VALID.join(", ")
        ),
    })
}

fn tool_rules(field: &str, v: Value, warnings: &mut Vec<String>) -> Option<Vec<ToolRule>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(parse_tool_list(&s)),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                match scalar_text(&item) {
                    Some(s) => out.extend(parse_tool_list(&s)),
                    None => warnings.push(format!("`{field}`: ignored a non-text entry {item}")),
                }
            }
            Some(out)
        }
        other => {
            warnings.push(format!(
                "`{field}` must be a comma-separated string or a list; ignored {other}"
            ));
            None
        }
    }
}

fn text_list(field: &str, v: Value, warnings: &mut Vec<String>) -> Vec<String> {
    let split = |s: &str| {
        s.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    match v {
        Value::Null => Vec::new(),
        Value::String(s) => split(&s),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| {
                let t = scalar_text(i);
                if t.is_none() {
                    warnings.push(format!("`{field}`: ignored a non-text entry {i}"));
                }
                t
            })
            .flat_map(|s| split(&s))
            .collect(),
        other => {
            warnings.push(format!(
                "`{field}` must be a string or a list; ignored {other}"
            ));
            Vec::new()
        }
    }
}

fn opt_text(field: &str, v: Value, warnings: &mut Vec<String>) -> Option<String> {
    if v.is_null() {
        return None;
    }
    let t = scalar_text(&v);
    if t.is_none() {
        warnings.push(format!("`{field}` must be text; ignored {v}"));
    }
    t.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn apply_fields(def: &mut ClaudeAgentDefinition, fields: Map<String, Value>, w: &mut Vec<String>) {
    for (key, value) in fields {
        match frontmatter::fold_key(&key).as_str() {
            "tools" => def.tools = tool_rules(&key, value, w),
            "disallowedtools" => {
                def.disallowed_tools = tool_rules(&key, value, w).unwrap_or_default()
            }
            "model" => {
                def.model = opt_text(&key, value, w).map(|m| {
                    if m.eq_ignore_ascii_case("inherit") {
                        ModelChoice::Inherit
                    } else {
                        ModelChoice::Named(m)
                    }
                })
            }
            "permissionmode" => {
                // Unknown modes were refused by `check_permission_mode`.
                if let Some(m) = opt_text(&key, value, w).and_then(|t| PermissionMode::parse(&t)) {
                    def.permission_mode = m;
                }
            }
            "maxturns" => {
                let n = match &value {
                    Value::Number(n) => n.as_u64(),
                    Value::String(s) => s.trim().parse::<u64>().ok(),
                    Value::Null => continue,
                    _ => None,
                };
                match n.and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0) {
                    Some(n) => def.max_turns = Some(n),
                    None => w.push(format!(
                        "`maxTurns` must be a positive whole number; ignored {value}"
                    )),
                }
            }
            "skills" => def.skills = text_list(&key, value, w),
            "mcpservers" => def.mcp_servers = Some(value).filter(|v| !v.is_null()),
            "hooks" => def.hooks = Some(value).filter(|v| !v.is_null()),
            "memory" => def.memory = Some(value).filter(|v| !v.is_null()),
            "background" => def.background = flag(&key, &value, w),
            "omitclaudemd" => def.omit_claude_md = flag(&key, &value, w).unwrap_or(false),
            "effort" => def.effort = opt_text(&key, value, w),
            "isolation" => def.isolation = opt_text(&key, value, w),
            "color" => def.color = opt_text(&key, value, w),
            "initialprompt" => def.initial_prompt = opt_text(&key, value, w),
            "budget" => read_budget(def, value, w),
            "outputschema" => def.output_schema = read_output_schema(&key, value, w),
            "maxbudgetusd" => {
                if let Some(usd) = budget_usd(&value) {
                    def.budget.get_or_insert_with(Default::default).usd = Some(usd);
                } else if !value.is_null() {
                    w.push(format!(
                        "`{key}` must be a positive amount of USD; ignored {value}"
                    ));
                }
            }
            _ => {
                def.metadata.insert(key, value);
            }
        }
    }
}

/// A `true`/`false` field (also written as text); `None` when absent, with a warning when it is
/// something else.
fn flag(key: &str, value: &Value, w: &mut Vec<String>) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Some(false),
        Value::Null => None,
        other => {
            w.push(format!("`{key}` must be true or false; ignored {other}"));
            None
        }
    }
}

/// `outputSchema`: a schema written inline (YAML, or JSON text), accepted under the strict
/// profile; anything else is ignored with a warning.
fn read_output_schema(key: &str, value: Value, w: &mut Vec<String>) -> Option<Value> {
    let schema = match value {
        Value::Null => return None,
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(v) => v,
            Err(e) => {
                w.push(format!(
                    "`{key}` must be a JSON Schema (a mapping, or JSON text); ignored: {e}"
                ));
                return None;
            }
        },
        other => other,
    };
    match subagent_schema::OutputSchema::compile(&schema, subagent_schema::Profile::untrusted()) {
        Ok(_) => Some(schema),
        Err(e) => {
            w.push(format!("`{key}` ignored: {e}"));
            None
        }
    }
}

/// A positive amount of USD: a number, or text such as `0.5` or `$0.5`.
fn budget_usd(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_start_matches('$').trim().parse::<f64>().ok(),
        _ => None,
    }?;
    (x.is_finite() && x > 0.0).then_some(x)
}

/// A positive whole number (a number or digits as text).
fn budget_count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().replace('_', "").parse::<u64>().ok(),
        _ => None,
    }
    .filter(|n| *n > 0)
}

/// A wall time: seconds as a number, or text with a unit (`500ms`, `90s`, `5m`, `1h`; no unit
/// means seconds).
fn budget_time(v: &Value) -> Option<std::time::Duration> {
    let secs = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => {
            let s = s.trim();
            let split = s
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: f64 = num.parse().ok()?;
            match unit.trim() {
                "" | "s" | "sec" | "secs" => n,
                "ms" => n / 1000.0,
                "m" | "min" | "mins" => n * 60.0,
                "h" => n * 3600.0,
                _ => return None,
            }
        }
        _ => return None,
    };
    // Up to a year: a bound any real budget is under, and safe for `Duration`.
    (secs.is_finite() && secs > 0.0 && secs <= 365.0 * 24.0 * 3600.0)
        .then(|| std::time::Duration::from_secs_f64(secs))
}

/// `budget: {tokens, turns, time, usd}` (also `time_secs`); a value that cannot be read is a
/// warning naming it, the rest of the budget still applies.
fn read_budget(def: &mut ClaudeAgentDefinition, value: Value, w: &mut Vec<String>) {
    let Value::Object(fields) = value else {
        if !value.is_null() {
            w.push(format!(
                "`budget` must be a map such as {{tokens: 50000, turns: 20, time: 5m, usd: 0.5}}; ignored {value}"
            ));
        }
        return;
    };
    let b = def.budget.get_or_insert_with(Default::default);
    for (k, v) in fields {
        let bad = |what: &str| format!("`budget.{k}` must be {what}; ignored {v}");
        match frontmatter::fold_key(&k).as_str() {
            "tokens" => match budget_count(&v) {
                Some(n) => b.tokens = Some(n),
                None => w.push(bad("a positive whole number of tokens")),
            },
            "turns" => match budget_count(&v).and_then(|n| u32::try_from(n).ok()) {
                Some(n) => b.turns = Some(n),
                None => w.push(bad("a positive whole number of turns")),
            },
            "time" | "timesecs" => match budget_time(&v) {
                Some(t) => b.time = Some(t),
                None => w.push(bad("a wall time such as 90, 90s, 5m or 1h")),
            },
            "usd" => match budget_usd(&v) {
                Some(x) => b.usd = Some(x),
                None => w.push(bad("a positive amount of USD")),
            },
            _ => w.push(format!(
                "`budget.{k}` is not a budget limit (tokens, turns, time, usd); ignored"
            )),
        }
    }
}
