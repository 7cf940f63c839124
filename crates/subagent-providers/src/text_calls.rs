//! Tool calls a model wrote as text, recovered where the server did not parse them.
//!
//! Small local models served by OpenAI-compatible servers often write a tool call into the
//! reply's text instead of the structured `tool_calls` field, in one of three forms:
//!
//! - bare JSON: `{"name": "Task", "arguments": {...}}` (one or more objects, or an array);
//! - a fenced block: `` ```json\n{"name": ..., "arguments": ...}\n``` ``;
//! - Hermes / Qwen tags: `<tool_call>{"name": ..., "arguments": ...}</tool_call>`.
//!
//! [`recover`] turns such a reply into tool calls, and only such a reply: the bare and fenced
//! forms must be the whole reply (whitespace aside), a tagged call may follow some text (kept as
//! the reply's text) but nothing but whitespace may stand between or after the tags. Each
//! object must have a tool name and nothing but `name`, `arguments` (or `parameters`), `id`,
//! `type` and `function` keys, so ordinary JSON in an answer is left alone. The recovered calls
//! are ordinary tool calls: the agent loop runs them through the same permission checks as any.

use serde_json::{Map, Value};
use subagent_spi::chat::{ChatResponse, StopReason, ToolCall};

use crate::common::generated_call_id;

/// Most calls recovered from one reply; a reply with more is left as text.
pub const MAX_TEXT_TOOL_CALLS: usize = 16;

/// Longest tool name accepted in a recovered call, in bytes.
const MAX_NAME_LEN: usize = 128;

/// The keys a tool-call object may have.
const CALL_KEYS: &[&str] = &["name", "arguments", "parameters", "id", "type", "function"];

/// When `response` has no tool calls and its text is tool calls in one of the recognised
/// forms, moves them into [`ChatResponse::tool_calls`] (the text keeps only what preceded a
/// tagged call) and sets the stop reason to [`StopReason::ToolUse`]. Returns how many calls
/// were recovered.
pub(crate) fn recover_into(provider: &str, response: &mut ChatResponse) -> usize {
    if !response.tool_calls.is_empty() || response.content.trim().is_empty() {
        return 0;
    }
    let Some((text, calls)) = recover(&response.content) else {
        return 0;
    };
    let n = calls.len();
    tracing::debug!(
        provider,
        calls = n,
        "tool calls recovered from the reply's text"
    );
    response.content = text;
    response.tool_calls = calls;
    response.stop_reason = StopReason::ToolUse;
    n
}

/// The text left and the calls, when `content` is tool calls in a recognised form.
pub(crate) fn recover(content: &str) -> Option<(String, Vec<ToolCall>)> {
    let trimmed = content.trim();
    let (text, values) = if let Some(start) = trimmed.find("<tool_call>") {
        let before = trimmed[..start].trim_end().to_string();
        (before, tagged(&trimmed[start..])?)
    } else if trimmed.starts_with("```") {
        (String::new(), fenced(trimmed)?)
    } else if trimmed.starts_with('{') || trimmed.starts_with('[') {
        (String::new(), json_values(trimmed)?)
    } else {
        return None;
    };
    let mut calls = Vec::new();
    for v in values {
        match v {
            Value::Array(items) => {
                for item in items {
                    calls.push(call_of(item)?);
                }
            }
            other => calls.push(call_of(other)?),
        }
        if calls.len() > MAX_TEXT_TOOL_CALLS {
            return None;
        }
    }
    (!calls.is_empty()).then_some((text, calls))
}

/// The JSON values of `<tool_call>...</tool_call>` blocks (the last one may be unclosed); only
/// whitespace may stand between and after them.
fn tagged(mut rest: &str) -> Option<Vec<Value>> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut values = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let body_start = rest.strip_prefix(OPEN)?;
        let (body, after) = match body_start.find(CLOSE) {
            Some(end) => (&body_start[..end], &body_start[end + CLOSE.len()..]),
            None => (body_start, ""),
        };
        let body = body.trim();
        let inner = if body.starts_with("```") {
            fenced(body)?
        } else {
            json_values(body)?
        };
        values.extend(inner);
        rest = after;
    }
    Some(values)
}

/// The JSON values of one or more fenced blocks (any language tag) separated by whitespace.
fn fenced(mut rest: &str) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let after_ticks = rest.strip_prefix("```")?;
        // The language tag runs to the end of the line.
        let body_start = after_ticks.find('\n').map(|i| &after_ticks[i + 1..])?;
        let tag = &after_ticks[..after_ticks.len() - body_start.len()];
        if tag.trim().contains(char::is_whitespace) {
            return None;
        }
        let end = body_start.find("```")?;
        values.extend(json_values(body_start[..end].trim())?);
        rest = &body_start[end + 3..];
    }
    Some(values)
}

/// One or more JSON values separated by whitespace, making up all of `text`.
fn json_values(text: &str) -> Option<Vec<Value>> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut values = Vec::new();
    for v in stream.by_ref() {
        values.push(v.ok()?);
        if values.len() > MAX_TEXT_TOOL_CALLS {
            return None;
        }
    }
    (stream.byte_offset() == text.len() && !values.is_empty()).then_some(values)
}

