//! The A2A 1.0 **gRPC binding**: the protobuf types of `lf.a2a.v1` (service `A2AService`),
//! the conversions between them and this crate's wire types ([`crate::types::v1`]), and the
//! A2A error details (`google.rpc.Status` with a `google.rpc.ErrorInfo`).
//!
//! The server side is [`A2aServer::serve_grpc`](crate::server::A2aServer::serve_grpc)
//! (feature `grpc-server`); the client side is picked by the A2A client when a card's selected
//! interface is `GRPC` (feature `grpc-client`).
//!
//! # Why the generated code is committed
//!
//! [`proto`] is generated from the specification's `specification/a2a.proto` by
//! `scripts/regen-grpc.sh` (tonic-prost-build for messages, client and server; pbjson-build for
//! their ProtoJSON serde impls; protox as a pure-Rust `.proto` compiler) and committed in
//! `src/grpc/gen/`, with the upstream commit in its header. Generating at build time would
//! need `protoc` (or protox and its parser in every build) and the `.proto` files at build
//! time, which this repository does not vendor; committed output builds offline, with no
//! build script, and a new `a2a.proto` shows up as a reviewable diff. To move to a newer
//! specification, change the pinned commit in the script and rerun it.
//!
//! # One set of wire types
//!
//! Every binding runs on the same engine with the same types: the gRPC layer converts a prost
//! message to [`crate::types::v1`] through its ProtoJSON form (pbjson's serde impls on one
//! side, this crate's ProtoJSON types on the other), so a field means the same on JSON-RPC,
//! HTTP+JSON and gRPC and no third mapping has to be kept in step with the specification.

use prost::Message as _;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::types::jsonrpc::codes;

/// The protobuf types and the generated client / server of `lf.a2a.v1` (see the module docs).
#[allow(
    missing_docs,
    unreachable_pub,
    missing_debug_implementations,
    clippy::all,
    rust_2018_idioms
)]
pub mod proto {
    include!("gen/lf.a2a.v1.rs");
    include!("gen/lf.a2a.v1.serde.rs");
}

/// The full name of the gRPC service.
pub const SERVICE: &str = "lf.a2a.v1.A2AService";

/// The largest message (either direction) the gRPC binding accepts by default: 10 MiB, the
/// HTTP bindings' default body limit.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 10 * 1024 * 1024;

/// A conversion between a protobuf message and this crate's type failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot convert {what} between protobuf and the A2A types: {source}")]
#[non_exhaustive]
pub struct ConvertError {
    /// What was converted.
    pub what: &'static str,
    /// Why it failed.
    #[source]
    pub source: serde_json::Error,
}

/// Converts between two types with the same ProtoJSON form (a prost message and this crate's
/// type, either way).
pub(crate) fn convert<A: Serialize, B: DeserializeOwned>(
    what: &'static str,
    a: &A,
) -> Result<B, ConvertError> {
    serde_json::to_value(a)
        .and_then(serde_json::from_value)
        .map_err(|source| ConvertError { what, source })
}

/// `google.rpc.Status`, the `grpc-status-details-bin` trailer.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<pbjson_types::Any>,
}

/// `google.rpc.ErrorInfo`: the A2A error's reason in the `a2a-protocol.org` domain.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ErrorInfo {
    #[prost(string, tag = "1")]
    pub reason: String,
    #[prost(string, tag = "2")]
    pub domain: String,
    #[prost(map = "string, string", tag = "3")]
    pub metadata: std::collections::HashMap<String, String>,
}

const ERROR_INFO_URL: &str = "type.googleapis.com/google.rpc.ErrorInfo";

