//! Small pieces shared by both wire formats.

use std::fmt;

use serde_json::Value;
use subagent_spi::ModelError;
use subagent_spi::chat::ChatDelta;
use subagent_sse::{SseError, SseParser};

/// A fresh `call_` id for a tool call the server sent without one (a random v4 UUID in hex).
pub(crate) fn generated_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// Hands the data of every event `chunk` completes (with `None`: the events the end of the
/// stream completes) to `on_data`, stopping at its first error. The outer error is the
/// parser's (a stream past its limits), the inner one `on_data`'s.
fn sse_events(
    parser: &mut SseParser,
    chunk: Option<&[u8]>,
    mut on_data: impl FnMut(&str) -> Result<(), ModelError>,
) -> Result<Result<(), ModelError>, SseError> {
    let mut failure = None;
    let mut each = |ev: subagent_sse::SseEvent<'_>| {
        if failure.is_none()
            && let Err(e) = on_data(ev.data)
        {
            failure = Some(e);
        }
    };
    match chunk {
        Some(bytes) => parser.feed(bytes, &mut each)?,
        None => parser.finish(&mut each)?,
    }
    Ok(failure.map_or(Ok(()), Err))
}

/// A wire format's stream state, fed the data of each server-sent event.
pub(crate) trait StreamEvents {
    /// The provider, for errors.
    fn provider(&self) -> &str;

    /// Applies the data of one event, handing what it adds to the reply to `on_delta`.
    fn on_data(
        &mut self,
        data: &str,
        on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
    ) -> Result<(), ModelError>;

    /// A [`ModelError::BadResponse`] of this provider.
    fn bad(&self, message: impl Into<String>) -> ModelError {
        ModelError::BadResponse {
            provider: self.provider().to_string(),
            message: message.into(),
        }
    }
}

/// Feeds `chunk` (with `None`: the end of the stream) to `state`, event by event; a stream past
/// the parser's limits is a bad response.
pub(crate) fn decode_events(
    parser: &mut SseParser,
    state: &mut impl StreamEvents,
    chunk: Option<&[u8]>,
    on_delta: &(dyn Fn(ChatDelta) + Send + Sync),
) -> Result<(), ModelError> {
    sse_events(parser, chunk, |data| state.on_data(data, on_delta))
        .map_err(|e| state.bad(e.to_string()))?
}

/// A request body as the bytes to send.
pub(crate) fn encode_body(body: &Value) -> Result<bytes::Bytes, ModelError> {
    serde_json::to_vec(body)
        .map(bytes::Bytes::from)
        .map_err(|e| ModelError::Config(format!("cannot encode the request: {e}")))
}

/// Tool-call arguments as received (a JSON string, possibly empty) into a JSON value.
///
/// Empty or whitespace means `{}`. Text that is not valid JSON is kept as a JSON string so the
/// tool's input validation can tell the model what was wrong, instead of failing the whole call.
pub(crate) fn parse_arguments(provider: &str, tool: &str, text: &str) -> Value {
    let t = text.trim();
    if t.is_empty() {
        return Value::Object(Default::default());
    }
    match serde_json::from_str::<Value>(t) {
        Ok(Value::Null) => Value::Object(Default::default()),
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(
                provider,
                tool,
                error = %e,
                "tool-call arguments are not valid JSON; passing them on as a string"
            );
            Value::String(text.to_string())
        }
    }
}

/// A temperature as JSON with its shortest decimal form (`0.7`, not `0.699999988079071`).
pub(crate) fn temperature_json(t: f32) -> Value {
    let shortest: f64 = t.to_string().parse().unwrap_or(f64::from(t));
    serde_json::Number::from_f64(shortest)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// An API key that never shows in `Debug` output or logs.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiKey(pub String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_empty_object_string_and_invalid() {
        assert_eq!(parse_arguments("p", "t", ""), json!({}));
        assert_eq!(parse_arguments("p", "t", "  "), json!({}));
        assert_eq!(parse_arguments("p", "t", "null"), json!({}));
        assert_eq!(parse_arguments("p", "t", r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(parse_arguments("p", "t", "{oops"), json!("{oops"));
    }

    #[test]
    fn temperature_keeps_its_short_form() {
        assert_eq!(temperature_json(0.7).to_string(), "0.7");
        assert_eq!(temperature_json(1.0).to_string(), "1.0");
        assert_eq!(temperature_json(f32::NAN), Value::Null);
    }

    #[test]
    fn api_key_debug_is_redacted() {
        assert_eq!(
            format!("{:?}", ApiKey("sk-secret".into())),
            "\"<redacted>\""
        );
    }

    #[test]
    fn generated_ids_are_unique() {
        let a = generated_call_id();
        let b = generated_call_id();
        assert!(a.starts_with("call_") && b.starts_with("call_") && a != b);
    }
}
