//! [`A2aClient`]: one remote A2A endpoint, spoken in its own version and binding, presented in
//! 1.0 terms.

use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue, header};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::sse::{SseError, data_events};
use crate::error::A2aError;
use crate::types::jsonrpc::{Request, Response};
use crate::types::{ProtocolVersion, VERSION_HEADER, binding, v1, v03, v03_rest};
use serde_json::Value;

/// The largest SSE event accepted (16 MiB).
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// The largest non-streaming response body accepted (32 MiB).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// How long an event stream may stay silent (no bytes, not even a keep-alive comment) before
/// the call fails with an [`A2aError::Protocol`] naming the URL and the limit (60 s). Servers send keep-alive comments
/// (ours every 15 s), so only a stuck peer or network reaches it.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A stream of 1.0 stream responses.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<v1::StreamResponse, A2aError>> + Send>>;

/// The binding a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP (`JSONRPC`).
    JsonRpc,
    /// The HTTP+JSON (REST) binding (`HTTP+JSON`).
    HttpJson,
    /// gRPC (`GRPC`, 1.0 only; feature `grpc-client`).
    #[cfg(feature = "grpc-client")]
    Grpc,
}

impl Binding {
    /// Parses a card's binding name (case-insensitive); `None` for unknown bindings, and for
    /// gRPC without the `grpc-client` feature.
    pub fn parse(s: &str) -> Option<Self> {
        if s.eq_ignore_ascii_case(binding::JSONRPC) {
            Some(Binding::JsonRpc)
        } else if s.eq_ignore_ascii_case(binding::HTTP_JSON) || s.eq_ignore_ascii_case("REST") {
            Some(Binding::HttpJson)
        } else if cfg!(feature = "grpc-client") && s.eq_ignore_ascii_case(binding::GRPC) {
            #[cfg(feature = "grpc-client")]
            return Some(Binding::Grpc);
            #[cfg(not(feature = "grpc-client"))]
            None
        } else {
            None
        }
    }

    /// The card name of the binding.
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::JsonRpc => binding::JSONRPC,
            Binding::HttpJson => binding::HTTP_JSON,
            #[cfg(feature = "grpc-client")]
            Binding::Grpc => binding::GRPC,
        }
    }
}

/// Where and how to reach an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The absolute URL (JSON-RPC endpoint, or the HTTP+JSON base URL).
    pub url: String,
    /// The binding.
    pub binding: Binding,
    /// The protocol version spoken there.
    pub version: ProtocolVersion,
    /// Tenant to pass in 1.0 requests, when the card names one.
    pub tenant: Option<String>,
}

/// A client for one A2A endpoint. Every call takes and returns 1.0 types; for a 0.3 endpoint
/// the client converts to and from 0.3 on the wire.
///
/// Supported: JSON-RPC and HTTP+JSON, each in 1.0 and 0.3 (0.3 HTTP+JSON: the `/v1/…` routes
/// with the 0.3 ProtoJSON shapes of [`v03_rest`](crate::types::v03_rest)).
pub struct A2aClient {
    http: reqwest::Client,
    endpoint: Endpoint,
    headers: HeaderMap,
    next_id: AtomicI64,
    stream_idle_timeout: Option<Duration>,
    /// How the extended card's signatures are checked.
    pub(super) verification: std::sync::Arc<super::CardVerification>,
    #[cfg(feature = "grpc-client")]
    grpc: Option<super::grpc::GrpcConn>,
}