#[cfg(feature = "grpc-server")]
/// The gRPC status code of an A2A error code (the specification's mapping table).
pub(crate) fn status_code(code: i32) -> tonic::Code {
    use tonic::Code;
    match code {
        codes::TASK_NOT_FOUND | codes::METHOD_NOT_FOUND => Code::NotFound,
        codes::TASK_NOT_CANCELABLE
        | codes::EXTENDED_AGENT_CARD_NOT_CONFIGURED
        | codes::EXTENSION_SUPPORT_REQUIRED => Code::FailedPrecondition,
        codes::PUSH_NOTIFICATION_NOT_SUPPORTED
        | codes::UNSUPPORTED_OPERATION
        | codes::VERSION_NOT_SUPPORTED => Code::Unimplemented,
        codes::CONTENT_TYPE_NOT_SUPPORTED
        | codes::INVALID_PARAMS
        | codes::INVALID_REQUEST
        | codes::PARSE_ERROR => Code::InvalidArgument,
        codes::INVALID_AGENT_RESPONSE | codes::INTERNAL_ERROR => Code::Internal,
        codes::SERVER_BUSY => Code::Unavailable,
        _ => Code::Unknown,
    }
}

#[cfg(feature = "grpc-server")]
/// A gRPC status for an A2A error: the mapped code, the message, and (for A2A-specific
/// errors) a `google.rpc.ErrorInfo` detail with the error's reason.
pub(crate) fn error_status(code: i32, message: String) -> tonic::Status {
    let grpc = status_code(code);
    match codes::reason(code) {
        Some(reason) => {
            let info = ErrorInfo {
                reason: reason.to_string(),
                domain: crate::types::jsonrpc::ERROR_DOMAIN.to_string(),
                metadata: Default::default(),
            };
            let status = RpcStatus {
                code: grpc as i32,
                message: message.clone(),
                details: vec![pbjson_types::Any {
                    type_url: ERROR_INFO_URL.to_string(),
                    value: info.encode_to_vec().into(),
                }],
            };
            tonic::Status::with_details(grpc, message, status.encode_to_vec().into())
        }
        None => tonic::Status::new(grpc, message),
    }
}

#[cfg(feature = "grpc-client")]
/// The A2A error code whose `ErrorInfo` reason this is.
fn code_of_reason(reason: &str) -> Option<i32> {
    (-32009..=-32001).find(|&c| codes::reason(c) == Some(reason))
}

#[cfg(feature = "grpc-client")]
/// The A2A error code of a gRPC status: from its `ErrorInfo` reason when present, else from
/// the status code.
pub(crate) fn error_code(status: &tonic::Status) -> i32 {
    let from_details = RpcStatus::decode(status.details())
        .ok()
        .and_then(|s| s.details.into_iter().find(|d| d.type_url == ERROR_INFO_URL))
        .and_then(|d| ErrorInfo::decode(d.value).ok())
        .and_then(|i| code_of_reason(&i.reason));
    if let Some(c) = from_details {
        return c;
    }
    use tonic::Code;
    match status.code() {
        Code::NotFound => codes::TASK_NOT_FOUND,
        Code::InvalidArgument => codes::INVALID_PARAMS,
        Code::Unimplemented => codes::UNSUPPORTED_OPERATION,
        Code::Unavailable | Code::ResourceExhausted => codes::SERVER_BUSY,
        _ => codes::INTERNAL_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::v1;

    #[test]
    fn a_message_survives_the_trip_through_protobuf() {
        let mut m = v1::Message::new(
            v1::Role::User,
            "m-1".to_string(),
            vec![v1::Part::text("hello")],
        );
        m.context_id = Some("ctx".into());
        let p: proto::Message = convert("message", &m).unwrap();
        assert_eq!(p.role, proto::Role::User as i32);
        let bytes = p.encode_to_vec();
        let back: v1::Message =
            convert("message", &proto::Message::decode(&*bytes).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[cfg(all(feature = "grpc-server", feature = "grpc-client"))]
    #[test]
    fn errors_keep_their_reason() {
        let s = error_status(codes::TASK_NOT_FOUND, "no such task".into());
        assert_eq!(s.code(), tonic::Code::NotFound);
        assert_eq!(error_code(&s), codes::TASK_NOT_FOUND);
        let s = error_status(codes::UNSUPPORTED_OPERATION, "nope".into());
        assert_eq!(s.code(), tonic::Code::Unimplemented);
        assert_eq!(error_code(&s), codes::UNSUPPORTED_OPERATION);
    }
}
