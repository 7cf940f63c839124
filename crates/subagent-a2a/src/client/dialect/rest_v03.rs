//! HTTP+JSON, A2A 0.3: the `/v1/…` routes with the 0.3 ProtoJSON shapes of
//! [`v03_rest`](crate::types::v03_rest) (no tenants), converted to and from 1.0.

use serde_json::Value;
use subagent_spi::async_trait;

use super::common::{no_task_listing, push_config_route, push_configs_route, task_route};
use super::{Dialect, RawCard};
use crate::client::endpoint::EventStream;
use crate::client::wire::{Wire, path_segment, to_json};
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
impl Dialect for RestV03 {
    async fn send_message(
        &self,
        wire: &Wire,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        let body = send_body(req);
        let url = wire.rest_v03_url("message:send");
        let ev: v03::Event = wire
            .rest_v03(
                reqwest::Method::POST,
                &url,
                Some(&body),
                v03_rest::event_from_proto,
            )
            .await?;
        v1::SendMessageResponse::try_from(ev).map_err(|_| A2aError::Protocol {
            url,
            message: "message:send returned an update event instead of a task or message".into(),
        })
    }

    async fn send_streaming_message(
        &self,
        wire: &Wire,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let body = send_body(req);
        let url = wire.rest_v03_url("message:stream");
        wire.rest_stream(reqwest::Method::POST, &url, Some(&body), decode_event)
            .await
    }

    async fn get_task(&self, wire: &Wire, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError> {
        let url = wire.rest_v03_url(&task_route(&req.id, req.history_length));
        let t: v03::Task = wire
            .rest_v03(reqwest::Method::GET, &url, None, v03_rest::task_from_proto)
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
        let id = &req.id;
        let url = wire.rest_v03_url(&format!("tasks/{}:cancel", path_segment(id)));
        let body = serde_json::json!({ "name": format!("tasks/{id}") });
        let t: v03::Task = wire
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
        wire: &Wire,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let url = wire.rest_v03_url(&format!("tasks/{}:subscribe", path_segment(&req.id)));
        wire.rest_stream::<()>(reqwest::Method::GET, &url, None, decode_event)
            .await
    }

    async fn create_push_config(
        &self,
        wire: &Wire,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let task_id = config.task_id.clone().unwrap_or_default();
        let c = v03::TaskPushNotificationConfig {
            task_id: task_id.clone(),
            push_notification_config: config.into(),
        };
        let proto = v03_rest::push_config_to_proto(&to_json(&c));
        let body = serde_json::json!({
            "parent": format!("tasks/{task_id}"),
            "configId": c.push_notification_config.id.clone().unwrap_or_default(),
            "config": proto,
        });
        let url = wire.rest_v03_url(&push_configs_route(&task_id));
        let c: v03::TaskPushNotificationConfig = wire
            .rest_v03(reqwest::Method::POST, &url, Some(&body), |v| {
                v03_rest::push_config_from_proto(v, &task_id)
            })
            .await?;
        Ok(c.into())
    }

    async fn get_push_config(
        &self,
        wire: &Wire,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let url = wire.rest_v03_url(&push_config_route(&req.task_id, &req.id));
        let c: v03::TaskPushNotificationConfig = wire
            .rest_v03(reqwest::Method::GET, &url, None, |v| {
                v03_rest::push_config_from_proto(v, &req.task_id)
            })
            .await?;
        Ok(c.into())
    }

    async fn list_push_configs(
        &self,
        wire: &Wire,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        let task_id = &req.task_id;
        let url = wire.rest_v03_url(&push_configs_route(task_id));
        let list: Vec<v03::TaskPushNotificationConfig> = wire
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
        wire: &Wire,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError> {
        let url = wire.rest_v03_url(&push_config_route(&req.task_id, &req.id));
        wire.rest_delete(&url).await
    }

    async fn extended_card(&self, wire: &Wire) -> Result<RawCard, A2aError> {
        let url = wire.rest_v03_url("card");
        let card = wire.rest_get(&url).await?;
        Ok(RawCard::new(url, card, ProtocolVersion::V03))
    }
}
