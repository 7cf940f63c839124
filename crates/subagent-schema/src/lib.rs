//! # subagent-schema
//!
//! Typed results: a `Task` call (or an agent's frontmatter, or a host) gives a JSON Schema, the
//! child must end with a JSON value valid under it. This crate is the one place schemas are
//! compiled and values checked, shared by the agent loop (`subagent-runtime`, which offers the
//! model a final `StructuredOutput` tool and feeds validation errors back) and the `Task` tool
//! (`task-tool`, which checks what every kind of child returned: local, A2A or MCP).
//!
//! A schema may come from a model or a remote peer, so compiling it is bounded:
//!
//! * at most [`Profile::max_bytes`] of JSON text and [`MAX_SCHEMA_DEPTH`] levels of nesting;
//! * `$ref` only to a place inside the schema (`#...`); nothing is ever fetched (the validator
//!   is built without HTTP or file resolution);
//! * `pattern`s run on a linear-time regex engine (no backtracking);
//! * the [`Profile::untrusted`] profile (what a model or a peer sends) refuses `$ref`,
//!   `$dynamicRef` and `$recursiveRef` altogether: a schema without references is a tree, so
//!   validating a value costs at most (schema size × value size) steps, whereas references can
//!   expand exponentially.
//!
//! Validation errors are reported briefly ([`Invalid`]): at most [`MAX_REPORTED_ERRORS`]
//! errors, each cut to [`MAX_ERROR_CHARS`] characters, so feeding them back to a model is
//! bounded whatever the value.
//!
//! ```
//! use subagent_schema::{OutputSchema, Profile};
//! use serde_json::json;
//!
//! let schema = OutputSchema::compile(
//!     &json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
//!     Profile::untrusted(),
//! )
//! .unwrap();
//! assert!(schema.validate(&json!({"n": 3})).is_ok());
//! let err = schema.validate(&json!({"n": "three"})).unwrap_err();
//! assert!(err.to_string().contains("/n"));
//! assert_eq!(schema.parse_text("```json\n{\"n\": 4}\n```").unwrap(), json!({"n": 4}));
//! ```

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// The default number of times an invalid result is sent back to the agent to fix.
pub const DEFAULT_RETRIES: u32 = 2;

/// The highest retry count accepted, whatever a configuration says.
pub const MAX_RETRIES: u32 = 10;

/// Deepest nesting of objects and arrays accepted in a schema.
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// Errors reported per validation, at most.
pub const MAX_REPORTED_ERRORS: usize = 5;

/// Characters of one reported error, at most.
pub const MAX_ERROR_CHARS: usize = 300;

/// The text that starts the outcome of a run that never produced a value valid under its
/// output schema (its status is then `failed`).
pub const INVALID_OUTPUT_PREFIX: &str = "invalid output:";

/// The name of the final tool the agent loop offers a run asked for a typed result.
pub const STRUCTURED_OUTPUT_TOOL: &str = "StructuredOutput";

/// How much a schema's source is trusted: what compiling it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Profile {
    /// Largest schema accepted, in bytes of compact JSON text.
    pub max_bytes: usize,
    /// Whether `$ref`, `$dynamicRef` and `$recursiveRef` (to places inside the schema) are
    /// accepted.
    pub references: bool,
}

impl Profile {
    /// Schemas from a model, a remote peer or a project's agent file: at most 16 KiB, no
    /// references.
    pub const fn untrusted() -> Self {
        Self {
            max_bytes: 16 * 1024,
            references: false,
        }
    }

    /// Schemas the host gives (a Rust type's derived schema, a file named on the command line):
    /// at most 256 KiB, references inside the schema allowed.
    pub const fn host() -> Self {
        Self {
            max_bytes: 256 * 1024,
            references: true,
        }
    }
}

