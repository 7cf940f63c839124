//! HTTP+JSON, A2A 0.3: the `/v1/…` routes with the 0.3 ProtoJSON shapes of
//! [`v03_rest`](crate::types::v03_rest) (no tenants), converted to and from 1.0.

use serde_json::Value;
use subagent_spi::async_trait;

use super::common::{push_config_route, push_configs_route, send_reply, task_route};
use super::{Dialect, RawCard, Speaker};
use crate::client::endpoint::EventStream;
use crate::client::wire::{path_segment, to_json};
use crate::error::A2aError;
use crate::types::{ProtocolVersion, v1, v03, v03_rest};

/// HTTP+JSON 0.3.
pub(super) struct RestV03;

/// A 0.3 HTTP+JSON `SendMessageRequest`, with `blocking` always written: ProtoJSON reads a
/// missing bool as `false`, so 0.3 servers would take a request without it as non-blocking.
fn send_body(req: v1::SendMessageRequest) -> Value {
    let blocking = !req
        .configuration
        .as_ref()
        .is_some_and(|c| c.return_immediately);
    let mut body = v03_rest::send_params_to_proto(&to_json(&v03::MessageSendParams::from(req)));
    if let Some(o) = body.as_object_mut() {
        let conf = o
            .entry("configuration")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(c) = conf.as_object_mut() {
            c.insert("blocking".into(), Value::Bool(blocking));
        }
    }
    body
}

/// One 0.3 HTTP+JSON stream event (a ProtoJSON `StreamResponse`).
fn decode_event(url: &str, data: &str) -> Result<v1::StreamResponse, A2aError> {
    let v: Value = serde_json::from_str(data)
        .map_err(|e| A2aError::decode(url, "a 0.3 HTTP+JSON stream event", e))?;
    let v = v03_rest::event_from_proto(&v).map_err(|message| A2aError::Protocol {
        url: url.to_string(),
        message: format!("a 0.3 HTTP+JSON stream event: {message}"),
    })?;
    serde_json::from_value::<v03::Event>(v)
        .map(Into::into)
        .map_err(|e| A2aError::decode(url, "a 0.3 HTTP+JSON stream event", e))
}

#[async_trait]
impl Dialect for Speaker<RestV03> {
    async fn send_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        let body = send_body(req);
        let url = self.wire.rest_v03_url("message:send");
        let ev: v03::Event = self
            .wire
            .rest_v03(
                reqwest::Method::POST,
                &url,
                Some(&body),
                v03_rest::event_from_proto,
            )
            .await?;
        send_reply(ev, &url, "message:send")
    }

    async fn send_streaming_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let body = send_body(req);
        let url = self.wire.rest_v03_url("message:stream");
        self.wire
            .rest_stream(reqwest::Method::POST, &url, Some(&body), decode_event)
            .await
    }

    async fn get_task(&self, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError> {
        let url = self
            .wire
            .rest_v03_url(&task_route(&req.id, req.history_length));
        let t: v03::Task = self
            .wire
            .rest_v03(reqwest::Method::GET, &url, None, v03_rest::task_from_proto)
            .await?;
        Ok(t.into())
    }

    async fn cancel_task(&self, req: v1::CancelTaskRequest) -> Result<v1::Task, A2aError> {
        let id = &req.id;
        let url = self
            .wire
            .rest_v03_url(&format!("tasks/{}:cancel", path_segment(id)));
        let body = serde_json::json!({ "name": format!("tasks/{id}") });
        let t: v03::Task = self
            .wire
            .rest_v03(
                reqwest::Method::POST,
                &url,
                Some(&body),
                v03_rest::task_from_proto,
            )
            .await?;
        Ok(t.into())
    }

    async fn subscribe_to_task(
        &self,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let url = self
            .wire
            .rest_v03_url(&format!("tasks/{}:subscribe", path_segment(&req.id)));
        self.wire
            .rest_stream::<()>(reqwest::Method::GET, &url, None, decode_event)
            .await
    }

    async fn create_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let c = v03::TaskPushNotificationConfig::from(config);
        let task_id = c.task_id.clone();
        let proto = v03_rest::push_config_to_proto(&to_json(&c));
        let body = serde_json::json!({
            "parent": format!("tasks/{task_id}"),
            "configId": c.push_notification_config.id.clone().unwrap_or_default(),
            "config": proto,
        });
        let url = self.wire.rest_v03_url(&push_configs_route(&task_id));
        let c: v03::TaskPushNotificationConfig = self
            .wire
            .rest_v03(reqwest::Method::POST, &url, Some(&body), |v| {
                v03_rest::push_config_from_proto(v, &task_id)
            })
            .await?;
        Ok(c.into())
    }

    async fn get_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let url = self
            .wire
            .rest_v03_url(&push_config_route(&req.task_id, &req.id));
        let c: v03::TaskPushNotificationConfig = self
            .wire
            .rest_v03(reqwest::Method::GET, &url, None, |v| {
                v03_rest::push_config_from_proto(v, &req.task_id)
            })
            .await?;
        Ok(c.into())
    }

    async fn list_push_configs(
        &self,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        let task_id = &req.task_id;
        let url = self.wire.rest_v03_url(&push_configs_route(task_id));
        let list: Vec<v03::TaskPushNotificationConfig> = self
            .wire
            .rest_v03(reqwest::Method::GET, &url, None, |v| {
                // `{"configs": […]}` (the proto response), or a bare array.
                let items = v
                    .get("configs")
                    .unwrap_or(v)
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                items
                    .iter()
                    .map(|c| v03_rest::push_config_from_proto(c, task_id))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array)
            })
            .await?;
        Ok(list.into_iter().map(Into::into).collect())
    }

    async fn delete_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError> {
        let url = self
            .wire
            .rest_v03_url(&push_config_route(&req.task_id, &req.id));
        self.wire.rest_delete(&url).await
    }

    async fn extended_card(&self) -> Result<RawCard, A2aError> {
        let url = self.wire.rest_v03_url("card");
        let card = self.wire.rest_get(&url).await?;
        Ok(RawCard::new(url, card, ProtocolVersion::V03))
    }
}
