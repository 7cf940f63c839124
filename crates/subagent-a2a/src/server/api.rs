//! What the server answers the bindings with, shared by the engine and push delivery:
//! [`ApiError`] (an A2A / JSON-RPC error) and [`Event`] (a task event as streamed).

use std::sync::Arc;

use crate::types::jsonrpc::codes;
use crate::types::v1;

/// An error answered to the client: an A2A / JSON-RPC code and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub code: i32,
    pub message: String,
}

impl ApiError {
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }
    pub(crate) fn not_found(task_id: &str) -> Self {
        Self::new(codes::TASK_NOT_FOUND, format!("task `{task_id}` not found"))
    }
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
    }
}

pub(crate) type Event = Arc<v1::StreamResponse>;