impl std::fmt::Debug for A2aClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold credentials: never print them.
        f.debug_struct("A2aClient")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl A2aClient {
    /// A client for `endpoint`, sending `headers` (e.g. auth) on every request.
    pub fn new(http: reqwest::Client, endpoint: Endpoint, headers: HeaderMap) -> Self {
        Self {
            #[cfg(feature = "grpc-client")]
            grpc: (endpoint.binding == Binding::Grpc).then(|| {
                super::grpc::GrpcConn::new(&endpoint.url, headers.clone(), MAX_BODY_BYTES)
            }),
            http,
            endpoint,
            headers,
            next_id: AtomicI64::new(1),
            stream_idle_timeout: Some(DEFAULT_STREAM_IDLE_TIMEOUT),
            verification: Default::default(),
        }
    }

    /// Sets how the signatures of the extended card ([`get_extended_agent_card`]) are checked
    /// (builder style; default [`CardTrust::VerifyIfPresent`](crate::signing::CardTrust) with
    /// no trusted keys). A client made by
    /// [`A2aSubagentDefinition::client`](super::A2aSubagentDefinition::client) has its
    /// resolver's policy, the one the public card passed.
    ///
    /// [`get_extended_agent_card`]: Self::get_extended_agent_card
    #[must_use]
    pub fn with_card_verification(mut self, v: super::CardVerification) -> Self {
        self.verification = std::sync::Arc::new(v);
        self
    }

    /// Sets how long an event stream may stay silent (no bytes at all, not even a keep-alive
    /// comment; the wait for the answer's head counts too) before the call fails with an
    /// [`A2aError::Protocol`] naming the URL and the limit (see [`stream_idle_error`]; default
    /// [`DEFAULT_STREAM_IDLE_TIMEOUT`]). `Duration::ZERO` waits forever.
    #[must_use]
    pub fn with_stream_idle_timeout(mut self, limit: Duration) -> Self {
        self.stream_idle_timeout = (!limit.is_zero()).then_some(limit);
        self
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    #[cfg(feature = "grpc-client")]
    fn grpc(&self) -> Result<&super::grpc::GrpcConn, A2aError> {
        if self.endpoint.version != ProtocolVersion::V1 {
            return Err(A2aError::Unsupported {
                message: format!(
                    "gRPC for A2A {} at {} (this client speaks gRPC 1.0)",
                    self.endpoint.version.as_str(),
                    self.endpoint.url
                ),
            });
        }
        self.grpc.as_ref().ok_or_else(|| A2aError::Unsupported {
            message: format!("no gRPC channel for {}", self.endpoint.url),
        })
    }

    fn base_headers(&self, accept_sse: bool) -> HeaderMap {
        let mut h = self.headers.clone();
        let ct = match (self.endpoint.binding, self.endpoint.version) {
            (Binding::HttpJson, ProtocolVersion::V1) => "application/a2a+json",
            _ => "application/json",
        };
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static(if accept_sse {
                "text/event-stream"
            } else {
                "application/json, application/a2a+json"
            }),
        );
        h.insert(
            VERSION_HEADER,
            HeaderValue::from_static(self.endpoint.version.as_str()),
        );
        crate::trace_context::inject(&mut h);
        h
    }

    fn with_tenant_send(&self, mut req: v1::SendMessageRequest) -> v1::SendMessageRequest {
        if req.tenant.is_none() {
            req.tenant = self.endpoint.tenant.clone();
        }
        req
    }

    /// `SendMessage` / `message/send`.
    pub async fn send_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        let req = self.with_tenant_send(req);
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                self.rpc(v1::methods::SEND_MESSAGE, &req).await
            }
            (Binding::JsonRpc, _) => {
                // `blocking` always written: a 0.3 server may read a missing one as false.
                let mut req = req;
                req.configuration.get_or_insert_with(Default::default);
                let params = v03::MessageSendParams::from(req);
                let ev: v03::Event = self.rpc(v03::methods::MESSAGE_SEND, &params).await?;
                v1::SendMessageResponse::try_from(ev).map_err(|_| A2aError::Protocol {
                    url: self.endpoint.url.clone(),
                    message: "message/send returned an update event instead of a task or message"
                        .into(),
                })
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => self.grpc()?.send_message(&req).await,
            (Binding::HttpJson, ProtocolVersion::V03) => {
                let body = send_body_v03(req);
                let url = self.rest_v03_url("message:send");
                let ev: v03::Event = self
                    .rest_v03(
                        reqwest::Method::POST,
                        &url,
                        Some(&body),
                        v03_rest::event_from_proto,
                    )
                    .await?;
                v1::SendMessageResponse::try_from(ev).map_err(|_| A2aError::Protocol {
                    url,
                    message: "message:send returned an update event instead of a task or message"
                        .into(),
                })
            }
            (Binding::HttpJson, _) => {
                let url = self.rest_url("message:send");
                self.rest(reqwest::Method::POST, &url, Some(&req)).await
            }
        }
    }

    /// `SendStreamingMessage` / `message/stream`: the events as they arrive.
    pub async fn send_streaming_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let req = self.with_tenant_send(req);
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                self.rpc_stream::<_, v1::StreamResponse>(v1::methods::SEND_STREAMING_MESSAGE, &req)
                    .await
            }
            (Binding::JsonRpc, _) => {
                let params = v03::MessageSendParams::from(req);
                self.rpc_stream::<_, v03::Event>(v03::methods::MESSAGE_STREAM, &params)
                    .await
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => {
                self.grpc()?
                    .send_streaming_message(&req, self.stream_idle_timeout)
                    .await
            }
            (Binding::HttpJson, ProtocolVersion::V03) => {
                let body = send_body_v03(req);
                let url = self.rest_v03_url("message:stream");
                self.rest_stream(reqwest::Method::POST, &url, Some(&body), decode_v03_event)
                    .await
            }
            (Binding::HttpJson, _) => {
                let url = self.rest_url("message:stream");
                self.rest_stream(reqwest::Method::POST, &url, Some(&req), decode_v1_event)
                    .await
            }
        }
    }

    /// `GetTask` / `tasks/get`.
    pub async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<v1::Task, A2aError> {
        let req = v1::GetTaskRequest {
            tenant: self.endpoint.tenant.clone(),
            id: id.to_string(),
            history_length,
        };
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => self.rpc(v1::methods::GET_TASK, &req).await,
            (Binding::JsonRpc, _) => {
                let t: v03::Task = self
                    .rpc(v03::methods::TASKS_GET, &v03::TaskQueryParams::from(req))
                    .await?;
                Ok(t.into())
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => self.grpc()?.get_task(&req).await,
            (Binding::HttpJson, ProtocolVersion::V03) => {
                let mut url = self.rest_v03_url(&format!("tasks/{}", path_segment(id)));
                if let Some(n) = history_length {
                    url.push_str(&format!("?historyLength={n}"));
                }
                let t: v03::Task = self
                    .rest_v03::<Value, _>(
                        reqwest::Method::GET,
                        &url,
                        None,
                        v03_rest::task_from_proto,
                    )
                    .await?;
                Ok(t.into())
            }
            (Binding::HttpJson, _) => {
                let mut url = self.rest_url(&format!("tasks/{}", path_segment(id)));
                if let Some(n) = history_length {
                    url.push_str(&format!("?historyLength={n}"));
                }
                self.rest::<(), _>(reqwest::Method::GET, &url, None).await
            }
        }
    }

    /// `ListTasks` (1.0 only; 0.3 has no list method).
    pub async fn list_tasks(
        &self,
        mut req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        if req.tenant.is_none() {
            req.tenant = self.endpoint.tenant.clone();
        }
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                self.rpc(v1::methods::LIST_TASKS, &req).await
            }
            (_, ProtocolVersion::V03) => Err(A2aError::Unsupported {
                message: format!(
                    "ListTasks at {}: A2A 0.3 has no task listing",
                    self.endpoint.url
                ),
            }),
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => self.grpc()?.list_tasks(&req).await,
            (Binding::HttpJson, _) => {
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
                let mut url = self.rest_url("tasks");
                if !query.is_empty() {
                    url.push('?');
                    url.push_str(&query.join("&"));
                }
                self.rest::<(), _>(reqwest::Method::GET, &url, None).await
            }
        }
    }

    /// `CancelTask` / `tasks/cancel`.
    pub async fn cancel_task(&self, id: &str) -> Result<v1::Task, A2aError> {
        let req = v1::CancelTaskRequest {
            tenant: self.endpoint.tenant.clone(),
            id: id.to_string(),
            metadata: None,
        };
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                self.rpc(v1::methods::CANCEL_TASK, &req).await
            }
            (Binding::JsonRpc, _) => {
                let t: v03::Task = self
                    .rpc(v03::methods::TASKS_CANCEL, &v03::TaskIdParams::from(req))
                    .await?;
                Ok(t.into())
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => self.grpc()?.cancel_task(&req).await,
            (Binding::HttpJson, ProtocolVersion::V03) => {
                let url = self.rest_v03_url(&format!("tasks/{}:cancel", path_segment(id)));
                let body = serde_json::json!({ "name": format!("tasks/{id}") });
                let t: v03::Task = self
                    .rest_v03(
                        reqwest::Method::POST,
                        &url,
                        Some(&body),
                        v03_rest::task_from_proto,
                    )
                    .await?;
                Ok(t.into())
            }
            (Binding::HttpJson, _) => {
                let url = self.rest_url(&format!("tasks/{}:cancel", path_segment(id)));
                self.rest(reqwest::Method::POST, &url, Some(&req)).await
            }
        }
    }

    /// `CreateTaskPushNotificationConfig` / `tasks/pushNotificationConfig/set`: registers a
    /// webhook for `task_id`; the server's copy (with its id) comes back.
    pub async fn create_push_config(
        &self,
        task_id: &str,
        mut config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        config.task_id = Some(task_id.to_string());
        if config.tenant.is_none() {
            config.tenant = self.endpoint.tenant.clone();
        }
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                self.rpc(v1::methods::CREATE_PUSH_CONFIG, &config).await
            }
            (Binding::JsonRpc, _) => {
                let params = v03::TaskPushNotificationConfig {
                    task_id: task_id.to_string(),
                    push_notification_config: config.into(),
                };
                let c: v03::TaskPushNotificationConfig =
                    self.rpc(v03::methods::PUSH_CONFIG_SET, &params).await?;
                Ok(c.into())
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => self.grpc()?.create_push_config(&config).await,
            (Binding::HttpJson, ProtocolVersion::V03) => {
                let c = v03::TaskPushNotificationConfig {
                    task_id: task_id.to_string(),
                    push_notification_config: config.into(),
                };
                let proto = v03_rest::push_config_to_proto(&to_json(&c));
                let body = serde_json::json!({
                    "parent": format!("tasks/{task_id}"),
                    "configId": c.push_notification_config.id.clone().unwrap_or_default(),
                    "config": proto,
                });
                let url = self.rest_v03_url(&format!(
                    "tasks/{}/pushNotificationConfigs",
                    path_segment(task_id)
                ));
                let tid = task_id.to_string();
                let c: v03::TaskPushNotificationConfig = self
                    .rest_v03(reqwest::Method::POST, &url, Some(&body), |v| {
                        v03_rest::push_config_from_proto(v, &tid)
                    })
                    .await?;
                Ok(c.into())
            }
            (Binding::HttpJson, _) => {
                let url = self.rest_url(&format!(
                    "tasks/{}/pushNotificationConfigs",
                    path_segment(task_id)
                ));
                self.rest(reqwest::Method::POST, &url, Some(&config)).await
            }
        }
    }

    /// `GetTaskPushNotificationConfig` / `tasks/pushNotificationConfig/get`.
    pub async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                let req = self.push_config_ref(task_id, config_id);
                self.rpc(v1::methods::GET_PUSH_CONFIG, &req).await
            }
            (Binding::JsonRpc, _) => {
                let params = push_config_params_03(task_id, config_id);
                let c: v03::TaskPushNotificationConfig =
                    self.rpc(v03::methods::PUSH_CONFIG_GET, &params).await?;
                Ok(c.into())
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => {
                self.grpc()?
                    .get_push_config(self.endpoint.tenant.as_deref(), task_id, config_id)
                    .await
            }
            (Binding::HttpJson, ProtocolVersion::V03) => {
                let url = self.push_config_url(task_id, config_id);
                let c: v03::TaskPushNotificationConfig = self
                    .rest_v03::<Value, _>(reqwest::Method::GET, &url, None, |v| {
                        v03_rest::push_config_from_proto(v, task_id)
                    })
                    .await?;
                Ok(c.into())
            }
            (Binding::HttpJson, _) => {
                let url = self.push_config_url(task_id, config_id);
                self.rest::<(), _>(reqwest::Method::GET, &url, None).await
            }
        }
    }

    /// `ListTaskPushNotificationConfigs` / `tasks/pushNotificationConfig/list`.
    pub async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                let req = v1::ListTaskPushNotificationConfigsRequest {
                    tenant: self.endpoint.tenant.clone(),
                    task_id: task_id.to_string(),
                    page_size: None,
                    page_token: None,
                };
                let r: v1::ListTaskPushNotificationConfigsResponse =
                    self.rpc(v1::methods::LIST_PUSH_CONFIGS, &req).await?;
                Ok(r.configs)
            }
            (Binding::JsonRpc, _) => {
                let params = v03::TaskIdParams {
                    id: task_id.to_string(),
                    metadata: None,
                };
                let c: Vec<v03::TaskPushNotificationConfig> =
                    self.rpc(v03::methods::PUSH_CONFIG_LIST, &params).await?;
                Ok(c.into_iter().map(Into::into).collect())
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => {
                self.grpc()?
                    .list_push_configs(self.endpoint.tenant.as_deref(), task_id)
                    .await
            }
            (Binding::HttpJson, ProtocolVersion::V03) => {
                let url = self.rest_v03_url(&format!(
                    "tasks/{}/pushNotificationConfigs",
                    path_segment(task_id)
                ));
                let list: Vec<v03::TaskPushNotificationConfig> = self
                    .rest_v03::<Value, _>(reqwest::Method::GET, &url, None, |v| {
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
            (Binding::HttpJson, _) => {
                let url = self.rest_url(&format!(
                    "tasks/{}/pushNotificationConfigs",
                    path_segment(task_id)
                ));
                let r: v1::ListTaskPushNotificationConfigsResponse =
                    self.rest::<(), _>(reqwest::Method::GET, &url, None).await?;
                Ok(r.configs)
            }
        }
    }

    /// The 1.0 request naming one push config (get and delete send it).
    fn push_config_ref(&self, task_id: &str, config_id: &str) -> v1::TaskPushNotificationConfigRef {
        v1::TaskPushNotificationConfigRef {
            tenant: self.endpoint.tenant.clone(),
            task_id: task_id.to_string(),
            id: config_id.to_string(),
        }
    }

    /// The HTTP+JSON URL of one push config (get and delete use it), in the endpoint's version.
    fn push_config_url(&self, task_id: &str, config_id: &str) -> String {
        let path = format!(
            "tasks/{}/pushNotificationConfigs/{}",
            path_segment(task_id),
            path_segment(config_id)
        );
        match self.endpoint.version {
            ProtocolVersion::V03 => self.rest_v03_url(&path),
            _ => self.rest_url(&path),
        }
    }

    /// `DeleteTaskPushNotificationConfig` / `tasks/pushNotificationConfig/delete`.
    pub async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), A2aError> {
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                let req = self.push_config_ref(task_id, config_id);
                self.rpc_unit(v1::methods::DELETE_PUSH_CONFIG, &req).await
            }
            (Binding::JsonRpc, _) => {
                let params = push_config_params_03(task_id, config_id);
                self.rpc_unit(v03::methods::PUSH_CONFIG_DELETE, &params)
                    .await
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => {
                self.grpc()?
                    .delete_push_config(self.endpoint.tenant.as_deref(), task_id, config_id)
                    .await
            }
            (Binding::HttpJson, _) => {
                let url = self.push_config_url(task_id, config_id);
                let _: serde_json::Value = self
                    .rest::<(), _>(reqwest::Method::DELETE, &url, None)
                    .await?;
                Ok(())
            }
        }
    }

    /// `GetExtendedAgentCard` / `agent/getAuthenticatedExtendedCard` / `GET extendedAgentCard`:
    /// the card an authenticated caller gets (send the credentials in the client's headers).
    /// Its signatures are checked as the resolver checks the public card's (see
    /// [`with_card_verification`](Self::with_card_verification)): a refused card is
    /// [`A2aError::CardSignature`] naming the endpoint.
    pub async fn get_extended_agent_card(&self) -> Result<v1::AgentCard, A2aError> {
        let url = self.endpoint.url.clone();
        // The card as the peer sent it (signatures are over that shape), and its version.
        let (url, card, version): (String, Value, ProtocolVersion) =
            match (self.endpoint.binding, self.endpoint.version) {
                (Binding::JsonRpc, ProtocolVersion::V1) => {
                    let req = v1::GetExtendedAgentCardRequest {
                        tenant: self.endpoint.tenant.clone(),
                    };
                    let c = self.rpc(v1::methods::GET_EXTENDED_AGENT_CARD, &req).await?;
                    (url, c, ProtocolVersion::V1)
                }
                (Binding::JsonRpc, _) => {
                    let c = self
                        .rpc(
                            v03::methods::GET_AUTHENTICATED_EXTENDED_CARD,
                            &serde_json::json!({}),
                        )
                        .await?;
                    (url, c, ProtocolVersion::V03)
                }
                #[cfg(feature = "grpc-client")]
                (Binding::Grpc, _) => {
                    let c = self
                        .grpc()?
                        .get_extended_agent_card(self.endpoint.tenant.as_deref())
                        .await?;
                    let c = serde_json::to_value(&c).map_err(|e| A2aError::Protocol {
                        url: url.clone(),
                        message: format!("the extended card does not serialize: {e}"),
                    })?;
                    (url, c, ProtocolVersion::V1)
                }
                (Binding::HttpJson, ProtocolVersion::V03) => {
                    let url = self.rest_v03_url("card");
                    let c = self.rest::<(), _>(reqwest::Method::GET, &url, None).await?;
                    (url, c, ProtocolVersion::V03)
                }
                (Binding::HttpJson, _) => {
                    let url = self.rest_url("extendedAgentCard");
                    let c = self.rest::<(), _>(reqwest::Method::GET, &url, None).await?;
                    (url, c, ProtocolVersion::V1)
                }
            };
        self.verification
            .check_value(&self.http, &url, &card)
            .await?;
        let invalid = |e: serde_json::Error| A2aError::Protocol {
            url: url.clone(),
            message: format!("invalid extended agent card: {e}"),
        };
        match version {
            ProtocolVersion::V03 => serde_json::from_value::<v03::AgentCard>(card)
                .map(Into::into)
                .map_err(invalid),
            _ => serde_json::from_value(card).map_err(invalid),
        }
    }

    /// `SubscribeToTask` / `tasks/resubscribe`: the task's events from now on.
    pub async fn subscribe_to_task(&self, id: &str) -> Result<EventStream, A2aError> {
        let req = v1::SubscribeToTaskRequest {
            tenant: self.endpoint.tenant.clone(),
            id: id.to_string(),
        };
        match (self.endpoint.binding, self.endpoint.version) {
            (Binding::JsonRpc, ProtocolVersion::V1) => {
                self.rpc_stream::<_, v1::StreamResponse>(v1::methods::SUBSCRIBE_TO_TASK, &req)
                    .await
            }
            (Binding::JsonRpc, _) => {
                self.rpc_stream::<_, v03::Event>(
                    v03::methods::TASKS_RESUBSCRIBE,
                    &v03::TaskIdParams::from(req),
                )
                .await
            }
            #[cfg(feature = "grpc-client")]
            (Binding::Grpc, _) => {
                self.grpc()?
                    .subscribe_to_task(&req, self.stream_idle_timeout)
                    .await
            }
            (Binding::HttpJson, ProtocolVersion::V03) => {
                let url = self.rest_v03_url(&format!("tasks/{}:subscribe", path_segment(id)));
                self.rest_stream::<()>(reqwest::Method::GET, &url, None, decode_v03_event)
                    .await
            }
            (Binding::HttpJson, _) => {
                let url = self.rest_url(&format!("tasks/{}:subscribe", path_segment(id)));
                self.rest_stream(reqwest::Method::POST, &url, Some(&req), decode_v1_event)
                    .await
            }
        }
    }

    /// Sends a request answered by a stream: the answer's head must come within the stream
    /// idle limit too (a peer that accepts and goes silent is stuck either way).
    async fn send_for_stream(
        &self,
        rb: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<reqwest::Response, A2aError> {
        let send = rb.send();
        let sent = match self.stream_idle_timeout {
            None => send.await,
            Some(limit) => tokio::time::timeout(limit, send)
                .await
                .map_err(|_| stream_idle_error(url, limit))?,
        };
        sent.map_err(|e| A2aError::http(url, e))
    }

    fn rest_url(&self, path: &str) -> String {
        let base = self.endpoint.url.trim_end_matches('/');
        match &self.endpoint.tenant {
            Some(t) => format!("{base}/{}/{path}", path_segment(t)),
            None => format!("{base}/{path}"),
        }
    }

    /// A 0.3 HTTP+JSON URL: `{url}/v1/{path}` (0.3 has no tenants).
    fn rest_v03_url(&self, path: &str) -> String {
        format!("{}/v1/{path}", self.endpoint.url.trim_end_matches('/'))
    }

    /// A 0.3 HTTP+JSON call: the answer's ProtoJSON goes through `convert` (to the 0.3
    /// JSON-RPC shape) and is then read as `R`.
    async fn rest_v03<B: Serialize, R: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&B>,
        convert: impl FnOnce(&Value) -> Result<Value, String>,
    ) -> Result<R, A2aError> {
        let v: Value = self.rest(method, url, body).await?;
        let v = convert(&v).map_err(|message| A2aError::Protocol {
            url: url.to_string(),
            message: format!("the 0.3 HTTP+JSON response: {message}"),
        })?;
        serde_json::from_value(v)
            .map_err(|e| A2aError::decode(url, "the 0.3 HTTP+JSON response", e))
    }

    /// A JSON-RPC request of `method` with `params` (and a fresh id) to the endpoint, with the
    /// reference's headers (`stream`: asking for SSE).
    fn rpc_request<P: Serialize>(
        &self,
        method: &'static str,
        params: &P,
        stream: bool,
    ) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.http
            .post(&self.endpoint.url)
            .headers(self.base_headers(stream))
            .json(&Request::new(id, method, params))
    }

    /// Sends a JSON-RPC call; the answer's status and body.
    async fn rpc_exchange<P: Serialize>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), A2aError> {
        let url = &self.endpoint.url;
        let resp = self
            .rpc_request(method, params, false)
            .send()
            .await
            .map_err(|e| A2aError::http(url, e))?;
        let status = resp.status();
        Ok((status, read_body(resp, url).await?))
    }

    async fn rpc<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<R, A2aError> {
        let (status, bytes) = self.rpc_exchange(method, params).await?;
        let url = &self.endpoint.url;
        match serde_json::from_slice::<Response<R>>(&bytes) {
            Ok(r) => r
                .into_result()
                .map_err(|error| rpc_error(method, url, error)),
            Err(e) if status.is_success() => {
                Err(A2aError::decode(url, format!("the `{method}` response"), e))
            }
            Err(_) => Err(A2aError::status(url, status.as_u16(), &bytes)),
        }
    }

    /// A call whose result carries nothing (`{}` or `null`): success unless `error` is set.
    async fn rpc_unit<P: Serialize>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<(), A2aError> {
        /// Only the error matters; a `null` result is success.
        #[derive(serde::Deserialize)]
        struct Unit {
            #[serde(default)]
            error: Option<crate::types::jsonrpc::RpcError>,
        }
        let (status, bytes) = self.rpc_exchange(method, params).await?;
        let url = &self.endpoint.url;
        match serde_json::from_slice::<Unit>(&bytes) {
            Ok(Unit { error: Some(error) }) => Err(rpc_error(method, url, error)),
            Ok(Unit { error: None }) if status.is_success() => Ok(()),
            _ => Err(A2aError::status(url, status.as_u16(), &bytes)),
        }
    }

    async fn rpc_stream<P: Serialize, R>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<EventStream, A2aError>
    where
        R: DeserializeOwned + Into<v1::StreamResponse> + Send + 'static,
    {
        let url = self.endpoint.url.clone();
        let rb = self.rpc_request(method, params, true);
        let resp = self.send_for_stream(rb, &url).await?;
        let status = resp.status();
        if !is_event_stream(&resp) {
            // An error answered as a plain JSON-RPC response (or a non-JSON failure).
            let bytes = read_body(resp, &url).await?;
            return match serde_json::from_slice::<Response<serde_json::Value>>(&bytes) {
                Ok(r) => match r.into_result() {
                    Err(error) => Err(rpc_error(method, &url, error)),
                    Ok(v) => {
                        // A single result instead of a stream: accept it as one event.
                        let ev: R = serde_json::from_value(v).map_err(|e| {
                            A2aError::decode(&url, format!("the `{method}` response"), e)
                        })?;
                        Ok(Box::pin(futures::stream::once(
                            async move { Ok(ev.into()) },
                        )))
                    }
                },
                Err(_) => Err(A2aError::status(&url, status.as_u16(), &bytes)),
            };
        }
        if !status.is_success() {
            return Err(A2aError::status(&url, status.as_u16(), b""));
        }
        let events = data_events(
            resp.bytes_stream(),
            MAX_EVENT_BYTES,
            self.stream_idle_timeout,
        );
        let stream = events.map(move |item| {
            let data = item.map_err(|e| sse_error(&url, e))?;
            let r: Response<R> = serde_json::from_str(&data)
                .map_err(|e| A2aError::decode(&url, format!("a `{method}` event"), e))?;
            r.into_result()
                .map(Into::into)
                .map_err(|error| rpc_error(method, &url, error))
        });
        Ok(Box::pin(stream))
    }

    /// An HTTP+JSON request with the reference's headers (`stream`: asking for SSE) and `body`
    /// as JSON.
    fn rest_request<B: Serialize>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&B>,
        stream: bool,
    ) -> Result<reqwest::RequestBuilder, A2aError> {
        let rb = self
            .http
            .request(method, url)
            .headers(self.base_headers(stream));
        let Some(b) = body else { return Ok(rb) };
        let bytes =
            serde_json::to_vec(b).map_err(|e| A2aError::decode(url, "the request body", e))?;
        Ok(rb.body(bytes))
    }

    async fn rest<B: Serialize, R: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&B>,
    ) -> Result<R, A2aError> {
        let rb = self.rest_request(method, url, body, false)?;
        let resp = rb.send().await.map_err(|e| A2aError::http(url, e))?;
        let status = resp.status();
        let bytes = read_body(resp, url).await?;
        if !status.is_success() {
            return Err(rest_error(url, status.as_u16(), &bytes));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| A2aError::decode(url, "the HTTP+JSON response", e))
    }

    async fn rest_stream<B: Serialize>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&B>,
        decode: fn(&str, &str) -> Result<v1::StreamResponse, A2aError>,
    ) -> Result<EventStream, A2aError> {
        let rb = self.rest_request(method, url, body, true)?;
        let resp = self.send_for_stream(rb, url).await?;
        let status = resp.status();
        if !status.is_success() || !is_event_stream(&resp) {
            let bytes = read_body(resp, url).await?;
            return Err(rest_error(url, status.as_u16(), &bytes));
        }
        let url = url.to_string();
        let events = data_events(
            resp.bytes_stream(),
            MAX_EVENT_BYTES,
            self.stream_idle_timeout,
        );
        Ok(Box::pin(events.map(move |item| {
            let data = item.map_err(|e| sse_error(&url, e))?;
            decode(&url, &data)
        })))
    }
}

