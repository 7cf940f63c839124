//! JSON-RPC, A2A 0.3: slash method names, kind-tagged JSON (converted to and from 1.0).

use subagent_spi::async_trait;

use super::common::no_task_listing;
use super::{Dialect, RawCard};
use crate::client::endpoint::EventStream;
use crate::client::wire::Wire;
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

#[async_trait]
impl Dialect for JsonRpcV03 {
    async fn send_message(
        &self,
        wire: &Wire,
        mut req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        // `blocking` always written: a 0.3 server may read a missing one as false.
        req.configuration.get_or_insert_with(Default::default);
        let params = v03::MessageSendParams::from(req);
        let ev: v03::Event = wire.rpc(v03::methods::MESSAGE_SEND, &params).await?;
        v1::SendMessageResponse::try_from(ev).map_err(|_| A2aError::Protocol {
            url: wire.endpoint.url.clone(),
            message: "message/send returned an update event instead of a task or message".into(),
        })
    }

    async fn send_streaming_message(
        &self,
        wire: &Wire,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let params = v03::MessageSendParams::from(req);
        wire.rpc_stream::<_, v03::Event>(v03::methods::MESSAGE_STREAM, &params)
            .await
    }

    async fn get_task(&self, wire: &Wire, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError> {
        let t: v03::Task = wire
            .rpc(v03::methods::TASKS_GET, &v03::TaskQueryParams::from(req))
            .await?;
        Ok(t.into())
    }

    async fn list_tasks(
        &self,
        wire: &Wire,
        _req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        Err(no_task_listing(wire))
    }

    async fn cancel_task(
        &self,
        wire: &Wire,
        req: v1::CancelTaskRequest,
    ) -> Result<v1::Task, A2aError> {
        let t: v03::Task = wire
            .rpc(v03::methods::TASKS_CANCEL, &v03::TaskIdParams::from(req))
            .await?;
        Ok(t.into())
    }

    async fn subscribe_to_task(
        &self,
        wire: &Wire,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        wire.rpc_stream::<_, v03::Event>(
            v03::methods::TASKS_RESUBSCRIBE,
            &v03::TaskIdParams::from(req),
        )
        .await
    }

    async fn create_push_config(
        &self,
        wire: &Wire,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let params = v03::TaskPushNotificationConfig {
            task_id: config.task_id.clone().unwrap_or_default(),
            push_notification_config: config.into(),
        };
        let c: v03::TaskPushNotificationConfig =
            wire.rpc(v03::methods::PUSH_CONFIG_SET, &params).await?;
        Ok(c.into())
    }

    async fn get_push_config(
        &self,
        wire: &Wire,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let c: v03::TaskPushNotificationConfig = wire
            .rpc(v03::methods::PUSH_CONFIG_GET, &push_config_params(req))
            .await?;
        Ok(c.into())
    }

    async fn list_push_configs(
        &self,
        wire: &Wire,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        let params = v03::TaskIdParams {
            id: req.task_id,
            metadata: None,
        };
        let c: Vec<v03::TaskPushNotificationConfig> =
            wire.rpc(v03::methods::PUSH_CONFIG_LIST, &params).await?;
        Ok(c.into_iter().map(Into::into).collect())
    }

    async fn delete_push_config(
        &self,
        wire: &Wire,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError> {
        wire.rpc_unit(v03::methods::PUSH_CONFIG_DELETE, &push_config_params(req))
            .await
    }

    async fn extended_card(&self, wire: &Wire) -> Result<RawCard, A2aError> {
        let card = wire
            .rpc(
                v03::methods::GET_AUTHENTICATED_EXTENDED_CARD,
                &serde_json::json!({}),
            )
            .await?;
        Ok(RawCard::new(
            wire.endpoint.url.clone(),
            card,
            ProtocolVersion::V03,
        ))
    }
}
