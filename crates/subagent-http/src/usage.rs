//! Where a reply says what the call used: JSON Pointers to its token counts (and model), read
//! from the one parsed reply, so the caller's token budget counts an `HTTP` agent's tokens.
//!
//! The endpoint is a stranger to the budget: it may leave the counts out, or send them as a
//! string, a negative number, a fraction or a number past `u64`. None of that makes the call
//! free: a count that is missing or not a non-negative integer is a broken report, and the
//! call then counts as at least `usage_unreported_tokens` tokens (default
//! [`DEFAULT_UNREPORTED_TOKENS`]), marked [`estimated`](subagent_spi::Usage::estimated), with a
//! warning naming the agent, the pointer and the problem. The answer is kept: the call did
//! its work, only its report is broken. The counts are added saturating, so `u64::MAX` spends
//! a limit and never wraps.

use subagent_spi::Usage;

use crate::HttpKindError;

/// The default of `usage_unreported_tokens`: what a call whose usage report is broken counts
/// as at least (the stock hosts' default for a remote run's broken report, too).
pub const DEFAULT_UNREPORTED_TOKENS: u64 = 100_000;

/// The largest `usage_unreported_tokens` a reference may set: a million million.
pub const UNREPORTED_TOKENS_CAP: u64 = 1_000_000_000_000;

/// The longest model name read at `usage_model`, in bytes (a longer one is not used).
pub const MAX_MODEL_NAME_BYTES: usize = 256;

/// The usage settings of a reference: at least one of the two token pointers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UsagePointers {
    input: Option<String>,
    output: Option<String>,
    model: Option<String>,
    unreported_tokens: u64,
}

impl UsagePointers {
    /// Reads the `usage_*` keys (`meta` gives a key's trimmed, non-empty value). `None` when
    /// neither token pointer is set (the call reports no tokens, as before the keys existed).
    pub(crate) fn from_meta<'a>(
        meta: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Option<Self>, HttpKindError> {
        let pointer = |key: &str| -> Result<Option<String>, HttpKindError> {
            match meta(key) {
                None => Ok(None),
                Some(p) if p.starts_with('/') => Ok(Some(p.to_string())),
                Some(p) => Err(HttpKindError::invalid(
                    key,
                    format!("`{p}` is not a JSON Pointer: it must start with `/`"),
                )),
            }
        };
        let input = pointer("usage_input")?;
        let output = pointer("usage_output")?;
        let model = pointer("usage_model")?;
        let unreported = meta("usage_unreported_tokens");
        if input.is_none() && output.is_none() {
            for (key, set) in [
                ("usage_model", model.is_some()),
                ("usage_unreported_tokens", unreported.is_some()),
            ] {
                if set {
                    return Err(HttpKindError::invalid(
                        key,
                        "set without `usage_input` or `usage_output`, so no usage is read",
                    ));
                }
            }
            return Ok(None);
        }
        let unreported_tokens = match unreported {
            None => DEFAULT_UNREPORTED_TOKENS,
            Some(s) => s
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= UNREPORTED_TOKENS_CAP)
                .ok_or_else(|| {
                    HttpKindError::invalid(
                        "usage_unreported_tokens",
                        format!("`{s}` is not a token count from 0 to {UNREPORTED_TOKENS_CAP}"),
                    )
                })?,
        };
        Ok(Some(Self {
            input,
            output,
            model,
            unreported_tokens,
        }))
    }

    /// The tokens (and model) `reply` reports, set on `usage`. A broken report counts as at
    /// least `usage_unreported_tokens`, marked estimated, and is logged as a warning.
    pub(crate) fn read(&self, agent: &str, reply: &serde_json::Value, usage: Usage) -> Usage {
        let mut problems = Vec::new();
        let mut count = |key: &str, pointer: Option<&String>| -> u64 {
            let Some(pointer) = pointer else { return 0 };
            match tokens(reply.pointer(pointer)) {
                Ok(n) => n,
                Err(problem) => {
                    problems.push(format!("`{key}` ({pointer}): {problem}"));
                    0
                }
            }
        };
        let mut input = count("usage_input", self.input.as_ref());
        let output = count("usage_output", self.output.as_ref());
        let mut usage = usage;
        if !problems.is_empty() {
            let reported = input.saturating_add(output);
            let floor = self.unreported_tokens;
            tracing::warn!(agent, reported, counted_at_least = floor, problems = %problems.join("; "),
                "the HTTP agent's reply does not report its usage as configured; counting it as an estimate");
            if reported < floor {
                input = input.saturating_add(floor - reported);
            }
            usage.estimated = true;
        }
        usage = usage.with_tokens(input, output);
        if let Some(pointer) = &self.model {
            match model(reply.pointer(pointer)) {
                Ok(name) => usage = usage.with_model(name),
                Err(problem) => tracing::warn!(agent, pointer = %pointer, problem,
                    "the HTTP agent's reply names no usable model; its tokens are counted without a price"),
            }
        }
        usage
    }
}

/// A token count: a JSON integer from 0 to `u64::MAX`.
fn tokens(value: Option<&serde_json::Value>) -> Result<u64, &'static str> {
    match value {
        None => Err("missing"),
        Some(serde_json::Value::Number(n)) => n.as_u64().ok_or(if n.is_i64() {
            "a negative number"
        } else {
            "not an integer from 0 to 2^64-1"
        }),
        Some(serde_json::Value::String(_)) => Err("a string, not a number"),
        Some(_) => Err("not a number"),
    }
}

