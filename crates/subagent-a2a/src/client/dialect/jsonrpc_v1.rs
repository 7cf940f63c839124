//! JSON-RPC, A2A 1.0: PascalCase methods, ProtoJSON params and results.

use subagent_spi::async_trait;

use super::{Dialect, RawCard, Speaker};
use crate::client::endpoint::EventStream;
use crate::error::A2aError;
use crate::types::{ProtocolVersion, v1};

/// JSON-RPC 1.0.
pub(super) struct JsonRpcV1;

#[async_trait]
impl Dialect for Speaker<JsonRpcV1> {
    async fn send_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        self.wire.rpc(v1::methods::SEND_MESSAGE, &req).await
    }

    async fn send_streaming_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        self.wire
            .rpc_stream::<_, v1::StreamResponse>(v1::methods::SEND_STREAMING_MESSAGE, &req)
            .await
    }

    async fn get_task(&self, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError> {
        self.wire.rpc(v1::methods::GET_TASK, &req).await
    }

    async fn list_tasks(
        &self,
        req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        self.wire.rpc(v1::methods::LIST_TASKS, &req).await
    }

    async fn cancel_task(&self, req: v1::CancelTaskRequest) -> Result<v1::Task, A2aError> {
        self.wire.rpc(v1::methods::CANCEL_TASK, &req).await
    }

    async fn subscribe_to_task(
        &self,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        self.wire
            .rpc_stream::<_, v1::StreamResponse>(v1::methods::SUBSCRIBE_TO_TASK, &req)
            .await
    }

    async fn create_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        self.wire
            .rpc(v1::methods::CREATE_PUSH_CONFIG, &config)
            .await
    }

    async fn get_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        self.wire.rpc(v1::methods::GET_PUSH_CONFIG, &req).await
    }

    async fn list_push_configs(
        &self,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        let r: v1::ListTaskPushNotificationConfigsResponse =
            self.wire.rpc(v1::methods::LIST_PUSH_CONFIGS, &req).await?;
        Ok(r.configs)
    }

    async fn delete_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError> {
        self.wire
            .rpc_unit(v1::methods::DELETE_PUSH_CONFIG, &req)
            .await
    }

    async fn extended_card(&self) -> Result<RawCard, A2aError> {
        let req = v1::GetExtendedAgentCardRequest {
            tenant: self.wire.endpoint.tenant.clone(),
        };
        let card = self
            .wire
            .rpc(v1::methods::GET_EXTENDED_AGENT_CARD, &req)
            .await?;
        Ok(RawCard::new(
            self.wire.endpoint.url.clone(),
            card,
            ProtocolVersion::V1,
        ))
    }
}
