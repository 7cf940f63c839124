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
//! * `pattern`s run on a linear-time regex engine (no backtracking), each at most
//!   [`Profile::max_pattern_bytes`] long, at most [`Profile::max_patterns`] of them, each
//!   compiled within [`Profile::max_regex_size`] (a counted repetition like `^(.{0,1000})*$`
//!   compiles to megabytes, and matching costs about that size per byte);
//! * the [`Profile::untrusted`] profile (what a model or a peer sends) refuses `$ref`,
//!   `$dynamicRef` and `$recursiveRef` altogether: a schema without references is a tree, so
//!   validating a value costs at most (schema size × value size) steps, whereas references can
//!   expand exponentially; and its `format` is an annotation, never checked.
//!
//! Checking a value is bounded too, whatever the profile (the value comes from a model or a
//! peer): at most [`Profile::max_pattern_input`] bytes of it are checked against patterns
//! (beyond that the value is refused, saying so), and `format: "regex"` is checked in one pass
//! over at most [`Profile::max_pattern_bytes`] (the validator's own check re-parses the text
//! once per `\c` escape: 16,000 of them took 10 s). [`OutputSchema::check`] runs the check
//! on a blocking thread, off the async threads, and waits at most until the run's deadline.
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

mod bounds;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The longest [`OutputSchema::check`] waits for a check when the run has no deadline (or a
/// later one).
pub const MAX_CHECK_TIME: Duration = Duration::from_secs(60);

/// How much a schema's source is trusted: what compiling it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Profile {
    /// Largest schema accepted, in bytes of compact JSON text.
    pub max_bytes: usize,
    /// Whether `$ref`, `$dynamicRef` and `$recursiveRef` (to places inside the schema) are
    /// accepted.
    pub references: bool,
    /// Whether `format` is checked where the schema's draft asks for it (drafts 4 to 7);
    /// otherwise it is an annotation only.
    pub formats: bool,
    /// Longest `pattern` (and `patternProperties` name) accepted, in bytes; also the longest
    /// string checked as `format: "regex"` (a longer one fails the check).
    pub max_pattern_bytes: usize,
    /// Most patterns (`pattern`s and `patternProperties` names together) in one schema.
    pub max_patterns: usize,
    /// Largest compiled form of one pattern, in bytes (the regex engine's size limit).
    pub max_regex_size: usize,
    /// Most bytes of one value checked against patterns in one check (every string a `pattern`
    /// looks at, every time; property names once per `patternProperties` pattern): a value
    /// over it is refused, saying so.
    pub max_pattern_input: usize,
}

impl Profile {
    /// Schemas from a model, a remote peer or a project's agent file: at most 16 KiB, no
    /// references, `format` not checked, at most 64 patterns of at most 1 KiB compiling to at
    /// most 256 KiB each, at most 1 MiB of a value checked against them.
    pub const fn untrusted() -> Self {
        Self {
            max_bytes: 16 * 1024,
            references: false,
            formats: false,
            max_pattern_bytes: 1024,
            max_patterns: 64,
            max_regex_size: 256 * 1024,
            max_pattern_input: 1024 * 1024,
        }
    }

