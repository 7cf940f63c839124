//! The wire dialects of [`A2aClient`](super::A2aClient): one implementation of [`Dialect`] per
//! binding and version (JSON-RPC 1.0 and 0.3, HTTP+JSON 1.0 and 0.3, gRPC 1.0), chosen once
//! when the client is made ([`select`]). Every dialect takes and returns 1.0 types; the 0.3
//! ones convert on the wire.

mod common;
#[cfg(feature = "grpc-client")]
mod grpc;
mod jsonrpc_v03;
mod jsonrpc_v1;
mod rest_v03;
mod rest_v1;

use serde_json::Value;
use subagent_spi::async_trait;

use super::endpoint::{Binding, Endpoint, EventStream};
use super::wire::Wire;
use crate::error::A2aError;
use crate::types::{ProtocolVersion, v1};

/// The extended card as the peer sent it (its signatures are over that shape): where it was
/// read, the JSON, and the version of its shape.
pub(super) struct RawCard {
    pub(super) url: String,
    pub(super) card: Value,
    pub(super) version: ProtocolVersion,
}

impl RawCard {
    /// The card read at `url`, in the shape of `version`.
    pub(super) fn new(url: String, card: Value, version: ProtocolVersion) -> Self {
        Self { url, card, version }
    }
}

/// One wire dialect: the A2A operations in 1.0 terms, spoken over `wire` (the endpoint's
/// HTTP side; gRPC reads only its endpoint and limits). Requests arrive with the endpoint's
/// tenant already filled in.
#[async_trait]
pub(super) trait Dialect: Send + Sync {
    /// The `Content-Type` of the dialect's request bodies.
    fn content_type(&self) -> &'static str {
        "application/json"
    }

    /// `SendMessage` / `message/send`.
    async fn send_message(
        &self,
        wire: &Wire,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError>;

    /// `SendStreamingMessage` / `message/stream`.
    async fn send_streaming_message(
        &self,
        wire: &Wire,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError>;

    /// `GetTask` / `tasks/get`.
    async fn get_task(&self, wire: &Wire, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError>;

    /// `ListTasks` (1.0 only).
    async fn list_tasks(
        &self,
        wire: &Wire,
        req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError>;

    /// `CancelTask` / `tasks/cancel`.
    async fn cancel_task(
        &self,
        wire: &Wire,
        req: v1::CancelTaskRequest,
    ) -> Result<v1::Task, A2aError>;

    /// `SubscribeToTask` / `tasks/resubscribe`.
    async fn subscribe_to_task(
        &self,
        wire: &Wire,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError>;

    /// `CreateTaskPushNotificationConfig` / `tasks/pushNotificationConfig/set` (`config`
    /// names its task).
    async fn create_push_config(
        &self,
        wire: &Wire,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError>;

    /// `GetTaskPushNotificationConfig` / `tasks/pushNotificationConfig/get`.
    async fn get_push_config(
        &self,
        wire: &Wire,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError>;

    /// `ListTaskPushNotificationConfigs` / `tasks/pushNotificationConfig/list`.
    async fn list_push_configs(
        &self,
        wire: &Wire,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError>;

    /// `DeleteTaskPushNotificationConfig` / `tasks/pushNotificationConfig/delete`.
    async fn delete_push_config(
        &self,
        wire: &Wire,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError>;

    /// `GetExtendedAgentCard` / `agent/getAuthenticatedExtendedCard` / the card route.
    async fn extended_card(&self, wire: &Wire) -> Result<RawCard, A2aError>;
}

/// The dialect `endpoint` speaks: chosen once, here.
pub(super) fn select(endpoint: &Endpoint, headers: &http::HeaderMap) -> Box<dyn Dialect> {
    let _ = headers;
    match (endpoint.binding, endpoint.version) {
        (Binding::JsonRpc, ProtocolVersion::V1) => Box::new(jsonrpc_v1::JsonRpcV1),
        (Binding::JsonRpc, _) => Box::new(jsonrpc_v03::JsonRpcV03),
        (Binding::HttpJson, ProtocolVersion::V1) => Box::new(rest_v1::RestV1),
        (Binding::HttpJson, _) => Box::new(rest_v03::RestV03),
        #[cfg(feature = "grpc-client")]
        (Binding::Grpc, _) => Box::new(grpc::Grpc::new(endpoint, headers)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(binding: Binding, version: ProtocolVersion) -> Endpoint {
        Endpoint {
            url: "http://127.0.0.1:9/a".into(),
            binding,
            version,
            tenant: None,
        }
    }

    #[test]
    fn each_binding_and_version_has_its_dialect() {
        let h = http::HeaderMap::new();
        let ct = |b, v| select(&endpoint(b, v), &h).content_type();
        assert_eq!(
            ct(Binding::HttpJson, ProtocolVersion::V1),
            "application/a2a+json"
        );
        assert_eq!(
            ct(Binding::HttpJson, ProtocolVersion::V03),
            "application/json"
        );
        assert_eq!(
            ct(Binding::JsonRpc, ProtocolVersion::V1),
            "application/json"
        );
        assert_eq!(
            ct(Binding::JsonRpc, ProtocolVersion::V03),
            "application/json"
        );
    }

    #[cfg(feature = "grpc-client")]
    #[tokio::test]
    async fn grpc_for_0_3_is_refused_on_every_call() {
        let e = endpoint(Binding::Grpc, ProtocolVersion::V03);
        let d = select(&e, &http::HeaderMap::new());
        let wire = Wire::new(
            reqwest::Client::new(),
            e,
            Default::default(),
            "application/json",
            None,
        );
        let req = v1::GetTaskRequest {
            tenant: None,
            id: "t".into(),
            history_length: None,
        };
        let err = d.get_task(&wire, req).await.unwrap_err().to_string();
        assert!(err.contains("gRPC 1.0"), "{err}");
    }
}
