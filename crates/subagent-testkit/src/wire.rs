//! Rendering replies as OpenAI Chat Completions or Anthropic Messages wire bytes.

use serde_json::{Value, json};

use crate::reply::{ErrorBody, Reply, ReplyBody, ScriptedToolCall, ScriptedUsage};

/// Which API an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// OpenAI Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// A rendered response: status, headers and body pieces (one piece per write).
pub(crate) struct Rendered {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    pub pieces: Vec<Vec<u8>>,
}

/// What the request asked for that shapes the answer.
pub(crate) struct RequestShape<'a> {
    pub format: WireFormat,
    pub stream: bool,
    pub include_usage: bool,
    pub model: &'a str,
    pub seq: u64,
}

pub(crate) fn error_kind(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// The provider's own error JSON for `message`.
pub(crate) fn error_json(format: WireFormat, status: u16, message: &str) -> String {
    let kind = error_kind(status);
    let v = match format {
        WireFormat::OpenAi => json!({
            "error": {"message": message, "type": kind, "param": null, "code": null}
        }),
        WireFormat::Anthropic => json!({
            "type": "error",
            "error": {"type": kind, "message": message}
        }),
    };
    v.to_string()
}

fn split_chars(s: &str, n: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in s.char_indices() {
        if count == n {
            out.push(&s[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

pub(crate) fn render(reply: &Reply, shape: &RequestShape<'_>) -> Rendered {
    let mut rendered = match &reply.body {
        ReplyBody::Error { status, body } => {
            let text = match body {
                ErrorBody::Raw(s) => s.clone(),
                ErrorBody::Message(m) => error_json(shape.format, *status, m),
            };
            Rendered {
                status: *status,
                content_type: "application/json".into(),
                headers: Vec::new(),
                pieces: vec![text.into_bytes()],
            }
        }
        ReplyBody::Raw {
            status,
            content_type,
            body,
        } => Rendered {
            status: *status,
            content_type: content_type.clone(),
            headers: Vec::new(),
            pieces: vec![body.clone()],
        },
        ReplyBody::Message { text, tool_calls } => {
            let model = reply.model.as_deref().unwrap_or(shape.model);
            let msg = Msg {
                text,
                calls: tool_calls,
                reply,
                model,
                seq: shape.seq,
            };
            match (shape.format, shape.stream) {
                (WireFormat::OpenAi, false) => json_rendered(openai_message(&msg)),
                (WireFormat::OpenAi, true) => {
                    sse_rendered(openai_stream(&msg, shape.include_usage))
                }
                (WireFormat::Anthropic, false) => json_rendered(anthropic_message(&msg)),
                (WireFormat::Anthropic, true) => sse_rendered(anthropic_stream(&msg)),
            }
        }
    };
    rendered.headers.extend(reply.headers.iter().cloned());
    if let Some(size) = reply.write_size {
        let all: Vec<u8> = rendered.pieces.concat();
        rendered.pieces = all.chunks(size).map(<[u8]>::to_vec).collect();
    }
    rendered
}

fn json_rendered(v: Value) -> Rendered {
    Rendered {
        status: 200,
        content_type: "application/json".into(),
        headers: Vec::new(),
        pieces: vec![v.to_string().into_bytes()],
    }
}

fn sse_rendered(pieces: Vec<Vec<u8>>) -> Rendered {
    Rendered {
        status: 200,
        content_type: "text/event-stream".into(),
        headers: vec![("cache-control".into(), "no-cache".into())],
        pieces,
    }
}

struct Msg<'a> {
    text: &'a str,
    calls: &'a [ScriptedToolCall],
    reply: &'a Reply,
    model: &'a str,
    seq: u64,
}

impl Msg<'_> {
    /// The scripted stop reason, else the wire format's for a reply without (`plain`) or with
    /// (`with_calls`) tool calls.
    fn stop_reason(&self, plain: &str, with_calls: &str) -> String {
        self.reply.stop_reason.clone().unwrap_or_else(|| {
            if self.calls.is_empty() {
                plain
            } else {
                with_calls
            }
            .to_string()
        })
    }

    fn call_id(&self, i: usize, prefix: &str) -> Option<String> {
        if self.reply.omit_tool_call_ids {
            return None;
        }
        Some(
            self.calls[i]
                .id
                .clone()
                .unwrap_or_else(|| format!("{prefix}_{}_{i}", self.seq)),
        )
    }

    fn usage(&self) -> ScriptedUsage {
        self.reply.usage
    }
}

fn openai_usage(u: ScriptedUsage) -> Value {
    let prompt = u.input_tokens + u.cache_read_tokens;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": 0}
    })
}

fn openai_finish(msg: &Msg<'_>) -> String {
    msg.stop_reason("stop", "tool_calls")
}

fn openai_message(msg: &Msg<'_>) -> Value {
    let mut message = json!({"role": "assistant", "refusal": null});
    message["content"] = if msg.text.is_empty() && !msg.calls.is_empty() {
        Value::Null
    } else {
        Value::String(msg.text.to_string())
    };
    if !msg.calls.is_empty() {
        let calls: Vec<Value> = msg
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut call = json!({
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments.to_string()}
                });
                if let Some(id) = msg.call_id(i, "call") {
                    call["id"] = Value::String(id);
                }
                call
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": format!("chatcmpl-scripted-{}", msg.seq),
        "object": "chat.completion",
        "created": 1_700_000_000u64 + msg.seq,
        "model": msg.model,
        "system_fingerprint": "fp_scripted",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": openai_finish(msg)
        }],
        "usage": openai_usage(msg.usage())
    })
}

