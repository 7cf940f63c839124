//! The JSON-RPC 2.0 binding: one `POST {agent}` endpoint for the 1.0 methods (PascalCase,
//! ProtoJSON shapes) and the 0.3 methods (slash names, kind-tagged shapes); the envelope is
//! read in one pass, `params` once the method is known.

mod one_pass;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::StatusCode;
use http::request::Parts;
use serde_json::Value;
use serde_json::value::RawValue;

use super::calls::{
    create_push_config, delete_push_config, extended_card, get_push_config, list_push_configs,
    send, subscribe,
};
use super::reply::{Wire, error_for, rpc_error, rpc_error_for, rpc_ok, task_reply};
use super::request::{
    check_extensions, content_type_error, first_byte, json_content_type, optional_params,
    parse_params, read_body, requested_version,
};
use super::{AgentCtx, Hosted, Shared};
use crate::server::engine::ApiError;
use crate::types::jsonrpc::{RequestId, codes};
use crate::types::{ProtocolVersion, json_error_message, v1, v03};

/// `POST {agent}` (and `{agent}/`).
pub(super) async fn endpoint(State(ctx): State<AgentCtx>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    jsonrpc(&ctx.shared, ctx.agent(), &parts, body).await
}

pub(super) fn is_v1_method(m: &str) -> bool {
    !m.contains('/')
}

pub(super) async fn jsonrpc(
    shared: &Arc<Shared>,
    agent: &Hosted,
    parts: &Parts,
    body: Body,
) -> Response {
    let header_version = requested_version(parts);
    let v1_hint = !matches!(header_version, Ok(Some(ProtocolVersion::V03)) | Ok(None));
    let body = match read_body(&shared.cfg, &parts.headers, body).await {
        Ok(b) => b,
        Err(e) => return e.rpc(v1_hint),
    };
    if !json_content_type(&parts.headers) {
        return rpc_error(
            StatusCode::OK,
            &RequestId::Null,
            &content_type_error(&parts.headers),
            v1_hint,
        );
    }
    // JSON-RPC 2.0 batches (a top-level array) are not supported: the whole batch gets one
    // InvalidRequest error (as the spec answers an empty batch). Checked on the first byte, so
    // an array is never read as a positional request either (serde reads structs from arrays).
    if first_byte(&body) == Some(b'[') {
        let err = match serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
            Err(e) => ApiError::new(
                codes::PARSE_ERROR,
                format!("invalid JSON: {}", json_error_message(&e)),
            ),
            Ok(_) => ApiError::new(
                codes::INVALID_REQUEST,
                "JSON-RPC batch requests (a top-level array) are not supported by this server; \
                 send one request object per HTTP request",
            ),
        };
        return rpc_error(StatusCode::OK, &RequestId::Null, &err, v1_hint);
    }
    // A 1.0 send (the usual request) is read in one pass where it can be (see `one_pass`);
    // else one pass over the envelope, the params kept as borrowed raw text.
    let (head, one_pass_send) = match one_pass::read(&body) {
        Some(s) => (s.head, Some(s.request)),
        None => match serde_json::from_slice::<Head<'_>>(&body) {
            Ok(h) => (h, None),
            Err(e) => {
                // serde stops at the first wrong type (`3 garbage` fails as "an integer, expected a
                // struct"): on this error path, a full syntax pass tells invalid JSON (-32700) from
                // a JSON value that is not a request (-32600).
                let parse = |e: &serde_json::Error| {
                    ApiError::new(
                        codes::PARSE_ERROR,
                        format!("invalid JSON: {}", json_error_message(e)),
                    )
                };
                let err = if e.is_syntax() || e.is_eof() {
                    parse(&e)
                } else if let Err(syntax) = serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
                    parse(&syntax)
                } else {
                    ApiError::new(
                        codes::INVALID_REQUEST,
                        format!(
                            "a JSON-RPC request must be an object with `jsonrpc`, `method` and `id`: {}",
                            json_error_message(&e)
                        ),
                    )
                };
                return rpc_error(StatusCode::OK, &RequestId::Null, &err, v1_hint);
            }
        },
    };
    let invalid = |id: &RequestId, msg: &str| {
        rpc_error(
            StatusCode::OK,
            id,
            &ApiError::new(codes::INVALID_REQUEST, msg),
            v1_hint,
        )
    };
    // An absent `id` makes a notification; an explicit `"id": null` is a request (answered
    // with `"id": null`), as JSON-RPC 2.0 says.
    let notification = head.id.is_none();
    let id = match head.id {
        None | Some(Value::Null) => RequestId::Null,
        Some(Value::String(s)) => RequestId::Str(s),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => RequestId::Number(i),
            None => return invalid(&RequestId::Null, "`id` must be an integer or a string"),
        },
        Some(_) => return invalid(&RequestId::Null, "`id` must be a string, a number or null"),
    };
    if head.jsonrpc.as_ref().and_then(JsonStrOrOther::as_str) != Some("2.0") {
        return invalid(&id, "`jsonrpc` must be \"2.0\"");
    }
    let method = match head.method.as_ref().and_then(JsonStrOrOther::as_str) {
        Some(m) => m,
        None => return invalid(&id, "`method` must be a string"),
    };
    let v1m = is_v1_method(method);
    let wire = if v1m {
        Wire::RpcV1(id.clone())
    } else {
        Wire::RpcV03(id.clone())
    };
    let sse_errors = !v1m && streams_v03(method) && wants_sse(&parts.headers);
    let mut failed = true;
    let answer = match header_version {
        Err(e) => rpc_error_for(&id, &e, true),
        Ok(_) => match check_extensions(agent, &parts.headers) {
            Err(e) => error_for(&wire, &e),
            Ok(()) => {
                let request = match one_pass_send {
                    Some(req) => Some(Ok((req, method == v1::methods::SEND_STREAMING_MESSAGE))),
                    None => send_request(shared, method, head.params),
                };
                let result = match request {
                    // A send's params are now in the form the engine keeps: the body is
                    // released before the handler runs, so a large message is held once,
                    // not twice, while it is served.
                    Some(Ok((req, streaming))) => {
                        drop(body);
                        send(shared, agent, req, streaming, &wire).await
                    }
                    Some(Err(e)) => Err(e),
                    None => {
                        rpc_call(shared, agent, method, head.params, &wire, &parts.headers).await
                    }
                };
                match result {
                    Ok(r) => {
                        failed = false;
                        r
                    }
                    Err(e) if sse_errors => sse_error(&wire, &e),
                    Err(e) => error_for(&wire, &e),
                }
            }
        },
    };
    // A2A 0.3 has no notifications: its schema requires `id` on every A2A request, and the
    // 0.3 SDKs (and the 0.3 TCK) answer an id-less call that fails with its error. So a
    // failing call of the 0.3 namespace is answered (`"id": null`); everything else without
    // `id` is a JSON-RPC notification (see docs/a2a-conformance.md).
    if notification && (v1m || !failed) {
        // A valid notification is executed but never answered (JSON-RPC 2.0 §4.1). Over HTTP
        // that is 204 No Content: the exchange still needs a status, and 204 says plainly that
        // no body follows (as the JSON-RPC-over-HTTP conventions do), unlike a 200 with an
        // empty body that a client would try to parse.
        drop(answer);
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        return r;
    }
    answer
}

