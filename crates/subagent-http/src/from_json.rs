//! The JSON form of a reference: one object, e.g. a file beside a host's configuration.

use subagent_spi::SubagentReference;

use crate::{HttpKindError, KEYS, KIND};

/// The largest JSON text [`reference_from_json`] reads: 64 KiB.
pub const MAX_REFERENCE_JSON_BYTES: usize = 64 * 1024;

/// Reads an `HTTP` reference from one JSON object: `url` is the endpoint, `body` the request
/// template as a JSON value, every other field a metadata key of the crate docs' table
/// (strings, or numbers for `timeout_secs`, `max_response_bytes` and
/// `usage_unreported_tokens`). Unknown fields are errors. The reference is
/// checked when it is resolved, like any other.
///
/// ```
/// let r = subagent_http::reference_from_json(r#"{
///     "url": "https://api.example.com/v1/ask",
///     "name": "asker",
///     "body": {"question": "{{prompt}}", "max_tokens": 200},
///     "answer": "/answer/text",
///     "timeout_secs": 30
/// }"#).unwrap();
/// assert_eq!(r.uri, "https://api.example.com/v1/ask");
/// assert_eq!(r.metadata("body"), Some(r#"{"max_tokens":200,"question":"{{prompt}}"}"#));
/// assert_eq!(r.metadata("timeout_secs"), Some("30"));
/// ```
pub fn reference_from_json(text: &str) -> Result<SubagentReference, HttpKindError> {
    if text.len() > MAX_REFERENCE_JSON_BYTES {
        return Err(HttpKindError::invalid(
            "json",
            format!(
                "{} bytes; a reference is at most {MAX_REFERENCE_JSON_BYTES}",
                text.len()
            ),
        ));
    }
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| HttpKindError::invalid("json", format!("not JSON: {e}")))?;
    let serde_json::Value::Object(fields) = value else {
        return Err(HttpKindError::invalid("json", "not a JSON object"));
    };
    let url = match fields.get("url") {
        Some(serde_json::Value::String(u)) => u.clone(),
        Some(_) => return Err(HttpKindError::invalid("url", "not a string")),
        None => return Err(HttpKindError::invalid("url", "missing")),
    };
    let mut reference = SubagentReference::new(url, KIND);
    for (key, value) in fields {
        let text = match (key.as_str(), value) {
            ("url", _) => continue,
            ("body", v) => v.to_string(),
            (k, _) if !KEYS.contains(&k) => return Err(HttpKindError::UnknownKey { key }),
            (_, serde_json::Value::String(s)) => s,
            (
                "timeout_secs" | "max_response_bytes" | "usage_unreported_tokens",
                serde_json::Value::Number(n),
            ) => n.to_string(),
            (_, _) => return Err(HttpKindError::invalid(&key, "not a string")),
        };
        reference = reference.with_metadata(key, text);
    }
    Ok(reference)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_json_names_the_field() {
        let e = |t: &str| reference_from_json(t).unwrap_err().to_string();
        assert_eq!(e("[]"), "`json`: not a JSON object");
        assert_eq!(e(r#"{"name": "a"}"#), "`url`: missing");
        assert!(e(r#"{"url": "https://h/", "nmae": "a"}"#).starts_with("unknown key `nmae`"));
        assert_eq!(
            e(r#"{"url": "https://h/", "name": 3}"#),
            "`name`: not a string"
        );
        assert!(e(&" ".repeat(MAX_REFERENCE_JSON_BYTES + 1)).contains("at most 65536"));
    }
}