    /// Schemas the host gives (a Rust type's derived schema, a file named on the command line):
    /// at most 256 KiB, references inside the schema allowed, `format` checked as its draft
    /// says, at most 1,024 patterns of at most 16 KiB compiling to at most 10 MiB each (the
    /// regex engine's default), at most 1 MiB of a value checked against them.
    pub const fn host() -> Self {
        Self {
            max_bytes: 256 * 1024,
            references: true,
            formats: true,
            max_pattern_bytes: 16 * 1024,
            max_patterns: 1024,
            max_regex_size: 10 * 1024 * 1024,
            max_pattern_input: 1024 * 1024,
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
    /// A pattern (`pattern`, a `patternProperties` name) longer than the profile accepts, or
    /// more of them than it accepts.
    #[error("the output schema's pattern at {path} is not accepted: {why}")]
    Pattern {
        /// Where, as a JSON pointer.
        path: String,
        /// Why it was refused (naming the limit).
        why: String,
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
    profile: Profile,
    /// `patternProperties` names in the schema (each value's property names are checked
    /// against each).
    property_patterns: usize,
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
        let bytes = serde_json::to_vec(schema).map(|v| v.len()).unwrap_or(0);
        if bytes > profile.max_bytes {
            return Err(SchemaError::TooLarge {
                bytes,
                max: profile.max_bytes,
            });
        }
        let mut patterns = Patterns::default();
        check_shape(schema, profile, &mut String::new(), 0, &mut patterns, false)?;
        let mut options = jsonschema::options()
            // `patternProperties` (the validator's own keyword): the same engine and size limit.
            .with_pattern_options(
                jsonschema::PatternOptions::regex()
                    .size_limit(profile.max_regex_size)
                    .dfa_size_limit(bounds::DFA_SIZE_LIMIT),
            )
            .with_keyword("pattern", bounds::pattern(profile))
            .with_format("regex", bounds::regex_format(profile));
        if !profile.formats {
            options = options.should_validate_formats(false);
        }
        let validator = options.build(schema).map_err(|e| SchemaError::Invalid {
            message: cut(&e.to_string(), MAX_ERROR_CHARS),
        })?;
        Ok(Self {
            schema: Arc::new(schema.clone()),
            validator: Arc::new(validator),
            retries: DEFAULT_RETRIES,
            profile,
            property_patterns: patterns.property_names,
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

    /// Checks a value; the error lists what is wrong, briefly. It runs on the calling thread:
    /// from async code, prefer [`check`](Self::check).
    pub fn validate(&self, value: &Value) -> Result<(), Invalid> {
        if let Some(why) = bounds::property_names_over(
            value,
            self.property_patterns,
            self.profile.max_pattern_input,
        ) {
            return Err(Invalid::one(why));
        }
        let budget = bounds::Budget::start(self.profile.max_pattern_input);
        let result = self.validate_within(value);
        // A bound met anywhere fails the whole check (under `not` a failing keyword passes).
        match budget.over() {
            Some(why) => Err(Invalid::one(why)),
            None => result,
        }
    }

    /// Checks `value` on a blocking thread (off the async threads), waiting at most until
    /// `deadline` (the run's) and at most [`MAX_CHECK_TIME`]: the value back when it is valid,
    /// else what is wrong (a check that did not finish in time says so). Outside a tokio
    /// runtime it checks on the calling thread.
    pub async fn check(&self, value: Value, deadline: Option<Instant>) -> Result<Value, Invalid> {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.validate(&value).map(|()| value);
        }
        let now = Instant::now();
        let limit = now + MAX_CHECK_TIME;
        let until = deadline.map_or(limit, |d| d.min(limit));
        let late = || {
            Invalid::one(format!(
                "the check of the value against the output schema did not finish within {}",
                if deadline.is_some_and(|d| d <= limit) {
                    "the run's time limit".to_string()
                } else {
                    format!("{} s", MAX_CHECK_TIME.as_secs())
                }
            ))
        };
        if until <= now {
            return Err(late());
        }
        let schema = self.clone();
        let job = tokio::task::spawn_blocking(move || schema.validate(&value).map(|()| value));
        match tokio::time::timeout_at(until.into(), job).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(Invalid::one(format!("the check stopped: {e}"))),
            Err(_) => Err(late()),
        }
    }

    /// [`check`](Self::check) of a final answer given as text (see
    /// [`check_text`](Self::check_text)).
    pub async fn check_text_within(
        &self,
        text: &str,
        deadline: Option<Instant>,
    ) -> Result<Value, Invalid> {
        match parse_json_text(text) {
            Some(value) => self.check(value, deadline).await,
            None => Err(Invalid::one("the answer is not a JSON value".to_string())),
        }
    }

    fn validate_within(&self, value: &Value) -> Result<(), Invalid> {
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
            return Err(Invalid::one("the answer is not a JSON value".to_string()));
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
    fn one(error: String) -> Self {
        Self {
            errors: vec![cut(&error, MAX_ERROR_CHARS)],
            total: 1,
        }
    }

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

/// The patterns met while walking a schema.
#[derive(Default)]
struct Patterns {
    /// `pattern`s and `patternProperties` names.
    all: usize,
    /// `patternProperties` names.
    property_names: usize,
}

/// Keywords whose values are data, not schemas: nothing in them is a pattern.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

/// Walks the schema: depth, references under the profile, and patterns (how many, how long).
/// `data`: inside a keyword whose value is data.
fn check_shape(
    v: &Value,
    profile: Profile,
    path: &mut String,
    depth: usize,
    patterns: &mut Patterns,
    data: bool,
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
                if !data {
                    count_patterns(k, child, profile, path, patterns)?;
                }
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(k));
                let inner = data || DATA_KEYWORDS.contains(&k.as_str());
                let r = check_shape(child, profile, path, depth + 1, patterns, inner);
                path.truncate(len);
                r?;
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                let r = check_shape(child, profile, path, depth + 1, patterns, data);
                path.truncate(len);
                r?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Counts (and measures) the patterns of one keyword: `pattern` with a string, the names of
/// `patternProperties`.
fn count_patterns(
    keyword: &str,
    value: &Value,
    profile: Profile,
    path: &str,
    patterns: &mut Patterns,
) -> Result<(), SchemaError> {
    let names: Vec<(&str, String)> = match (keyword, value) {
        ("pattern", Value::String(p)) => vec![(p.as_str(), format!("{path}/pattern"))],
        ("patternProperties", Value::Object(map)) => {
            patterns.property_names += map.len();
            map.keys()
                .map(|p| {
                    (
                        p.as_str(),
                        format!("{path}/patternProperties/{}", escape_pointer(p)),
                    )
                })
                .collect()
        }
        _ => return Ok(()),
    };
    for (p, at) in names {
        patterns.all += 1;
        if patterns.all > profile.max_patterns {
            return Err(SchemaError::Pattern {
                path: at,
                why: format!(
                    "the schema has more than {} patterns (`pattern` and `patternProperties` \
                     together)",
                    profile.max_patterns
                ),
            });
        }
        if p.len() > profile.max_pattern_bytes {
            return Err(SchemaError::Pattern {
                path: at,
                why: format!(
                    "it is {} bytes long, over the {} accepted",
                    p.len(),
                    profile.max_pattern_bytes
                ),
            });
        }
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

    /// A draft-07 schema asking for `format: "regex"`, with a value the validator's own check
    /// took 10 s on (16,000 `\c` escapes: one full re-parse per escape), made invalid at the
    /// end.
    fn slow_regex_format() -> (Value, Value) {
        let schema =
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "format": "regex"});
        let value = Value::String(format!("{}(", "\\cA".repeat(16_000)));
        (schema, value)
    }

    #[test]
    fn untrusted_schemas_do_not_check_formats() {
        let (schema, value) = slow_regex_format();
        let s = OutputSchema::compile(&schema, Profile::untrusted()).unwrap();
        // An annotation only: the value passes at once (the old check took 10 s, then failed).
        assert!(s.validate(&value).is_ok());
        let s = OutputSchema::compile(
            &json!({"$schema": "http://json-schema.org/draft-07/schema#", "format": "date"}),
            Profile::untrusted(),
        )
        .unwrap();
        assert!(s.validate(&json!("not a date")).is_ok());
    }

    #[test]
    fn the_hosts_regex_format_is_bounded_and_still_checked() {
        let (schema, value) = slow_regex_format();
        let s = OutputSchema::compile(&schema, Profile::host()).unwrap();
        let err = s.validate(&value).unwrap_err().to_string();
        assert!(
            err.contains("`format: \"regex\"`") && err.contains("16384"),
            "{err}"
        );
        // Within the bound it is checked as before: `\cA` escapes are a regex, `(` is not.
        assert!(s.validate(&json!("\\cA\\cB[a-z]+")).is_ok());
        assert!(s.validate(&json!("\\cA(")).is_err());
        // And the format still applies as the draft says (drafts 4 to 7 check it).
        let date = OutputSchema::compile(
            &json!({"$schema": "http://json-schema.org/draft-07/schema#", "format": "date"}),
            Profile::host(),
        )
        .unwrap();
        assert!(date.validate(&json!("not a date")).is_err());
        assert!(date.validate(&json!("2026-11-27")).is_ok());
    }

    #[test]
    fn counted_repetitions_that_compile_to_megabytes_are_refused() {
        // 14 bytes of pattern; matching 256 KiB against it took about 5 s.
        for pattern in ["^(.{0,1000})*$", "(?:a{100}){100}", "^([a-z]{1,999}){1,9}$"] {
            let err = OutputSchema::compile(&json!({"pattern": pattern}), Profile::untrusted())
                .unwrap_err()
                .to_string();
            assert!(err.contains("compiles to more than"), "{pattern}: {err}");
        }
        let err = OutputSchema::compile(
            &json!({"patternProperties": {"^(.{0,1000})*$": {}}}),
            Profile::untrusted(),
        )
        .unwrap_err();
        assert!(matches!(err, SchemaError::Invalid { .. }), "{err}");
        // Ordinary patterns compile as before, ECMA-262 escapes included.
        for ok in [
            "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$",
            "^\\d{4}-\\d{2}-\\d{2}$",
            "^\\cI\\w+$",
        ] {
            let s = OutputSchema::compile(&json!({"pattern": ok}), Profile::untrusted()).unwrap();
            assert!(s.validate(&json!(3)).is_ok(), "non-strings are not checked");
        }
        let tab =
            OutputSchema::compile(&json!({"pattern": "^\\cIx$"}), Profile::untrusted()).unwrap();
        assert!(tab.validate(&json!("\tx")).is_ok());
        assert!(tab.validate(&json!("x")).is_err());
    }

    #[test]
    fn patterns_are_few_and_short() {
        let long = json!({"pattern": "a".repeat(1025)});
        let err = OutputSchema::compile(&long, Profile::untrusted()).unwrap_err();
        assert!(
            matches!(&err, SchemaError::Pattern { path, .. } if path == "/pattern"),
            "{err}"
        );
        assert!(OutputSchema::compile(&long, Profile::host()).is_ok());
        let many: Vec<Value> = (0..65)
            .map(|i| json!({"pattern": format!("^{i}$")}))
            .collect();
        let err = OutputSchema::compile(&json!({"anyOf": many}), Profile::untrusted())
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 64 patterns"), "{err}");
        // Data is not a schema: a `pattern` inside `const` is just a value.
        let data = json!({"const": {"pattern": "b".repeat(2000)}});
        assert!(OutputSchema::compile(&data, Profile::untrusted()).is_ok());
    }

    #[test]
    fn the_text_checked_against_patterns_is_bounded_per_value() {
        let s = OutputSchema::compile(
            &json!({"type": "array", "items": {"type": "string", "pattern": "^a*$"}}),
            Profile::untrusted(),
        )
        .unwrap();
        let within = Value::Array(vec![json!("a".repeat(100_000)); 10]);
        assert!(s.validate(&within).is_ok());
        let over = Value::Array(vec![json!("a".repeat(100_000)); 11]);
        let err = s.validate(&over).unwrap_err().to_string();
        assert!(err.contains("1048576 bytes checked per value"), "{err}");
        // Over the bound the whole value fails, also where a failing pattern would pass.
        let negated = OutputSchema::compile(
            &json!({"not": {"type": "string", "pattern": "^b"}}),
            Profile::untrusted(),
        )
        .unwrap();
        assert!(negated.validate(&json!("a".repeat(1000))).is_ok());
        assert!(negated.validate(&json!("a".repeat(2_000_000))).is_err());
        // Property names, once per `patternProperties` pattern.
        let props = OutputSchema::compile(
            &json!({"patternProperties": {"^x": {}, "^y": {}}}),
            Profile::untrusted(),
        )
        .unwrap();
        let mut map = Map::new();
        map.insert("k".repeat(600_000), json!(1));
        let err = props.validate(&Value::Object(map)).unwrap_err().to_string();
        assert!(err.contains("patternProperties"), "{err}");
    }

    #[tokio::test]
    async fn checks_run_off_the_async_threads_within_the_deadline() {
        let s = OutputSchema::compile(
            &json!({"type": "object", "required": ["n"]}),
            Profile::untrusted(),
        )
        .unwrap();
        assert_eq!(
            s.check(json!({"n": 1}), None).await.unwrap(),
            json!({"n": 1})
        );
        assert!(s.check(json!({}), None).await.is_err());
        // A deadline already past: the check is not waited for.
        let past = Instant::now() - Duration::from_millis(1);
        let err = s.check(json!({"n": 1}), Some(past)).await.unwrap_err();
        assert!(err.to_string().contains("time limit"), "{err}");
        assert_eq!(
            s.check_text_within("```json\n{\"n\": 2}\n```", None)
                .await
                .unwrap(),
            json!({"n": 2})
        );
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