/// The 0.3 methods answered by a stream.
fn streams_v03(method: &str) -> bool {
    matches!(
        method,
        crate::types::v03::methods::MESSAGE_STREAM | crate::types::v03::methods::TASKS_RESUBSCRIBE
    )
}

/// True when the client asks for an event stream (`Accept: text/event-stream`).
fn wants_sse(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

/// The error of a 0.3 streaming call, for a client that asked for an event stream: one SSE
/// event holding the JSON-RPC error response (0.3's `SendStreamingMessageResponse` is a
/// success or an error response), as the 0.3 SDKs answer. ServerBusy stays a 503.
fn sse_error(wire: &Wire, e: &ApiError) -> Response {
    let Wire::RpcV03(id) = wire else {
        return error_for(wire, e);
    };
    if e.code == codes::SERVER_BUSY {
        return error_for(wire, e);
    }
    let err = super::reply::rpc_error_object(e, false);
    let mut body = b"data: ".to_vec();
    body.extend_from_slice(&super::reply::json_bytes(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": err,
    })));
    body.extend_from_slice(b"\n\n");
    let mut r = Response::new(Body::from(body));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    r
}

/// Reads a member that is present, `null` included (an absent member stays `None` through
/// `#[serde(default)]`), so `"id": null` is told from no `id` at all.
pub(super) fn present_value<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(d).map(Some)
}

/// The JSON-RPC envelope, read in one pass; `params` stays raw text until the method is known.
#[derive(serde::Deserialize)]
pub(super) struct Head<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<JsonStrOrOther<'a>>,
    #[serde(default, deserialize_with = "present_value")]
    id: Option<Value>,
    #[serde(default, borrow)]
    method: Option<JsonStrOrOther<'a>>,
    /// The params as raw JSON text (borrowed), parsed once the method is known.
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

impl<'a> Head<'a> {
    /// An envelope whose params were read already (see `one_pass`).
    pub(super) fn new(
        jsonrpc: Option<JsonStrOrOther<'a>>,
        id: Option<Value>,
        method: Option<JsonStrOrOther<'a>>,
    ) -> Self {
        Self {
            jsonrpc,
            id,
            method,
            params: None,
        }
    }