fn sse_data(v: &Value) -> Vec<u8> {
    format!("data: {v}\n\n").into_bytes()
}

fn openai_stream(msg: &Msg<'_>, include_usage: bool) -> Vec<Vec<u8>> {
    let id = format!("chatcmpl-scripted-{}", msg.seq);
    let created = 1_700_000_000u64 + msg.seq;
    let chunk = |delta: Value, finish: Value| {
        let mut c = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": msg.model,
            "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        });
        if include_usage {
            c["usage"] = Value::Null;
        }
        sse_data(&c)
    };
    let n = msg.reply.fragment_chars;
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    )];
    for frag in split_chars(msg.text, n) {
        out.push(chunk(json!({"content": frag}), Value::Null));
    }
    for (i, call) in msg.calls.iter().enumerate() {
        let mut head = json!({
            "index": i,
            "type": "function",
            "function": {"name": call.name, "arguments": ""}
        });
        if let Some(id) = msg.call_id(i, "call") {
            head["id"] = Value::String(id);
        }
        out.push(chunk(json!({"tool_calls": [head]}), Value::Null));
        let args = call.arguments.to_string();
        for frag in split_chars(&args, n) {
            out.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": frag}}]}),
                Value::Null,
            ));
        }
    }
    out.push(chunk(json!({}), Value::String(openai_finish(msg))));
    if include_usage {
        out.push(sse_data(&json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": msg.model,
            "system_fingerprint": "fp_scripted",
            "choices": [],
            "usage": openai_usage(msg.usage())
        })));
    }
    out.push(b"data: [DONE]\n\n".to_vec());
    out
}

fn anthropic_stop(msg: &Msg<'_>) -> String {
    msg.stop_reason("end_turn", "tool_use")
}

fn anthropic_input(args: &Value) -> Value {
    if args.is_object() {
        args.clone()
    } else {
        json!({})
    }
}

fn anthropic_message(msg: &Msg<'_>) -> Value {
    let mut content = Vec::new();
    if !msg.text.is_empty() {
        content.push(json!({"type": "text", "text": msg.text}));
    }
    for (i, call) in msg.calls.iter().enumerate() {
        let mut block = json!({
            "type": "tool_use",
            "name": call.name,
            "input": anthropic_input(&call.arguments)
        });
        if let Some(id) = msg.call_id(i, "toolu") {
            block["id"] = Value::String(id);
        }
        content.push(block);
    }
    let u = msg.usage();
    json!({
        "id": format!("msg_scripted_{}", msg.seq),
        "type": "message",
        "role": "assistant",
        "model": msg.model,
        "content": content,
        "stop_reason": anthropic_stop(msg),
        "stop_sequence": null,
        "usage": {
            "input_tokens": u.input_tokens,
            "cache_creation_input_tokens": u.cache_creation_tokens,
            "cache_read_input_tokens": u.cache_read_tokens,
            "output_tokens": u.output_tokens
        }
    })
}

fn sse_event(name: &str, v: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {v}\n\n").into_bytes()
}

fn anthropic_stream(msg: &Msg<'_>) -> Vec<Vec<u8>> {
    let u = msg.usage();
    let n = msg.reply.fragment_chars;
    let mut out = vec![sse_event(
        "message_start",
        &json!({
            "type": "message_start",
            "message": {
                "id": format!("msg_scripted_{}", msg.seq),
                "type": "message",
                "role": "assistant",
                "model": msg.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": u.input_tokens,
                    "cache_creation_input_tokens": u.cache_creation_tokens,
                    "cache_read_input_tokens": u.cache_read_tokens,
                    "output_tokens": 1
                }
            }
        }),
    )];
    out.push(sse_event("ping", &json!({"type": "ping"})));
    let mut blocks = Vec::new();
    if !msg.text.is_empty() {
        let deltas = split_chars(msg.text, n)
            .into_iter()
            .map(|frag| json!({"type": "text_delta", "text": frag}));
        blocks.push((
            json!({"type": "text", "text": ""}),
            deltas.collect::<Vec<_>>(),
        ));
    }
    for (i, call) in msg.calls.iter().enumerate() {
        let mut start = json!({"type": "tool_use", "name": call.name, "input": {}});
        if let Some(id) = msg.call_id(i, "toolu") {
            start["id"] = Value::String(id);
        }
        let args = anthropic_input(&call.arguments).to_string();
        let mut frags = vec![""];
        frags.extend(split_chars(&args, n));
        let deltas = frags
            .into_iter()
            .map(|frag| json!({"type": "input_json_delta", "partial_json": frag}));
        blocks.push((start, deltas.collect()));
    }
    for (index, (start, deltas)) in blocks.into_iter().enumerate() {
        out.push(sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            out.push(sse_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        out.push(sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    out.push(sse_event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": anthropic_stop(msg), "stop_sequence": null},
            "usage": {"output_tokens": u.output_tokens}
        }),
    ));
    out.push(sse_event("message_stop", &json!({"type": "message_stop"})));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_chars_respects_char_boundaries() {
        assert_eq!(
            split_chars("héllo wörld", 3),
            vec!["hél", "lo ", "wör", "ld"]
        );
        assert!(split_chars("", 3).is_empty());
    }
}
