//! What keeps a check cheap whatever the schema and the value: patterns compiled by the
//! linear-time engine under a size limit, a budget of bytes checked against patterns per
//! validation, and a `format: "regex"` check that is linear and bounded.
//!
//! The validator's own `pattern` keyword is replaced by [`pattern`]: the same ECMA-262
//! translation (`jsonschema-regex`), compiled with [`Profile::max_regex_size`] (a counted
//! repetition such as `^(.{0,1000})*$` compiles to megabytes, and matching costs about its
//! size per byte of input) and charged against the validation's budget
//! ([`Profile::max_pattern_input`]) before it runs. A validation that goes over the budget
//! fails as a whole (never just the one keyword: under `not` that would pass), so does one that
//! meets a `format: "regex"` string longer than [`Profile::max_pattern_bytes`].
//!
//! The budget lives in a thread-local for the duration of one validation
//! ([`Budget::start`]): the validator runs keywords synchronously on the calling thread.

use std::cell::{Cell, RefCell};

use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};

use crate::{MAX_ERROR_CHARS, Profile, cut};

/// The lazy DFA's cache per compiled pattern, at most (the engine falls back to its
/// linear-time NFA simulation beyond it).
pub(crate) const DFA_SIZE_LIMIT: usize = 256 * 1024;

thread_local! {
    /// Bytes that may still be checked against patterns in the running validation (`None`:
    /// no validation of ours runs on this thread).
    static LEFT: Cell<Option<usize>> = const { Cell::new(None) };
    /// Why the running validation must fail as a whole, once a bound is met.
    static OVER: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// One validation's budget on this thread; the previous state comes back when it is dropped.
pub(crate) struct Budget {
    left: Option<usize>,
    over: Option<String>,
}

impl Budget {
    /// Starts a validation that may check at most `bytes` bytes against patterns.
    pub(crate) fn start(bytes: usize) -> Self {
        Self {
            left: LEFT.with(|l| l.replace(Some(bytes))),
            over: OVER.with(|o| o.borrow_mut().take()),
        }
    }

    /// Why the validation went over a bound, if it did.
    pub(crate) fn over(&self) -> Option<String> {
        OVER.with(|o| o.borrow().clone())
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        LEFT.with(|l| l.set(self.left));
        OVER.with(|o| *o.borrow_mut() = self.over.take());
    }
}

/// Records that the running validation went over a bound (the first reason is kept).
fn exceed(why: impl FnOnce() -> String) {
    OVER.with(|o| {
        let mut o = o.borrow_mut();
        if o.is_none() {
            *o = Some(why());
        }
    });
}

/// Takes `n` bytes from the running validation's budget; false (and the validation marked
/// over) when they are not left.
fn charge(n: usize, max: usize) -> bool {
    LEFT.with(|left| match left.get() {
        None => true,
        Some(l) if n <= l => {
            left.set(Some(l - n));
            true
        }
        Some(_) => {
            left.set(Some(0));
            exceed(|| {
                format!(
                    "the value holds more text to check against the schema's patterns than the \
                     {max} bytes checked per value; shorten its strings"
                )
            });
            false
        }
    })
}

/// ECMA-262 `pattern` text as Rust regex syntax: `\cX` control escapes replaced in one pass,
/// then `jsonschema-regex`'s translation (which would otherwise re-parse the whole pattern
/// once per `\c` escape: quadratic).
pub(crate) fn translate(source: &str) -> Result<String, ()> {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('c') if chars.peek().is_some_and(char::is_ascii_alphabetic) => {
                // As the translation does it: the letter's code modulo 32, here as an escape.
                let letter = chars.next().map_or(0, |l| l as u8);
                out.push_str(&format!("\\x{:02X}", letter % 32));
            }
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    jsonschema_regex::to_rust_regex(&out).map(std::borrow::Cow::into_owned)
}

/// A pattern compiled by the linear-time engine within `profile`'s size limit; the error says
/// why it was refused.
pub(crate) fn compile(source: &str, profile: Profile) -> Result<regex::Regex, String> {
    if source.len() > profile.max_pattern_bytes {
        return Err(format!(
            "the pattern is {} bytes long, over the {} accepted",
            source.len(),
            profile.max_pattern_bytes
        ));
    }
    let translated = translate(source)
        .map_err(|()| "it is not a valid ECMA-262 regular expression".to_string())?;
    regex::RegexBuilder::new(&translated)
        .size_limit(profile.max_regex_size)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => format!(
                "it compiles to more than {limit} bytes (counted repetitions multiply); \
                 simplify it"
            ),
            other => cut(&other.to_string(), MAX_ERROR_CHARS),
        })
}