    /// The method, when it is a string.
    #[cfg(test)]
    pub(super) fn method_str(&self) -> Option<&str> {
        self.method.as_ref().and_then(JsonStrOrOther::as_str)
    }
}

/// A string (borrowed when it has no escapes) or any other JSON value (skipped). Written by
/// hand: a derived `#[serde(untagged)]` enum buffers the value into an intermediate tree first.
pub(super) enum JsonStrOrOther<'a> {
    Str(std::borrow::Cow<'a, str>),
    Other,
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for JsonStrOrOther<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = JsonStrOrOther<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Str(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Str(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Str(std::borrow::Cow::Owned(v)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(JsonStrOrOther::Other)
            }
            fn visit_some<D2: serde::Deserializer<'de>>(
                self,
                d: D2,
            ) -> Result<Self::Value, D2::Error> {
                d.deserialize_any(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(JsonStrOrOther::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(JsonStrOrOther::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl JsonStrOrOther<'_> {
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            JsonStrOrOther::Str(s) => Some(s),
            JsonStrOrOther::Other => None,
        }
    }
}

/// Every method but the sends, which [`jsonrpc`] starts itself (see [`send_request`]).
pub(super) async fn rpc_call(
    shared: &Arc<Shared>,
    agent: &Hosted,
    method: &str,
    params: Option<&RawValue>,
    wire: &Wire,
    headers: &http::HeaderMap,
) -> Result<Response, ApiError> {
    use crate::types::v1::methods as m1;
    use crate::types::v03::methods as m03;
    match method {
        m1::GET_TASK => {
            let req: v1::GetTaskRequest = parse_params(params, method)?;
            let t = agent.engine.get(&req.id, req.history_length).await?;
            Ok(task_reply(wire, t))
        }
        m03::TASKS_GET => {
            let req: v03::TaskQueryParams = parse_params(params, method)?;
            let t = agent.engine.get(&req.id, req.history_length).await?;
            Ok(task_reply(wire, t))
        }
        m1::LIST_TASKS => {
            let req: v1::ListTasksRequest = optional_params(params, method)?.unwrap_or_default();
            Ok(rpc_ok(wire, &agent.engine.list(&req).await?))
        }
        m1::CANCEL_TASK => {
            let req: v1::CancelTaskRequest = parse_params(params, method)?;
            // Boxed (here and below): cancelling is rare and its future the largest.
            Ok(task_reply(
                wire,
                Box::pin(agent.engine.cancel(&req.id)).await?,
            ))
        }
        m03::TASKS_CANCEL => {
            let req: v03::TaskIdParams = parse_params(params, method)?;
            Ok(task_reply(
                wire,
                Box::pin(agent.engine.cancel(&req.id)).await?,
            ))
        }
        m1::SUBSCRIBE_TO_TASK => {
            let req: v1::SubscribeToTaskRequest = parse_params(params, method)?;
            subscribe(shared, agent, &req.id, wire).await
        }
        m03::TASKS_RESUBSCRIBE => {
            let req: v03::TaskIdParams = parse_params(params, method)?;
            subscribe(shared, agent, &req.id, wire).await
        }
        m1::CREATE_PUSH_CONFIG => {
            let req: v1::TaskPushNotificationConfig = parse_params(params, method)?;
            let task_id = req.task_id.clone().unwrap_or_default();
            Ok(rpc_ok(
                wire,
                &create_push_config(agent, &task_id, req).await?,
            ))
        }
        m1::GET_PUSH_CONFIG => {
            let req: v1::TaskPushNotificationConfigRef = parse_params(params, method)?;
            Ok(rpc_ok(
                wire,
                &get_push_config(agent, &req.task_id, &req.id).await?,
            ))
        }
        m1::LIST_PUSH_CONFIGS => {
            let req: v1::ListTaskPushNotificationConfigsRequest = parse_params(params, method)?;
            let configs = list_push_configs(agent, &req.task_id).await?;
            Ok(rpc_ok(
                wire,
                &v1::ListTaskPushNotificationConfigsResponse {
                    configs,
                    next_page_token: None,
                },
            ))
        }
        m1::DELETE_PUSH_CONFIG => {
            let req: v1::TaskPushNotificationConfigRef = parse_params(params, method)?;
            delete_push_config(agent, &req.task_id, &req.id).await?;
            Ok(rpc_ok(wire, &serde_json::json!({})))
        }
        m03::PUSH_CONFIG_SET => {
            let req: v03::TaskPushNotificationConfig = parse_params(params, method)?;
            Ok(rpc_ok(wire, &v03_set_push(agent, req).await?))
        }
        m03::PUSH_CONFIG_GET => {
            let req: v03::TaskPushNotificationConfigParams = parse_params(params, method)?;
            let c =
                v03_get_push(agent, &req.id, req.push_notification_config_id.as_deref()).await?;
            Ok(rpc_ok(wire, &c))
        }
        m03::PUSH_CONFIG_LIST => {
            let req: v03::TaskIdParams = parse_params(params, method)?;
            let configs: Vec<v03::TaskPushNotificationConfig> = list_push_configs(agent, &req.id)
                .await?
                .into_iter()
                .map(v03_push)
                .collect();
            Ok(rpc_ok(wire, &configs))
        }
        m03::PUSH_CONFIG_DELETE => {
            let req: v03::TaskPushNotificationConfigParams = parse_params(params, method)?;
            let cid = req.push_notification_config_id.as_deref().ok_or_else(|| {
                ApiError::invalid_params("`pushNotificationConfigId` is required")
            })?;
            delete_push_config(agent, &req.id, cid).await?;
            Ok(rpc_ok(wire, &Value::Null))
        }
        m1::GET_EXTENDED_AGENT_CARD => Ok(rpc_ok(wire, &extended_card(shared, agent, headers)?)),
        m03::GET_AUTHENTICATED_EXTENDED_CARD => Ok(rpc_ok(
            wire,
            &super::calls::extended_card_v03(shared, agent, headers)?,
        )),
        other => Err(ApiError::new(
            codes::METHOD_NOT_FOUND,
            format!("method `{other}` not found"),
        )),
    }
}

/// The request of a send method (1.0 `SendMessage` / `SendStreamingMessage`, 0.3
/// `message/send` / `message/stream`) in its owned 1.0 form, and whether it streams; `None`
/// for every other method.
fn send_request(
    shared: &Shared,
    method: &str,
    params: Option<&RawValue>,
) -> Option<Result<(v1::SendMessageRequest, bool), ApiError>> {
    use crate::types::v1::methods as m1;
    use crate::types::v03::methods as m03;
    Some(match method {
        m1::SEND_MESSAGE | m1::SEND_STREAMING_MESSAGE => {
            parse_params(params, method).map(|r| (r, method == m1::SEND_STREAMING_MESSAGE))
        }
        m03::MESSAGE_SEND | m03::MESSAGE_STREAM => {
            v03_send(shared, params, method).map(|r| (r, method == m03::MESSAGE_STREAM))
        }
        _ => return None,
    })
}

/// A 0.3 `message/send` or `message/stream` as its 1.0 request: `blocking` (absent: the
/// server's default) becomes `returnImmediately`.
fn v03_send(
    shared: &Shared,
    params: Option<&RawValue>,
    method: &str,
) -> Result<v1::SendMessageRequest, ApiError> {
    let req: v03::MessageSendParams = parse_params(params, method)?;
    let blocking = req
        .configuration
        .as_ref()
        .and_then(|c| c.blocking)
        .unwrap_or(shared.cfg.v03_blocking_by_default);
    let mut req: v1::SendMessageRequest = req.into();
    req.configuration
        .get_or_insert_with(Default::default)
        .return_immediately = !blocking;
    Ok(req)
}

/// `tasks/pushNotificationConfig/set` (both 0.3 bindings): a config without an id is named
/// after its task, as 0.3 SDKs do.
pub(super) async fn v03_set_push(
    agent: &Hosted,
    mut req: v03::TaskPushNotificationConfig,
) -> Result<v03::TaskPushNotificationConfig, ApiError> {
    let task_id = req.task_id.clone();
    if req
        .push_notification_config
        .id
        .as_deref()
        .is_none_or(str::is_empty)
    {
        req.push_notification_config.id = Some(task_id.clone());
    }
    let c = create_push_config(agent, &task_id, req.into()).await?;
    Ok(v03_push(c))
}

/// `tasks/pushNotificationConfig/get` (both 0.3 bindings): 0.3 asks for "the" config of a
/// task: the one named when it exists, else the task's first (what the 0.3 Python SDK
/// answers).
pub(super) async fn v03_get_push(
    agent: &Hosted,
    task_id: &str,
    config_id: Option<&str>,
) -> Result<v03::TaskPushNotificationConfig, ApiError> {
    let configs = list_push_configs(agent, task_id).await?;
    let named = config_id.and_then(|cid| configs.iter().position(|c| c.id.as_deref() == Some(cid)));
    let c = configs.into_iter().nth(named.unwrap_or(0)).ok_or_else(|| {
        ApiError::new(
            codes::TASK_NOT_FOUND,
            format!("task `{task_id}` has no push notification config"),
        )
    })?;
    Ok(v03_push(c))
}

/// A config in its 0.3 shape.
pub(super) fn v03_push(c: v1::TaskPushNotificationConfig) -> v03::TaskPushNotificationConfig {
    v03::TaskPushNotificationConfig {
        task_id: c.task_id.clone().unwrap_or_default(),
        push_notification_config: c.into(),
    }
}