/// Why a schema was not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema's JSON text is larger than the profile allows.
    #[error("the output schema is too large: {bytes} bytes (at most {max})")]
    TooLarge {
        /// Its size in bytes of compact JSON.
        bytes: usize,
        /// The profile's limit.
        max: usize,
    },
    /// The schema nests deeper than [`MAX_SCHEMA_DEPTH`].
    #[error("the output schema nests deeper than {max} levels")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// The schema is not an object or a boolean.
    #[error("the output schema must be a JSON object (or true/false), not {found}")]
    NotASchema {
        /// What was given (its JSON type).
        found: &'static str,
    },
    /// A reference the profile does not accept: any, for [`Profile::untrusted`]; one leaving
    /// the schema (not starting with `#`), always.
    #[error("the output schema's `{keyword}` at {path} is not allowed here: {why}")]
    Reference {
        /// `$ref`, `$dynamicRef` or `$recursiveRef`.
        keyword: String,
        /// Where, as a JSON pointer.
        path: String,
        /// Why it was refused.
        why: &'static str,
    },
    /// The validator refused the schema (an unknown type, a bad regex, a dangling reference...).
    #[error("the output schema is invalid: {message}")]
    Invalid {
        /// The validator's message (cut to [`MAX_ERROR_CHARS`]).
        message: String,
    },
}

/// A compiled output schema: cheap to clone, safe to share between threads.
#[derive(Clone)]
pub struct OutputSchema {
    schema: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
    retries: u32,
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// Checks `schema` against `profile` and compiles it (with [`DEFAULT_RETRIES`]).
    pub fn compile(schema: &Value, profile: Profile) -> Result<Self, SchemaError> {
        match schema {
            Value::Object(_) | Value::Bool(_) => {}
            other => {
                return Err(SchemaError::NotASchema {
                    found: json_type(other),
                });
            }
        }
        check_shape(schema, profile, &mut String::new(), 0)?;
        let bytes = serde_json::to_vec(schema).map(|v| v.len()).unwrap_or(0);
        if bytes > profile.max_bytes {
            return Err(SchemaError::TooLarge {
                bytes,
                max: profile.max_bytes,
            });
        }
        let validator = jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(schema)
            .map_err(|e| SchemaError::Invalid {
                message: cut(&e.to_string(), MAX_ERROR_CHARS),
            })?;
        Ok(Self {
            schema: Arc::new(schema.clone()),
            validator: Arc::new(validator),
            retries: DEFAULT_RETRIES,
        })
    }

    /// Sets how many times an invalid result is sent back to fix (capped at [`MAX_RETRIES`]).
    #[must_use]
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries.min(MAX_RETRIES);
        self
    }

    /// How many times an invalid result is sent back to fix.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// True when the schema describes JSON objects only (`"type": "object"`), so it can be a
    /// tool's input schema as it is; other schemas are wrapped in `{"value": ...}`.
    pub fn is_object_schema(&self) -> bool {
        self.schema.get("type").and_then(Value::as_str) == Some("object")
    }

    /// The input schema of the final `StructuredOutput` tool: the schema itself when it
    /// describes objects, else an object with one required property `value` holding it.
    pub fn tool_input_schema(&self) -> Value {
        if self.is_object_schema() {
            return (*self.schema).clone();
        }
        let mut props = Map::new();
        props.insert("value".into(), (*self.schema).clone());
        serde_json::json!({
            "type": "object",
            "properties": props,
            "required": ["value"],
        })
    }

    /// The result carried by a `StructuredOutput` call's arguments (see
    /// [`tool_input_schema`](Self::tool_input_schema)).
    pub fn from_tool_input(&self, mut arguments: Value) -> Value {
        if self.is_object_schema() {
            return arguments;
        }
        match arguments.get_mut("value") {
            Some(v) => v.take(),
            None => arguments,
        }
    }

    /// Checks a value; the error lists what is wrong, briefly.
    pub fn validate(&self, value: &Value) -> Result<(), Invalid> {
        let mut errors = Vec::new();
        let mut total = 0usize;
        for e in self.validator.iter_errors(value) {
            total += 1;
            if errors.len() < MAX_REPORTED_ERRORS {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                errors.push(cut(&format!("at {at}: {e}"), MAX_ERROR_CHARS));
            }
            if total >= 10_000 {
                break;
            }
        }
        if total == 0 {
            Ok(())
        } else {
            Err(Invalid { errors, total })
        }
    }

    /// Reads a final answer given as text: the JSON value it holds (the whole text, or the
    /// inside of one fenced code block), or `None` when it holds none.
    pub fn parse_text(&self, text: &str) -> Option<Value> {
        parse_json_text(text)
    }

    /// Reads and checks a final answer given as text: the value, or what is wrong with it.
    pub fn check_text(&self, text: &str) -> Result<Value, Invalid> {
        let Some(value) = parse_json_text(text) else {
            return Err(Invalid {
                errors: vec!["the answer is not a JSON value".to_string()],
                total: 1,
            });
        };
        self.validate(&value).map(|()| value)
    }
}

