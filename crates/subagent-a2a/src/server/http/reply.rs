//! Encoding answers per binding and version: JSON-RPC results and errors (1.0 with
//! `google.rpc.ErrorInfo`, 0.3 plain), AIP-193 errors with the binding's HTTP statuses.

use axum::body::{Body, Bytes};
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use serde_json::Value;

use crate::server::engine::ApiError;
use crate::types::jsonrpc::{RequestId, RpcError, a2a_error, codes};
use crate::types::{ProtocolVersion, v1, v03};

/// The binding and version a reply is encoded for.
#[derive(Clone)]
pub(super) enum Wire {
    RpcV1(RequestId),
    RpcV03(RequestId),
    Rest,
    /// The 0.3 HTTP+JSON binding (`/v1/…` routes, 0.3 ProtoJSON shapes).
    RestV03,
}

impl Wire {
    pub(super) fn version(&self) -> ProtocolVersion {
        match self {
            Wire::RpcV03(_) | Wire::RestV03 => ProtocolVersion::V03,
            _ => ProtocolVersion::V1,
        }
    }
}

#[derive(Serialize)]
pub(super) struct RpcOk<'a, T: Serialize> {
    pub(super) jsonrpc: &'static str,
    pub(super) id: &'a RequestId,
    pub(super) result: &'a T,
}

#[derive(Serialize)]
pub(super) struct RpcErr<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    error: &'a RpcError,
}

pub(super) const JSON: &str = "application/json";

pub(super) fn json_bytes<T: Serialize>(v: &T) -> Bytes {
    json_bytes_sized(v, 0)
}

/// Replies whose payload is estimated at least this large are written into a buffer of their
/// exact size, measured by a first counting pass, instead of one grown by doubling: a grown
/// buffer touches up to twice the reply (and glibc keeps the smaller steps resident), so a
/// 10 MB reply cost ~3x its size in flight.
const EXACT_SIZE_FROM: usize = 64 * 1024;

/// [`json_bytes`] for a value whose payload is about `estimate` bytes (see [`EXACT_SIZE_FROM`]).
fn json_bytes_sized<T: Serialize>(v: &T, estimate: usize) -> Bytes {
    // Serializing our own types into a Vec cannot fail (no non-string map keys, no I/O).
    // Most replies fit in 256 bytes; starting there saves the Vec's doubling steps.
    let capacity = if estimate >= EXACT_SIZE_FROM {
        let mut counter = Counter(0);
        match serde_json::to_writer(&mut counter, v) {
            Ok(()) => counter.0,
            Err(_) => return Bytes::new(),
        }
    } else {
        256
    };
    let mut out = Vec::with_capacity(capacity);
    match serde_json::to_writer(&mut out, v) {
        Ok(()) => Bytes::from(out),
        Err(_) => Bytes::new(),
    }
}

/// Counts the bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(super) fn respond(status: StatusCode, body: Bytes) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    r
}

/// The HTTP status and gRPC status name of the HTTP+JSON binding for an error code.
pub(super) fn http_status(code: i32) -> (StatusCode, &'static str) {
    match code {
        codes::TASK_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        codes::TASK_NOT_CANCELABLE => (StatusCode::CONFLICT, "FAILED_PRECONDITION"),
        codes::PUSH_NOTIFICATION_NOT_SUPPORTED
        | codes::UNSUPPORTED_OPERATION
        | codes::VERSION_NOT_SUPPORTED => (StatusCode::BAD_REQUEST, "UNIMPLEMENTED"),
        codes::CONTENT_TYPE_NOT_SUPPORTED => {
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, "INVALID_ARGUMENT")
        }
        codes::INVALID_AGENT_RESPONSE => (StatusCode::BAD_GATEWAY, "INTERNAL"),
        codes::EXTENDED_AGENT_CARD_NOT_CONFIGURED | codes::EXTENSION_SUPPORT_REQUIRED => {
            (StatusCode::BAD_REQUEST, "FAILED_PRECONDITION")
        }
        codes::METHOD_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        codes::INTERNAL_ERROR => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        codes::SERVER_BUSY => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
        _ => (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
    }
}

/// `Retry-After` (seconds) sent with every ServerBusy (503) answer.
pub(super) const RETRY_AFTER_SECS: &str = "5";

/// Adds `Retry-After` to a ServerBusy answer.
pub(super) fn busy_headers(r: &mut Response, code: i32) {
    if code == codes::SERVER_BUSY {
        r.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from_static(RETRY_AFTER_SECS),
        );
    }
}

pub(super) fn rpc_error_object(e: &ApiError, v1_style: bool) -> RpcError {
    if v1_style {
        a2a_error(e.code, e.message.clone(), None)
    } else {
        RpcError::new(e.code, e.message.clone())
    }
}

pub(super) fn rpc_error(
    status: StatusCode,
    id: &RequestId,
    e: &ApiError,
    v1_style: bool,
) -> Response {
    let err = rpc_error_object(e, v1_style);
    respond(
        status,
        json_bytes(&RpcErr {
            jsonrpc: "2.0",
            id,
            error: &err,
        }),
    )
}

/// An AIP-193 error body: `{"error": {"code", "status", "message", "details": [ErrorInfo]}}`.
pub(super) fn rest_error(e: &ApiError) -> Response {
    let (status, name) = http_status(e.code);
    let mut r = rest_error_as(status, name, e);
    busy_headers(&mut r, e.code);
    r
}

