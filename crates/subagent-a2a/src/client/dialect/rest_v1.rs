//! HTTP+JSON, A2A 1.0: the REST routes (`message:send`, `tasks/{id}`...) under the endpoint's
//! URL and tenant, ProtoJSON bodies (`application/a2a+json`).

use subagent_spi::async_trait;

use super::common::{push_config_route, push_configs_route, task_route};
use super::{Dialect, RawCard, Speaker};
use crate::client::endpoint::EventStream;
use crate::client::wire::path_segment;
use crate::error::A2aError;
use crate::types::{ProtocolVersion, v1};

/// HTTP+JSON 1.0.
pub(super) struct RestV1;

/// One 1.0 HTTP+JSON stream event.
fn decode_event(url: &str, data: &str) -> Result<v1::StreamResponse, A2aError> {
    serde_json::from_str::<v1::StreamResponse>(data)
        .map_err(|e| A2aError::decode(url, "an HTTP+JSON stream event", e))
}

#[async_trait]
impl Dialect for Speaker<RestV1> {
    async fn send_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        let url = self.wire.rest_url("message:send");
        self.wire
            .rest(reqwest::Method::POST, &url, Some(&req))
            .await
    }

    async fn send_streaming_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let url = self.wire.rest_url("message:stream");
        self.wire
            .rest_stream(reqwest::Method::POST, &url, Some(&req), decode_event)
            .await
    }

    async fn get_task(&self, req: v1::GetTaskRequest) -> Result<v1::Task, A2aError> {
        let url = self.wire.rest_url(&task_route(&req.id, req.history_length));
        self.wire.rest_get(&url).await
    }

    async fn list_tasks(
        &self,
        req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        let mut query: Vec<String> = Vec::new();
        let mut add = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                query.push(format!("{k}={}", path_segment(&v)));
            }
        };
        add("contextId", req.context_id.clone());
        add("status", req.status.map(|s| s.as_str().to_string()));
        add("pageSize", req.page_size.map(|n| n.to_string()));
        add("pageToken", req.page_token.clone());
        add("historyLength", req.history_length.map(|n| n.to_string()));
        add("statusTimestampAfter", req.status_timestamp_after.clone());
        add(
            "includeArtifacts",
            req.include_artifacts.map(|b| b.to_string()),
        );
        let mut url = self.wire.rest_url("tasks");
        if !query.is_empty() {
            url.push('?');
            url.push_str(&query.join("&"));
        }
        self.wire.rest_get(&url).await
    }

    async fn cancel_task(&self, req: v1::CancelTaskRequest) -> Result<v1::Task, A2aError> {
        let url = self
            .wire
            .rest_url(&format!("tasks/{}:cancel", path_segment(&req.id)));
        self.wire
            .rest(reqwest::Method::POST, &url, Some(&req))
            .await
    }

    async fn subscribe_to_task(
        &self,
        req: v1::SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let url = self
            .wire
            .rest_url(&format!("tasks/{}:subscribe", path_segment(&req.id)));
        self.wire
            .rest_stream(reqwest::Method::POST, &url, Some(&req), decode_event)
            .await
    }

    async fn create_push_config(
        &self,
        config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let url = self.wire.rest_url(&push_configs_route(
            config.task_id.as_deref().unwrap_or_default(),
        ));
        self.wire
            .rest(reqwest::Method::POST, &url, Some(&config))
            .await
    }

    async fn get_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let url = self
            .wire
            .rest_url(&push_config_route(&req.task_id, &req.id));
        self.wire.rest_get(&url).await
    }

    async fn list_push_configs(
        &self,
        req: v1::ListTaskPushNotificationConfigsRequest,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        let url = self.wire.rest_url(&push_configs_route(&req.task_id));
        let r: v1::ListTaskPushNotificationConfigsResponse = self.wire.rest_get(&url).await?;
        Ok(r.configs)
    }

    async fn delete_push_config(
        &self,
        req: v1::TaskPushNotificationConfigRef,
    ) -> Result<(), A2aError> {
        let url = self
            .wire
            .rest_url(&push_config_route(&req.task_id, &req.id));
        self.wire.rest_delete(&url).await
    }

    async fn extended_card(&self) -> Result<RawCard, A2aError> {
        let url = self.wire.rest_url("extendedAgentCard");
        let card = self.wire.rest_get(&url).await?;
        Ok(RawCard::new(url, card, ProtocolVersion::V1))
    }
}