/// Serializes one of our own types (cannot fail: no non-string map keys).
fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

/// A 0.3 HTTP+JSON `SendMessageRequest`, with `blocking` always written: ProtoJSON reads a
/// missing bool as `false`, so 0.3 servers would take a request without it as non-blocking.
fn send_body_v03(req: v1::SendMessageRequest) -> Value {
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

/// One 1.0 HTTP+JSON stream event.
fn decode_v1_event(url: &str, data: &str) -> Result<v1::StreamResponse, A2aError> {
    serde_json::from_str::<v1::StreamResponse>(data)
        .map_err(|e| A2aError::decode(url, "an HTTP+JSON stream event", e))
}

/// One 0.3 HTTP+JSON stream event (a ProtoJSON `StreamResponse`).
fn decode_v03_event(url: &str, data: &str) -> Result<v1::StreamResponse, A2aError> {
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

fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

fn sse_error(url: &str, e: SseError<reqwest::Error>) -> A2aError {
    match e {
        SseError::Source(e) => A2aError::http(url, e),
        SseError::TooLarge(limit) => A2aError::TooLarge {
            url: url.to_string(),
            limit,
        },
        SseError::Idle(limit) => stream_idle_error(url, limit),
    }
}

/// The error of a stream silent for `limit`: an [`A2aError::Protocol`] whose message names the
/// URL and the limit, and contains "stream idle limit".
pub fn stream_idle_error(url: &str, limit: Duration) -> A2aError {
    A2aError::Protocol {
        url: url.to_string(),
        message: format!(
            "the event stream sent nothing (not even a keep-alive comment) for {} s, the stream \
             idle limit; the agent or the network is stuck",
            limit.as_secs_f64()
        ),
    }
}

/// The error of a JSON-RPC call that `url` answered with `error`.
fn rpc_error(method: &str, url: &str, error: crate::types::jsonrpc::RpcError) -> A2aError {
    A2aError::Rpc {
        method: method.to_string(),
        url: url.to_string(),
        error,
    }
}

/// Reads a body of at most [`MAX_BODY_BYTES`].
pub(crate) async fn read_body(resp: reqwest::Response, url: &str) -> Result<Vec<u8>, A2aError> {
    read_body_limited(resp, url, MAX_BODY_BYTES).await
}

/// Reads a body of at most `limit` bytes; a larger one is [`A2aError::TooLarge`].
pub(crate) async fn read_body_limited(
    mut resp: reqwest::Response,
    url: &str,
    limit: usize,
) -> Result<Vec<u8>, A2aError> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| A2aError::http(url, e))? {
        if out.len() + chunk.len() > limit {
            return Err(A2aError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Turns an HTTP+JSON error body (`{"error": {"code", "status", "message", "details"}}`) into an
/// error, falling back to the status and body text.
fn rest_error(url: &str, status: u16, body: &[u8]) -> A2aError {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let err = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .or(parsed.as_ref());
    if let Some(msg) = err.and_then(|e| e.get("message")).and_then(|m| m.as_str()) {
        let reason = err
            .and_then(|e| e.get("details"))
            .and_then(|d| d.as_array())
            .and_then(|d| d.iter().find_map(|x| x.get("reason")?.as_str()))
            .map(str::to_string);
        return A2aError::Rest {
            url: url.to_string(),
            status,
            message: msg.to_string(),
            reason,
        };
    }
    A2aError::status(url, status, body)
}

/// The 0.3 params naming one push config (get and delete send them).
fn push_config_params_03(task_id: &str, config_id: &str) -> v03::TaskPushNotificationConfigParams {
    v03::TaskPushNotificationConfigParams {
        id: task_id.to_string(),
        push_notification_config_id: Some(config_id.to_string()),
        metadata: None,
    }
}

/// Percent-encodes a value for use as one URL path segment.
fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(path_segment("abc-1.2_~"), "abc-1.2_~");
        assert_eq!(path_segment("a/b c"), "a%2Fb%20c");
    }

    #[test]
    fn rest_errors_keep_message_and_reason() {
        let body = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"no such task","details":[{"@type":"x","reason":"TASK_NOT_FOUND"}]}}"#;
        match rest_error("http://h/tasks/1", 404, body) {
            A2aError::Rest {
                status,
                message,
                reason,
                ..
            } => {
                assert_eq!(status, 404);
                assert_eq!(message, "no such task");
                assert_eq!(reason.as_deref(), Some("TASK_NOT_FOUND"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            rest_error("u", 500, b"boom"),
            A2aError::Status { status: 500, .. }
        ));
    }

    #[test]
    fn bindings_parse_case_insensitively() {
        assert_eq!(Binding::parse("jsonrpc"), Some(Binding::JsonRpc));
        assert_eq!(Binding::parse("HTTP+JSON"), Some(Binding::HttpJson));
        #[cfg(feature = "grpc-client")]
        assert_eq!(Binding::parse("grpc"), Some(Binding::Grpc));
        #[cfg(not(feature = "grpc-client"))]
        assert_eq!(Binding::parse("GRPC"), None);
        assert_eq!(Binding::parse("SOAP"), None);
    }
}
