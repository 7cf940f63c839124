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

use super::endpoint::{Binding, DEFAULT_STREAM_IDLE_TIMEOUT, Endpoint, EventStream};
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

/// A dialect (`D`: what it keeps of its own) with the wire it speaks over: the endpoint's
/// HTTP side (gRPC reads only its endpoint and limits).
pub(super) struct Speaker<D> {
    wire: Wire,
    // Only gRPC keeps state of its own (its connection); the others are unit structs.
    #[cfg_attr(not(feature = "grpc-client"), allow(dead_code))]
    dialect: D,
}

/// The wire under a [`Dialect`].
pub(super) trait Spoken {
    /// The wire the dialect speaks over.
    fn wire(&self) -> &Wire;

    /// The same, to change its settings.
    fn wire_mut(&mut self) -> &mut Wire;
}

impl<D> Spoken for Speaker<D> {
    fn wire(&self) -> &Wire {
        &self.wire
    }

    fn wire_mut(&mut self) -> &mut Wire {
        &mut self.wire
    }
}

/// One wire dialect: the A2A operations in 1.0 terms, spoken over its [`Spoken::wire`].
/// Requests arrive with the endpoint's tenant already filled in.
#[async_trait]
pub(super) trait Dialect: Spoken + Send + Sync {
    /// `SendMessage` / `message/send`.
    async fn send_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError>;

    /// `SendStreamingMessage` / `message/stream`.
    async fn send_streaming_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError>;

    /// `GetTask` / `tasks/get`.
    async fn get_task(&self, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError>;

    /// `ListTasks` (1.0 only: by default refused, as A2A 0.3 has no task listing).
    async fn list_tasks(
        &self,
        _req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        Err(common::no_task_listing(self.wire()))
    }

    /// `CancelTask` / `tasks/cancel`.
    async fn cancel_task(&self, req: v1::CancelTaskRequest) -> Result<v1::Task, A2aError>;

    /// `SubscribeToTask` / `tasks/resubscribe`.
    async fn subscribe_to_task(
        &self,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError>;

    /// `CreateTaskPushNotificationConfig` / `tasks/pushNotificationConfig/set` (`config`
    /// names its task).
    async fn create_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError>;

    /// `GetTaskPushNotificationConfig` / `tasks/pushNotificationConfig/get`.
    async fn get_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError>;

    /// `ListTaskPushNotificationConfigs` / `tasks/pushNotificationConfig/list`.
    async fn list_push_configs(
        &self,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError>;

    /// `DeleteTaskPushNotificationConfig` / `tasks/pushNotificationConfig/delete`.
    async fn delete_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError>;

    /// `GetExtendedAgentCard` / `agent/getAuthenticatedExtendedCard` / the card route.
    async fn extended_card(&self) -> Result<RawCard, A2aError>;
}

/// The `Content-Type` of request bodies in `binding` and `version`.
fn content_type(binding: Binding, version: ProtocolVersion) -> &'static str {
    match (binding, version) {
        (Binding::HttpJson, ProtocolVersion::V1) => "application/a2a+json",
        _ => "application/json",
    }
}

/// The dialect `endpoint` speaks, over `http` with `headers`: chosen once, here.
pub(super) fn select(
    http: reqwest::Client,
    endpoint: Endpoint,
    headers: http::HeaderMap,
) -> Box<dyn Dialect> {
    let (binding, version) = (endpoint.binding, endpoint.version);
    let wire = Wire::new(
        http,
        endpoint,
        headers,
        content_type(binding, version),
        Some(DEFAULT_STREAM_IDLE_TIMEOUT),
    );
    fn speak<D>(wire: Wire, dialect: D) -> Box<dyn Dialect>
    where
        Speaker<D>: Dialect + 'static,
    {
        Box::new(Speaker { wire, dialect })
    }
    match (binding, version) {
        (Binding::JsonRpc, ProtocolVersion::V1) => speak(wire, jsonrpc_v1::JsonRpcV1),
        (Binding::JsonRpc, _) => speak(wire, jsonrpc_v03::JsonRpcV03),
        (Binding::HttpJson, ProtocolVersion::V1) => speak(wire, rest_v1::RestV1),
        (Binding::HttpJson, _) => speak(wire, rest_v03::RestV03),
        #[cfg(feature = "grpc-client")]
        (Binding::Grpc, _) => {
            let grpc = grpc::Grpc::new(&wire.endpoint, &wire.headers);
            speak(wire, grpc)
        }
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
        let ct = |b, v| {
            select(reqwest::Client::new(), endpoint(b, v), Default::default())
                .wire()
                .content_type
        };
        for (binding, version, want) in [
            (
                Binding::HttpJson,
                ProtocolVersion::V1,
                "application/a2a+json",
            ),
            (Binding::HttpJson, ProtocolVersion::V03, "application/json"),
            (Binding::JsonRpc, ProtocolVersion::V1, "application/json"),
            (Binding::JsonRpc, ProtocolVersion::V03, "application/json"),
        ] {
            assert_eq!(ct(binding, version), want, "{binding:?} {version:?}");
        }
    }

    #[cfg(feature = "grpc-client")]
    #[tokio::test]
    async fn grpc_for_0_3_is_refused_on_every_call() {
        let d = select(
            reqwest::Client::new(),
            endpoint(Binding::Grpc, ProtocolVersion::V03),
            Default::default(),
        );
        let req = v1::GetTaskRequest {
            tenant: None,
            id: "t".into(),
            history_length: None,
        };
        let err = d.get_task(req).await.unwrap_err().to_string();
        assert!(err.contains("gRPC 1.0"), "{err}");
    }
}