/// A tool call from `{"name", "arguments"|"parameters"}` or `{"function": {...}}`.
fn call_of(value: Value) -> Option<ToolCall> {
    let Value::Object(mut map) = value else {
        return None;
    };
    if map.keys().any(|k| !CALL_KEYS.contains(&k.as_str())) {
        return None;
    }
    let id = map
        .remove("id")
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|s| !s.is_empty() && s.len() <= MAX_NAME_LEN);
    if let Some(Value::Object(inner)) = map.remove("function") {
        if map.contains_key("name") || inner.keys().any(|k| !CALL_KEYS.contains(&k.as_str())) {
            return None;
        }
        map = inner;
    }
    let name = match map.remove("name") {
        Some(Value::String(n)) if valid_name(&n) => n,
        _ => return None,
    };
    let arguments = match map.remove("arguments").or_else(|| map.remove("parameters")) {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(o)) => Value::Object(o),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(o)) => Value::Object(o),
            _ => return None,
        },
        Some(_) => return None,
    };
    Some(ToolCall::new(
        id.unwrap_or_else(generated_call_id),
        name,
        arguments,
    ))
}

/// A tool name as models write them: letters, digits, `_`, `-`, `.`, `:`, spaces inside.
fn valid_name(name: &str) -> bool {
    let n = name.trim();
    !n.is_empty()
        && n.len() == name.len()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | ' '))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(content: &str) -> Option<(String, Vec<(String, Value)>)> {
        recover(content).map(|(t, calls)| {
            (
                t,
                calls.into_iter().map(|c| (c.name, c.arguments)).collect(),
            )
        })
    }

    #[test]
    fn the_three_forms_are_recovered() {
        let want = (
            String::new(),
            vec![("Task".to_string(), json!({"prompt": "17 * 23"}))],
        );
        for text in [
            r#"{"name": "Task", "arguments": {"prompt": "17 * 23"}}"#,
            "  {\"name\":\"Task\",\"arguments\":\"{\\\"prompt\\\": \\\"17 * 23\\\"}\"}\n",
            "```json\n{\"name\": \"Task\", \"arguments\": {\"prompt\": \"17 * 23\"}}\n```",
            "```\n{\"name\": \"Task\", \"parameters\": {\"prompt\": \"17 * 23\"}}\n```",
            "<tool_call>\n{\"name\": \"Task\", \"arguments\": {\"prompt\": \"17 * 23\"}}\n</tool_call>",
            "<tool_call>{\"name\": \"Task\", \"arguments\": {\"prompt\": \"17 * 23\"}}",
            r#"[{"type": "function", "function": {"name": "Task", "arguments": {"prompt": "17 * 23"}}}]"#,
        ] {
            assert_eq!(names(text), Some(want.clone()), "{text}");
        }
    }

    #[test]
    fn several_calls_and_text_before_tags() {
        let (text, calls) = names(
            "Let me check.\n<tool_call>{\"name\": \"Read\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n<tool_call>{\"name\": \"Read\", \"arguments\": {\"path\": \"b\"}}</tool_call>",
        )
        .unwrap();
        assert_eq!(text, "Let me check.");
        assert_eq!(calls.len(), 2);
        let (_, calls) = names("{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\"}").unwrap();
        assert_eq!(calls.len(), 2);
    }

    #[test]
    fn ordinary_answers_are_left_alone() {
        for text in [
            "391",
            "The result is {\"name\": \"Task\", \"arguments\": {}}",
            "{\"name\": \"Alice\", \"age\": 3}",
            "{\"answer\": 391}",
            "```json\n{\"name\": \"Task\", \"arguments\": {}}\n```\nThat is how you call it.",
            "<tool_call>{\"name\": \"Task\"}</tool_call> and then some text",
            "{\"name\": \"\", \"arguments\": {}}",
            "{\"name\": \"a\\u001b[31m\", \"arguments\": {}}",
            "{\"name\": \"Task\", \"arguments\": \"not json\"}",
            "{\"name\": \"Task\", \"arguments\": {}",
            "[]",
        ] {
            assert_eq!(names(text), None, "{text}");
        }
    }

    #[test]
    fn too_many_calls_stay_text() {
        let one = r#"{"name": "a", "arguments": {}}"#;
        let many = vec![one; MAX_TEXT_TOOL_CALLS + 1].join("\n");
        assert_eq!(names(&many), None);
        let ok = vec![one; MAX_TEXT_TOOL_CALLS].join("\n");
        assert_eq!(names(&ok).unwrap().1.len(), MAX_TEXT_TOOL_CALLS);
        let array = format!("[{}]", vec![one; MAX_TEXT_TOOL_CALLS + 1].join(","));
        assert_eq!(names(&array), None);
    }

    #[test]
    fn a_response_with_structured_calls_is_untouched() {
        let mut r = ChatResponse::new(
            r#"{"name": "a", "arguments": {}}"#,
            StopReason::ToolUse,
            Default::default(),
            "m",
        )
        .with_tool_calls(vec![ToolCall::new("1", "b", json!({}))]);
        assert_eq!(recover_into("p", &mut r), 0);
        assert_eq!(r.tool_calls[0].name, "b");
        let mut r = ChatResponse::new(
            "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>",
            StopReason::EndTurn,
            Default::default(),
            "m",
        );
        assert_eq!(recover_into("p", &mut r), 1);
        assert_eq!(r.content, "");
        assert_eq!(r.stop_reason, StopReason::ToolUse);
    }
}