/// An AIP-193 error body with the given HTTP status and status name (`code` is always the
/// HTTP status, so status line and body agree).
pub(super) fn rest_error_as(status: StatusCode, name: &str, e: &ApiError) -> Response {
    let details = a2a_error(e.code, "", None)
        .data
        .unwrap_or_else(|| Value::Array(Vec::new()));
    let body = serde_json::json!({
        "error": {
            "code": status.as_u16(),
            "status": name,
            "message": e.message,
            "details": details,
        }
    });
    respond(status, json_bytes(&body))
}

/// The HTTP status of the 0.3 HTTP+JSON binding for an error code (the official 0.3 SDKs'
/// table: InvalidParams 422, TaskNotFound 404, TaskNotCancelable 409, PushNotificationNotSupported
/// and UnsupportedOperation 501, ContentTypeNotSupported 415, InvalidAgentResponse 502, …).
pub(super) fn http_status_v03(code: i32) -> StatusCode {
    match code {
        codes::PARSE_ERROR | codes::INVALID_REQUEST => StatusCode::BAD_REQUEST,
        codes::METHOD_NOT_FOUND
        | codes::TASK_NOT_FOUND
        | codes::EXTENDED_AGENT_CARD_NOT_CONFIGURED => StatusCode::NOT_FOUND,
        codes::INVALID_PARAMS => StatusCode::UNPROCESSABLE_ENTITY,
        codes::TASK_NOT_CANCELABLE => StatusCode::CONFLICT,
        codes::PUSH_NOTIFICATION_NOT_SUPPORTED | codes::UNSUPPORTED_OPERATION => {
            StatusCode::NOT_IMPLEMENTED
        }
        codes::CONTENT_TYPE_NOT_SUPPORTED => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        codes::INVALID_AGENT_RESPONSE => StatusCode::BAD_GATEWAY,
        codes::SERVER_BUSY => StatusCode::SERVICE_UNAVAILABLE,
        codes::INTERNAL_ERROR => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    }
}

/// A 0.3 HTTP+JSON error: the JSON-RPC error object (`{"code", "message"}`, the spec's
/// "JSONRPCError or equivalent"; the 0.3 SDKs read `message`) with [`http_status_v03`].
pub(super) fn rest_v03_error(e: &ApiError) -> Response {
    let body = serde_json::json!({ "code": e.code, "message": e.message });
    let mut r = respond(http_status_v03(e.code), json_bytes(&body));
    busy_headers(&mut r, e.code);
    r
}

pub(super) fn error_for(wire: &Wire, e: &ApiError) -> Response {
    match wire {
        Wire::Rest => rest_error(e),
        Wire::RestV03 => rest_v03_error(e),
        Wire::RpcV1(id) => rpc_error_for(id, e, true),
        Wire::RpcV03(id) => rpc_error_for(id, e, false),
    }
}

/// A JSON-RPC error answer: HTTP 200, except ServerBusy (503 + `Retry-After`, so proxies and
/// clients see the overload without reading the body).
pub(super) fn rpc_error_for(id: &RequestId, e: &ApiError, v1_style: bool) -> Response {
    if e.code == codes::SERVER_BUSY {
        let mut r = rpc_error(StatusCode::SERVICE_UNAVAILABLE, id, e, v1_style);
        busy_headers(&mut r, e.code);
        return r;
    }
    rpc_error(StatusCode::OK, id, e, v1_style)
}

pub(super) fn rpc_ok<T: Serialize>(wire: &Wire, result: &T) -> Response {
    rpc_ok_sized(wire, result, 0)
}

/// [`rpc_ok`] for a result whose payload is about `estimate` bytes.
fn rpc_ok_sized<T: Serialize>(wire: &Wire, result: &T, estimate: usize) -> Response {
    let id = match wire {
        Wire::RpcV1(id) | Wire::RpcV03(id) => id,
        Wire::Rest | Wire::RestV03 => {
            return respond(StatusCode::OK, json_bytes_sized(result, estimate));
        }
    };
    respond(
        StatusCode::OK,
        json_bytes_sized(
            &RpcOk {
                jsonrpc: "2.0",
                id,
                result,
            },
            estimate,
        ),
    )
}

/// Encodes a task for the wire's version.
pub(super) fn task_reply(wire: &Wire, task: v1::Task) -> Response {
    let estimate = crate::server::task_bytes(&task);
    versioned_reply::<_, v03::Task>(wire, task, estimate, crate::types::v03_rest::task_to_proto)
}

/// A send's answer (a task or a message) in the wire's version and shape.
pub(super) fn event_reply(wire: &Wire, reply: v1::SendMessageResponse) -> Response {
    let estimate = match &reply {
        v1::SendMessageResponse::Message(m) => crate::server::message_bytes(m),
        v1::SendMessageResponse::Task(t) => crate::server::task_bytes(t),
    };
    versioned_reply::<_, v03::Event>(
        wire,
        reply,
        estimate,
        crate::types::v03_rest::event_to_proto,
    )
}

/// `value` (1.0) as the wire's version writes it: as is, as its 0.3 form `T03`, or as that
/// form's ProtoJSON (`to_proto`) on the 0.3 HTTP+JSON binding.
fn versioned_reply<T: Serialize, T03: Serialize + From<T>>(
    wire: &Wire,
    value: T,
    estimate: usize,
    to_proto: fn(&Value) -> Value,
) -> Response {
    match wire {
        Wire::RestV03 => rpc_ok_sized(
            wire,
            &to_proto(&serde_json::to_value(T03::from(value)).unwrap_or_default()),
            estimate,
        ),
        Wire::RpcV03(_) => rpc_ok_sized(wire, &T03::from(value), estimate),
        Wire::RpcV1(_) | Wire::Rest => rpc_ok_sized(wire, &value, estimate),
    }
}
