//! The JSON-RPC 2.0 envelope and the A2A error codes.
//!
//! The `"2.0"` marker and the server-side error object come from `jsonrpsee-types`
//! ([`TwoPointZero`], [`ErrorObjectOwned`], convertible to and from [`RpcError`]). The request and
//! response envelopes here are generic over typed params and results so both sides
//! (de)serialize A2A payloads in one step; ids ([`RequestId`]) and errors ([`RpcError`]) are own
//! small types because jsonrpsee's borrow from the input and reject unknown error fields, while a
//! client must accept what any peer sends.
//! Only the types are used from jsonrpsee: jsonrpsee's HTTP server cannot answer a call with
//! Server-Sent Events, which `SendStreamingMessage` needs, so the transport is axum (server)
//! and reqwest (client).

use std::borrow::Cow;

pub use jsonrpsee_types::{ErrorObject, ErrorObjectOwned, TwoPointZero};
use serde::{Deserialize, Serialize};

/// A2A and JSON-RPC error codes, with the A2A error names.
pub mod codes {
    /// `JSONParseError`: the body is not valid JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// `InvalidRequestError`: not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i32 = -32600;
    /// `MethodNotFoundError`.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// `InvalidParamsError`.
    pub const INVALID_PARAMS: i32 = -32602;
    /// `InternalError`.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// `TaskNotFoundError`.
    pub const TASK_NOT_FOUND: i32 = -32001;
    /// `TaskNotCancelableError`.
    pub const TASK_NOT_CANCELABLE: i32 = -32002;
    /// `PushNotificationNotSupportedError`.
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i32 = -32003;
    /// `UnsupportedOperationError`.
    pub const UNSUPPORTED_OPERATION: i32 = -32004;
    /// `ContentTypeNotSupportedError`.
    pub const CONTENT_TYPE_NOT_SUPPORTED: i32 = -32005;
    /// `InvalidAgentResponseError`.
    pub const INVALID_AGENT_RESPONSE: i32 = -32006;
    /// `ExtendedAgentCardNotConfiguredError` (0.3: `AuthenticatedExtendedCardNotConfiguredError`).
    pub const EXTENDED_AGENT_CARD_NOT_CONFIGURED: i32 = -32007;
    /// `ExtensionSupportRequiredError` (1.0).
    pub const EXTENSION_SUPPORT_REQUIRED: i32 = -32008;
    /// `VersionNotSupportedError` (1.0).
    pub const VERSION_NOT_SUPPORTED: i32 = -32009;
    /// Not an A2A code: the implementation-defined server error (JSON-RPC 2.0 reserves
    /// -32000 to -32099) this crate's server answers when it is at a capacity limit (too many
    /// streams, task memory exhausted). Sent with HTTP 503 and `Retry-After`; retry later.
    pub const SERVER_BUSY: i32 = -32000;

    /// The A2A error name of a code (e.g. `TaskNotFoundError`), if it is a known one.
    pub fn name(code: i32) -> Option<&'static str> {
        Some(match code {
            PARSE_ERROR => "JSONParseError",
            INVALID_REQUEST => "InvalidRequestError",
            METHOD_NOT_FOUND => "MethodNotFoundError",
            INVALID_PARAMS => "InvalidParamsError",
            INTERNAL_ERROR => "InternalError",
            TASK_NOT_FOUND => "TaskNotFoundError",
            TASK_NOT_CANCELABLE => "TaskNotCancelableError",
            PUSH_NOTIFICATION_NOT_SUPPORTED => "PushNotificationNotSupportedError",
            UNSUPPORTED_OPERATION => "UnsupportedOperationError",
            CONTENT_TYPE_NOT_SUPPORTED => "ContentTypeNotSupportedError",
            INVALID_AGENT_RESPONSE => "InvalidAgentResponseError",
            EXTENDED_AGENT_CARD_NOT_CONFIGURED => "ExtendedAgentCardNotConfiguredError",
            EXTENSION_SUPPORT_REQUIRED => "ExtensionSupportRequiredError",
            VERSION_NOT_SUPPORTED => "VersionNotSupportedError",
            SERVER_BUSY => "ServerBusy",
            _ => return None,
        })
    }

    /// The `google.rpc.ErrorInfo` reason of an A2A-specific code (e.g. `TASK_NOT_FOUND`), used
    /// in 1.0 error details.
    pub fn reason(code: i32) -> Option<&'static str> {
        Some(match code {
            TASK_NOT_FOUND => "TASK_NOT_FOUND",
            TASK_NOT_CANCELABLE => "TASK_NOT_CANCELABLE",
            PUSH_NOTIFICATION_NOT_SUPPORTED => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            UNSUPPORTED_OPERATION => "UNSUPPORTED_OPERATION",
            CONTENT_TYPE_NOT_SUPPORTED => "CONTENT_TYPE_NOT_SUPPORTED",
            INVALID_AGENT_RESPONSE => "INVALID_AGENT_RESPONSE",
            EXTENDED_AGENT_CARD_NOT_CONFIGURED => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            EXTENSION_SUPPORT_REQUIRED => "EXTENSION_SUPPORT_REQUIRED",
            VERSION_NOT_SUPPORTED => "VERSION_NOT_SUPPORTED",
            _ => return None,
        })
    }

    /// The HTTP status the HTTP+JSON binding uses for a code.
    pub fn http_status(code: i32) -> u16 {
        match code {
            TASK_NOT_FOUND => 404,
            PARSE_ERROR | INVALID_REQUEST | INVALID_PARAMS => 400,
            METHOD_NOT_FOUND => 404,
            INTERNAL_ERROR | INVALID_AGENT_RESPONSE => 500,
            SERVER_BUSY => 503,
            _ => 400,
        }
    }
}