/// What is wrong with a value: the first [`MAX_REPORTED_ERRORS`] errors, each cut to
/// [`MAX_ERROR_CHARS`] characters, and how many there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    errors: Vec<String>,
    total: usize,
}

impl Invalid {
    /// The reported errors (at most [`MAX_REPORTED_ERRORS`]).
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// How many errors the value had (reported or not; counting stops at 10,000).
    pub fn total(&self) -> usize {
        self.total
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.errors.join("; "))?;
        if self.total > self.errors.len() {
            write!(f, "; and {} more", self.total - self.errors.len())?;
        }
        Ok(())
    }
}

impl std::error::Error for Invalid {}

/// The JSON value a text holds: the whole text trimmed, or the inside of its first fenced code
/// block (```` ```json ... ``` ````).
pub fn parse_json_text(text: &str) -> Option<Value> {
    let t = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(t) {
        return Some(v);
    }
    let start = t.find("```")?;
    let rest = &t[start + 3..];
    let body_start = rest.find('\n')? + 1;
    let rest = &rest[body_start..];
    let end = rest.find("```")?;
    serde_json::from_str(rest[..end].trim()).ok()
}

/// Walks the schema: depth, and references under the profile.
fn check_shape(
    v: &Value,
    profile: Profile,
    path: &mut String,
    depth: usize,
) -> Result<(), SchemaError> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(SchemaError::TooDeep {
            max: MAX_SCHEMA_DEPTH,
        });
    }
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if matches!(k.as_str(), "$ref" | "$dynamicRef" | "$recursiveRef")
                    && let Value::String(target) = child
                {
                    let why = if !profile.references {
                        Some(
                            "references are not accepted in a schema from a model, a peer or an agent file",
                        )
                    } else if !target.starts_with('#') {
                        Some(
                            "only references inside the schema (`#...`) are accepted; nothing is fetched",
                        )
                    } else {
                        None
                    };
                    if let Some(why) = why {
                        return Err(SchemaError::Reference {
                            keyword: k.clone(),
                            path: format!("{path}/{}", escape_pointer(k)),
                            why,
                        });
                    }
                }
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(k));
                let r = check_shape(child, profile, path, depth + 1);
                path.truncate(len);
                r?;
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                let r = check_shape(child, profile, path, depth + 1);
                path.truncate(len);
                r?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `s` cut to `max` characters, with `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remote_references_are_refused_even_for_the_host() {
        let s = json!({"$ref": "https://example.com/schema.json"});
        let err = OutputSchema::compile(&s, Profile::host()).unwrap_err();
        assert!(matches!(err, SchemaError::Reference { .. }), "{err}");
        let s = json!({"properties": {"a": {"$ref": "other.json#/x"}}});
        let err = OutputSchema::compile(&s, Profile::host()).unwrap_err();
        assert!(err.to_string().contains("/properties/a/$ref"), "{err}");
    }

    #[test]
    fn untrusted_schemas_have_no_references() {
        let s = json!({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"});
        assert!(OutputSchema::compile(&s, Profile::host()).is_ok());
        let err = OutputSchema::compile(&s, Profile::untrusted()).unwrap_err();
        assert!(matches!(err, SchemaError::Reference { .. }), "{err}");
    }

    #[test]
    fn exponential_reference_chains_are_refused_from_models() {
        // d_k = anyOf[d_{k-1}, d_{k-1}]: 2^40 evaluations of a failing value if accepted.
        let mut defs = Map::new();
        defs.insert("d0".into(), json!({"type": "integer"}));
        for k in 1..=40 {
            let prev = format!("#/$defs/d{}", k - 1);
            defs.insert(
                format!("d{k}"),
                json!({"anyOf": [{"$ref": prev}, {"$ref": prev}]}),
            );
        }
        let s = json!({"$defs": defs, "$ref": "#/$defs/d40"});
        assert!(matches!(
            OutputSchema::compile(&s, Profile::untrusted()),
            Err(SchemaError::Reference { .. })
        ));
    }

    #[test]
    fn size_and_depth_are_bounded() {
        let big = json!({"description": "x".repeat(20_000)});
        assert!(matches!(
            OutputSchema::compile(&big, Profile::untrusted()),
            Err(SchemaError::TooLarge { max: 16384, .. })
        ));
        assert!(OutputSchema::compile(&big, Profile::host()).is_ok());
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"items": deep});
        }
        assert!(matches!(
            OutputSchema::compile(&deep, Profile::host()),
            Err(SchemaError::TooDeep { .. })
        ));
        assert!(matches!(
            OutputSchema::compile(&json!("string"), Profile::host()),
            Err(SchemaError::NotASchema { .. })
        ));
    }

    #[test]
    fn bad_schemas_are_errors_not_panics() {
        for s in [
            json!({"type": "no-such-type"}),
            json!({"pattern": "(unclosed"}),
            json!({"$ref": "#/$defs/missing"}),
        ] {
            assert!(
                OutputSchema::compile(&s, Profile::host()).is_err(),
                "{s} should be refused"
            );
        }
    }

    #[test]
    fn backtracking_patterns_run_in_linear_time() {
        // Catastrophic for a backtracking engine; the linear engine answers at once.
        let s =
            OutputSchema::compile(&json!({"pattern": "^(a+)+$"}), Profile::untrusted()).unwrap();
        let value = Value::String(format!("{}!", "a".repeat(5_000)));
        assert!(s.validate(&value).is_err());
    }

    #[test]
    fn error_reports_are_bounded() {
        let s = OutputSchema::compile(
            &json!({"type": "array", "items": {"type": "integer"}}),
            Profile::untrusted(),
        )
        .unwrap();
        let value = Value::Array(
            (0..1000)
                .map(|i| json!(format!("{i}{}", "y".repeat(5000))))
                .collect(),
        );
        let err = s.validate(&value).unwrap_err();
        assert_eq!(err.errors().len(), MAX_REPORTED_ERRORS);
        assert_eq!(err.total(), 1000);
        let text = err.to_string();
        assert!(
            text.chars().count() <= MAX_REPORTED_ERRORS * (MAX_ERROR_CHARS + 2) + 20,
            "{}",
            text.len()
        );
        assert!(text.ends_with("and 995 more"), "{text}");
    }

    #[test]
    fn non_object_schemas_are_wrapped_for_the_tool() {
        let s = OutputSchema::compile(&json!({"type": "array"}), Profile::untrusted()).unwrap();
        assert_eq!(s.tool_input_schema()["required"], json!(["value"]));
        assert_eq!(s.from_tool_input(json!({"value": [1]})), json!([1]));
        let o = OutputSchema::compile(&json!({"type": "object"}), Profile::untrusted()).unwrap();
        assert_eq!(o.tool_input_schema(), json!({"type": "object"}));
        assert_eq!(o.from_tool_input(json!({"a": 1})), json!({"a": 1}));
    }

    #[test]
    fn text_answers_are_read() {
        assert_eq!(parse_json_text(" [1, 2] "), Some(json!([1, 2])));
        assert_eq!(
            parse_json_text("Here it is:\n```json\n{\"a\": 1}\n```\nDone."),
            Some(json!({"a": 1}))
        );
        assert_eq!(parse_json_text("no json here"), None);
        assert_eq!(cut("äöü", 2), "äö…");
        assert_eq!(
            OutputSchema::compile(&json!(true), Profile::host())
                .unwrap()
                .with_retries(99)
                .retries(),
            MAX_RETRIES
        );
    }
}