/// A model name: a string of at most [`MAX_MODEL_NAME_BYTES`] bytes, no control characters.
fn model(value: Option<&serde_json::Value>) -> Result<&str, &'static str> {
    match value {
        None => Err("missing"),
        Some(serde_json::Value::String(s)) if s.is_empty() => Err("empty"),
        Some(serde_json::Value::String(s)) if s.len() > MAX_MODEL_NAME_BYTES => {
            Err("longer than 256 bytes")
        }
        Some(serde_json::Value::String(s)) if s.chars().any(char::is_control) => {
            Err("holds control characters")
        }
        Some(serde_json::Value::String(s)) => Ok(s),
        Some(_) => Err("not a string"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pointers(pairs: &[(&str, &str)]) -> Result<Option<UsagePointers>, HttpKindError> {
        UsagePointers::from_meta(|key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v))
    }

    fn openai() -> UsagePointers {
        pointers(&[
            ("usage_input", "/usage/prompt_tokens"),
            ("usage_output", "/usage/completion_tokens"),
            ("usage_model", "/model"),
        ])
        .unwrap()
        .unwrap()
    }

    fn read(p: &UsagePointers, reply: serde_json::Value) -> Usage {
        p.read("a", &reply, Usage::new())
    }

    #[test]
    fn without_pointers_nothing_is_read_and_lone_settings_are_refused() {
        assert_eq!(pointers(&[]).unwrap(), None);
        let err = |pairs: &[(&str, &str)]| pointers(pairs).unwrap_err().to_string();
        assert!(
            err(&[("usage_model", "/model")]).starts_with("`usage_model`: set without"),
            "{}",
            err(&[("usage_model", "/model")])
        );
        assert!(err(&[("usage_unreported_tokens", "5")]).starts_with("`usage_unreported_tokens`"));
        assert!(err(&[("usage_input", "usage.prompt_tokens")]).contains("must start with `/`"));
        for bad in ["-1", "1.5", "x", "1000000000001"] {
            assert!(
                err(&[("usage_output", "/o"), ("usage_unreported_tokens", bad)])
                    .starts_with("`usage_unreported_tokens`"),
                "{bad}"
            );
        }
        let p = pointers(&[("usage_input", "/t"), ("usage_unreported_tokens", "0")])
            .unwrap()
            .unwrap();
        assert_eq!(p.unreported_tokens, 0);
        assert_eq!(p.output, None);
    }

    #[test]
    fn well_formed_counts_and_model_are_read() {
        let u = read(
            &openai(),
            json!({"model": "gpt-x", "usage": {"prompt_tokens": 12, "completion_tokens": 34}}),
        );
        assert_eq!((u.input_tokens, u.output_tokens), (12, 34));
        assert_eq!(u.model.as_deref(), Some("gpt-x"));
        assert!(!u.estimated);
    }

    #[test]
    fn a_broken_count_is_at_least_the_estimate_never_free() {
        let p = openai();
        for (reply, why) in [
            (json!({"usage": {}}), "missing"),
            (json!({}), "missing"),
            (
                json!({"usage": {"prompt_tokens": "12", "completion_tokens": 3}}),
                "string",
            ),
            (
                json!({"usage": {"prompt_tokens": -12, "completion_tokens": 3}}),
                "negative",
            ),
            (
                json!({"usage": {"prompt_tokens": 1.5, "completion_tokens": 3}}),
                "float",
            ),
            (
                json!({"usage": {"prompt_tokens": 1e30, "completion_tokens": 3}}),
                "huge",
            ),
            (
                json!({"usage": {"prompt_tokens": null, "completion_tokens": 3}}),
                "null",
            ),
        ] {
            let u = read(&p, reply);
            assert!(u.estimated, "{why}");
            assert_eq!(u.total_tokens(), DEFAULT_UNREPORTED_TOKENS, "{why}");
        }
        // Past u64 as written on the wire (serde_json reads it as a float).
        let reply: serde_json::Value = serde_json::from_str(
            r#"{"usage": {"prompt_tokens": 18446744073709551616, "completion_tokens": 1}}"#,
        )
        .unwrap();
        assert!(read(&p, reply).estimated);
        // What is well-formed counts; the estimate is a floor, not a cap.
        let u = read(
            &p,
            json!({"usage": {"prompt_tokens": "x", "completion_tokens": 250_000}}),
        );
        assert_eq!((u.input_tokens, u.output_tokens), (0, 250_000));
        assert!(u.estimated);
        // A floor of 0 is the user's choice: estimated, counted as reported.
        let zero = pointers(&[("usage_input", "/i"), ("usage_unreported_tokens", "0")])
            .unwrap()
            .unwrap();
        let u = read(&zero, json!({}));
        assert_eq!(u.total_tokens(), 0);
        assert!(u.estimated);
    }

    #[test]
    fn the_largest_counts_saturate() {
        let u = read(
            &openai(),
            json!({"usage": {"prompt_tokens": u64::MAX, "completion_tokens": u64::MAX}}),
        );
        assert_eq!(u.total_tokens(), u64::MAX);
        assert!(!u.estimated);
    }

    #[test]
    fn a_bad_model_name_is_not_used_and_the_tokens_still_count() {
        let p = openai();
        for model in [
            json!(3),
            json!(""),
            json!("a\u{1b}[31m"),
            json!("m".repeat(257)),
        ] {
            let u = read(
                &p,
                json!({"model": model.clone(), "usage": {"prompt_tokens": 1, "completion_tokens": 2}}),
            );
            assert_eq!(u.model, None, "{model}");
            assert_eq!(u.total_tokens(), 3);
            assert!(!u.estimated);
        }
    }
}
