//! gRPC, A2A 1.0 (feature `grpc-client`): the operations over
//! [`GrpcConn`](crate::client::grpc::GrpcConn). A card naming gRPC with another version gets
//! [`A2aError::Unsupported`] on every call.

use http::HeaderMap;
use subagent_spi::async_trait;

use super::common::unsupported;
use super::{Dialect, RawCard, Speaker};
use crate::client::endpoint::{Endpoint, EventStream, MAX_BODY_BYTES};
use crate::client::grpc::GrpcConn;
use crate::error::A2aError;
use crate::types::{ProtocolVersion, v1};

/// gRPC 1.0 (the connection), or why not.
pub(super) struct Grpc(Result<GrpcConn, String>);

impl Grpc {
    pub(super) fn new(endpoint: &Endpoint, headers: &HeaderMap) -> Self {
        if endpoint.version != ProtocolVersion::V1 {
            return Self(Err(format!(
                "gRPC for A2A {} at {} (this client speaks gRPC 1.0)",
                endpoint.version.as_str(),
                endpoint.url
            )));
        }
        Self(Ok(GrpcConn::new(
            &endpoint.url,
            headers.clone(),
            MAX_BODY_BYTES,
        )))
    }

    fn conn(&self) -> Result<&GrpcConn, A2aError> {
        self.0.as_ref().map_err(|m| unsupported(m.clone()))
    }
}

#[async_trait]
impl Dialect for Speaker<Grpc> {
    async fn send_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        self.dialect.conn()?.send_message(&req).await
    }

    async fn send_streaming_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        self.dialect
            .conn()?
            .send_streaming_message(&req, self.wire.stream_idle_timeout)
            .await
    }

    async fn get_task(&self, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError> {
        self.dialect.conn()?.get_task(&req).await
    }

    async fn list_tasks(
        &self,
        req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        self.dialect.conn()?.list_tasks(&req).await
    }

    async fn cancel_task(&self, req: v1::CancelTaskRequest) -> Result<v1::Task, A2aError> {
        self.dialect.conn()?.cancel_task(&req).await
    }

    async fn subscribe_to_task(
        &self,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        self.dialect
            .conn()?
            .subscribe_to_task(&req, self.wire.stream_idle_timeout)
            .await
    }

    async fn create_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        self.dialect.conn()?.create_push_config(&config).await
    }

    async fn get_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        self.dialect
            .conn()?
            .get_push_config(req.tenant.as_deref(), &req.task_id, &req.id)
            .await
    }

    async fn list_push_configs(
        &self,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        self.dialect
            .conn()?
            .list_push_configs(req.tenant.as_deref(), &req.task_id)
            .await
    }

    async fn delete_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError> {
        self.dialect
            .conn()?
            .delete_push_config(req.tenant.as_deref(), &req.task_id, &req.id)
            .await
    }

    async fn extended_card(&self) -> Result<RawCard, A2aError> {
        let url = self.wire.endpoint.url.clone();
        let c = self
            .dialect
            .conn()?
            .get_extended_agent_card(self.wire.endpoint.tenant.as_deref())
            .await?;
        let card = serde_json::to_value(&c).map_err(|e| A2aError::Protocol {
            url: url.clone(),
            message: format!("the extended card does not serialize: {e}"),
        })?;
        Ok(RawCard::new(url, card, ProtocolVersion::V1))
    }
}
