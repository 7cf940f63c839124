//! JSON-RPC, A2A 0.3: slash method names, kind-tagged JSON (converted to and from 1.0).

use serde::Serialize;
use serde::de::DeserializeOwned;
use subagent_spi::async_trait;

use super::common::send_reply;
use super::{Dialect, RawCard, Speaker};
use crate::client::endpoint::EventStream;
use crate::error::A2aError;
use crate::types::{ProtocolVersion, v1, v03};

/// JSON-RPC 0.3.
pub(super) struct JsonRpcV03;

/// The 0.3 params naming one push config (get and delete send them).
fn push_config_params(
    req: v1::TaskPushNotificationConfigRef,
) -> v03::TaskPushNotificationConfigParams {
    v03::TaskPushNotificationConfigParams {
        id: req.task_id,
        push_notification_config_id: Some(req.id),
        metadata: None,
    }
}

impl Speaker<JsonRpcV03> {
    /// Calls `method` with 0.3 `params`; its 0.3 result `R` read as the 1.0 `T`.
    async fn call<R: DeserializeOwned + Into<T>, T>(
        &self,
        method: &'static str,
        params: &(impl Serialize + Sync),
    ) -> Result<T, A2aError> {
        self.wire.rpc::<_, R>(method, params).await.map(Into::into)
    }
}

#[async_trait]
impl Dialect for Speaker<JsonRpcV03> {
    async fn send_message(
        &self,
        mut req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        // `blocking` always written: a 0.3 server may read a missing one as false.
        req.configuration.get_or_insert_with(Default::default);
        let params = v03::MessageSendParams::from(req);
        let ev: v03::Event = self.wire.rpc(v03::methods::MESSAGE_SEND, &params).await?;
        send_reply(ev, &self.wire.endpoint.url, v03::methods::MESSAGE_SEND)
    }

    async fn send_streaming_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let params = v03::MessageSendParams::from(req);
        self.wire
            .rpc_stream::<_, v03::Event>(v03::methods::MESSAGE_STREAM, &params)
            .await
    }

    async fn get_task(&self, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError> {
        self.call::<v03::Task, _>(v03::methods::TASKS_GET, &v03::TaskQueryParams::from(req))
            .await
    }

    async fn cancel_task(&self, req: v1::CancelTaskRequest) -> Result<v1::Task, A2aError> {
        self.call::<v03::Task, _>(v03::methods::TASKS_CANCEL, &v03::TaskIdParams::from(req))
            .await
    }

    async fn subscribe_to_task(
        &self,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        self.wire
            .rpc_stream::<_, v03::Event>(
                v03::methods::TASKS_RESUBSCRIBE,
                &v03::TaskIdParams::from(req),
            )
            .await
    }

    async fn create_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        self.call::<v03::TaskPushNotificationConfig, _>(
            v03::methods::PUSH_CONFIG_SET,
            &v03::TaskPushNotificationConfig::from(config),
        )
        .await
    }

    async fn get_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        self.call::<v03::TaskPushNotificationConfig, _>(
            v03::methods::PUSH_CONFIG_GET,
            &push_config_params(req),
        )
        .await
    }

    async fn list_push_configs(
        &self,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        let params = v03::TaskIdParams {
            id: req.task_id,
            metadata: None,
        };
        let c: Vec<v03::TaskPushNotificationConfig> = self
            .wire
            .rpc(v03::methods::PUSH_CONFIG_LIST, &params)
            .await?;
        Ok(c.into_iter().map(Into::into).collect())
    }

    async fn delete_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError> {
        self.wire
            .rpc_unit(v03::methods::PUSH_CONFIG_DELETE, &push_config_params(req))
            .await
    }

    async fn extended_card(&self) -> Result<RawCard, A2aError> {
        let card = self
            .wire
            .rpc(
                v03::methods::GET_AUTHENTICATED_EXTENDED_CARD,
                &serde_json::json!({}),
            )
            .await?;
        Ok(RawCard::new(
            self.wire.endpoint.url.clone(),
            card,
            ProtocolVersion::V03,
        ))
    }
}