/// The `pattern` keyword, bounded.
struct Pattern {
    regex: regex::Regex,
    source: String,
    max_input: usize,
}

impl Pattern {
    fn matches(&self, s: &str) -> bool {
        // Over the budget the whole validation fails (see the module docs); this keyword
        // reports a failure too, which the whole result then carries.
        charge(s.len(), self.max_input) && self.regex.is_match(s)
    }
}

impl Keyword for Pattern {
    fn validate<'i>(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match instance {
            Value::String(s) if !self.matches(s) => Err(ValidationError::custom(format!(
                "{} does not match {}",
                Value::String(cut(s, 80)),
                Value::String(cut(&self.source, 80)),
            ))),
            _ => Ok(()),
        }
    }

    fn is_valid(&self, instance: &Value) -> bool {
        match instance {
            Value::String(s) => self.matches(s),
            _ => true,
        }
    }
}

/// The factory of the bounded `pattern` keyword for `profile`.
pub(crate) fn pattern(
    profile: Profile,
) -> impl for<'a> Fn(
    &'a Map<String, Value>,
    &'a Value,
    jsonschema::paths::Location,
) -> Result<Box<dyn Keyword>, ValidationError<'a>>
+ Send
+ Sync
+ 'static {
    move |_, value, _| {
        let Value::String(source) = value else {
            return Err(ValidationError::custom("`pattern` must be a string"));
        };
        let regex = compile(source, profile).map_err(|why| {
            ValidationError::custom(format!(
                "pattern {} is not accepted: {why}",
                Value::String(cut(source, 80))
            ))
        })?;
        Ok(Box::new(Pattern {
            regex,
            source: source.clone(),
            max_input: profile.max_pattern_input,
        }))
    }
}

/// `format: "regex"`, linear and bounded: the string is charged to the budget, one longer than
/// [`Profile::max_pattern_bytes`] fails the validation as a whole, and the rest is translated
/// once (see [`translate`]) and parsed, never compiled.
pub(crate) fn regex_format(profile: Profile) -> impl Fn(&str) -> bool + Send + Sync + 'static {
    move |s| {
        if s.len() > profile.max_pattern_bytes {
            exceed(|| {
                format!(
                    "a string checked as `format: \"regex\"` is {} bytes long, over the {} \
                     checked",
                    s.len(),
                    profile.max_pattern_bytes
                )
            });
            return false;
        }
        if !charge(s.len(), profile.max_pattern_input) {
            return false;
        }
        // What the validator's own check does (the text reads as ECMA-262), in one pass.
        translate(s).is_ok()
    }
}

/// The bytes of the value's property names checked against `patternProperties` (each name
/// once per such pattern in the schema): over `max` the validation fails before it starts.
pub(crate) fn property_names_over(value: &Value, patterns: usize, max: usize) -> Option<String> {
    if patterns == 0 {
        return None;
    }
    let mut bytes = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    bytes = bytes.saturating_add(k.len().saturating_mul(patterns));
                    stack.push(child);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    (bytes > max).then(|| {
        format!(
            "the value's property names are too long to check against the schema's \
             {patterns} patternProperties pattern(s): {bytes} bytes to check, at most {max}"
        )
    })
}