/// The `@type` of a `google.rpc.ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// The `domain` of A2A `ErrorInfo` details.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// A JSON-RPC request id: a number, a string or `null`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// `null` (used when the request's id could not be read).
    Null,
    /// A number.
    Number(i64),
    /// A string.
    Str(String),
}

/// A JSON-RPC error object (`code`, `message`, optional `data`), lenient on input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct RpcError {
    /// The error code (see [`codes`]).
    pub code: i32,
    /// A human-readable message.
    #[serde(default)]
    pub message: String,
    /// Details (in 1.0, an array of `@type`-tagged objects such as `ErrorInfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl RpcError {
    /// An error with a code and message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl From<ErrorObjectOwned> for RpcError {
    fn from(e: ErrorObjectOwned) -> Self {
        Self {
            code: e.code(),
            message: e.message().to_string(),
            data: e.data().and_then(|d| serde_json::from_str(d.get()).ok()),
        }
    }
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(e: RpcError) -> Self {
        ErrorObject::owned(e.code, e.message, e.data)
    }
}

/// A JSON-RPC 2.0 request with typed params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>", serialize = "P: Serialize"))]
pub struct Request<P> {
    /// Always `"2.0"`.
    pub jsonrpc: TwoPointZero,
    /// The request id (absent for notifications).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The method.
    pub method: Cow<'static, str>,
    /// The params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> Request<P> {
    /// A request with a numeric id.
    pub fn new(id: i64, method: impl Into<Cow<'static, str>>, params: P) -> Self {
        Self {
            jsonrpc: TwoPointZero,
            id: Some(RequestId::Number(id)),
            method: method.into(),
            params: Some(params),
        }
    }
}

/// A JSON-RPC 2.0 response with a typed result: exactly one of `result` and `error` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "R: Deserialize<'de>", serialize = "R: Serialize"))]
pub struct Response<R> {
    /// Always `"2.0"`.
    pub jsonrpc: TwoPointZero,
    /// The id of the request answered (`null` when it could not be read).
    pub id: RequestId,
    /// The result, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<R>,
    /// The error, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl<R> Response<R> {
    /// A success response.
    pub fn success(id: RequestId, result: R) -> Self {
        Self {
            jsonrpc: TwoPointZero,
            id,
            result: Some(result),
            error: None,
        }
    }

    /// An error response.
    pub fn error(id: RequestId, error: impl Into<RpcError>) -> Self {
        Self {
            jsonrpc: TwoPointZero,
            id,
            result: None,
            error: Some(error.into()),
        }
    }

    /// The result, or the error object.
    pub fn into_result(self) -> Result<R, RpcError> {
        match (self.result, self.error) {
            (_, Some(e)) => Err(e),
            (Some(r), None) => Ok(r),
            (None, None) => Err(RpcError::new(
                codes::INVALID_AGENT_RESPONSE,
                "response has neither `result` nor `error`",
            )),
        }
    }
}

/// An A2A error object: `code`, `message` and, for 1.0, an `ErrorInfo` detail in `data`
/// (`[{"@type": ".../google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain":
/// "a2a-protocol.org", "metadata": {...}}]`).
pub fn a2a_error(
    code: i32,
    message: impl Into<String>,
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
) -> RpcError {
    let data = codes::reason(code).map(|reason| {
        let mut info = serde_json::Map::new();
        info.insert("@type".into(), ERROR_INFO_TYPE.into());
        info.insert("reason".into(), reason.into());
        info.insert("domain".into(), ERROR_DOMAIN.into());
        if let Some(m) = metadata {
            info.insert("metadata".into(), serde_json::Value::Object(m));
        }
        serde_json::Value::Array(vec![serde_json::Value::Object(info)])
    });
    RpcError {
        code,
        message: message.into(),
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_error_response_round_trip() {
        let req = Request::new(7, "GetTask", serde_json::json!({"id": "t1"}));
        let s = serde_json::to_value(&req).unwrap();
        assert_eq!(
            s,
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "t1"}})
        );
        let back: Request<serde_json::Value> = serde_json::from_value(s).unwrap();
        assert_eq!(back, req);

        let resp: Response<serde_json::Value> = Response::error(
            RequestId::Str("a".into()),
            a2a_error(codes::TASK_NOT_FOUND, "Task not found", None),
        );
        let v = serde_json::to_value(&resp).unwrap();
        assert_eq!(v["error"]["code"], -32001);
        assert_eq!(v["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
        let e = serde_json::from_value::<Response<serde_json::Value>>(v)
            .unwrap()
            .into_result()
            .unwrap_err();
        assert_eq!(e.code, codes::TASK_NOT_FOUND);
        assert_eq!(codes::name(e.code), Some("TaskNotFoundError"));
        let obj: ErrorObjectOwned = e.clone().into();
        assert_eq!(RpcError::from(obj), e);
    }

    #[test]
    fn response_without_result_or_error_is_an_error() {
        let r: Response<serde_json::Value> =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":1}"#).unwrap();
        assert_eq!(
            r.into_result().unwrap_err().code,
            codes::INVALID_AGENT_RESPONSE
        );
    }
}
