//! [`A2aClient`]: one remote A2A endpoint, spoken in its own version and binding, presented in
//! 1.0 terms.

use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use http::HeaderMap;

use super::dialect::{self, Dialect, RawCard};
use super::wire::Wire;
use crate::error::A2aError;
use crate::types::{ProtocolVersion, binding, v1, v03};

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
/// with the 0.3 ProtoJSON shapes of [`v03_rest`](crate::types::v03_rest)), and gRPC 1.0
/// (feature `grpc-client`). The wire dialect is chosen once, when the client is made.
pub struct A2aClient {
    wire: Wire,
    dialect: Box<dyn Dialect>,
    /// How the extended card's signatures are checked.
    pub(super) verification: std::sync::Arc<super::CardVerification>,
}

impl std::fmt::Debug for A2aClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold credentials: never print them.
        f.debug_struct("A2aClient")
            .field("endpoint", &self.wire.endpoint)
            .finish_non_exhaustive()
    }
}

impl A2aClient {
    /// A client for `endpoint`, sending `headers` (e.g. auth) on every request.
    pub fn new(http: reqwest::Client, endpoint: Endpoint, headers: HeaderMap) -> Self {
        let dialect = dialect::select(&endpoint, &headers);
        Self {
            wire: Wire::new(
                http,
                endpoint,
                headers,
                dialect.content_type(),
                Some(DEFAULT_STREAM_IDLE_TIMEOUT),
            ),
            dialect,
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
        self.wire.stream_idle_timeout = (!limit.is_zero()).then_some(limit);
        self
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.wire.endpoint
    }

    fn tenant(&self) -> Option<String> {
        self.wire.endpoint.tenant.clone()
    }

    /// `SendMessage` / `message/send`.
    pub async fn send_message(
        &self,
        mut req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        if req.tenant.is_none() {
            req.tenant = self.tenant();
        }
        self.dialect.send_message(&self.wire, req).await
    }

    /// `SendStreamingMessage` / `message/stream`: the events as they arrive.
    pub async fn send_streaming_message(
        &self,
        mut req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        if req.tenant.is_none() {
            req.tenant = self.tenant();
        }
        self.dialect.send_streaming_message(&self.wire, req).await
    }

    /// `GetTask` / `tasks/get`.
    pub async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<v1::Task, A2aError> {
        let req = v1::GetTaskRequest {
            tenant: self.tenant(),
            id: id.to_string(),
            history_length,
        };
        self.dialect.get_task(&self.wire, req).await
    }

    /// `ListTasks` (1.0 only; 0.3 has no list method).
    pub async fn list_tasks(
        &self,
        mut req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        if req.tenant.is_none() {
            req.tenant = self.tenant();
        }
        self.dialect.list_tasks(&self.wire, req).await
    }

    /// `CancelTask` / `tasks/cancel`.
    pub async fn cancel_task(&self, id: &str) -> Result<v1::Task, A2aError> {
        let req = v1::CancelTaskRequest {
            tenant: self.tenant(),
            id: id.to_string(),
            metadata: None,
        };
        self.dialect.cancel_task(&self.wire, req).await
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
            config.tenant = self.tenant();
        }
        self.dialect.create_push_config(&self.wire, config).await
    }

    /// The request naming one push config (get and delete send it).
    fn push_config_ref(&self, task_id: &str, config_id: &str) -> v1::TaskPushNotificationConfigRef {
        v1::TaskPushNotificationConfigRef {
            tenant: self.tenant(),
            task_id: task_id.to_string(),
            id: config_id.to_string(),
        }
    }

    /// `GetTaskPushNotificationConfig` / `tasks/pushNotificationConfig/get`.
    pub async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let req = self.push_config_ref(task_id, config_id);
        self.dialect.get_push_config(&self.wire, req).await
    }

    /// `ListTaskPushNotificationConfigs` / `tasks/pushNotificationConfig/list`.
    pub async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        let req = v1::ListTaskPushNotificationConfigsRequest {
            tenant: self.tenant(),
            task_id: task_id.to_string(),
            page_size: None,
            page_token: None,
        };
        self.dialect.list_push_configs(&self.wire, req).await
    }

    /// `DeleteTaskPushNotificationConfig` / `tasks/pushNotificationConfig/delete`.
    pub async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), A2aError> {
        let req = self.push_config_ref(task_id, config_id);
        self.dialect.delete_push_config(&self.wire, req).await
    }

    /// `GetExtendedAgentCard` / `agent/getAuthenticatedExtendedCard` / `GET extendedAgentCard`:
    /// the card an authenticated caller gets (send the credentials in the client's headers).
    /// Its signatures are checked as the resolver checks the public card's (see
    /// [`with_card_verification`](Self::with_card_verification)): a refused card is
    /// [`A2aError::CardSignature`] naming the endpoint.
    pub async fn get_extended_agent_card(&self) -> Result<v1::AgentCard, A2aError> {
        // The card as the peer sent it (signatures are over that shape), and its version.
        let RawCard { url, card, version } = self.dialect.extended_card(&self.wire).await?;
        self.verification
            .check_value(&self.wire.http, &url, &card)
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
            tenant: self.tenant(),
            id: id.to_string(),
        };
        self.dialect.subscribe_to_task(&self.wire, req).await
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_wire_dialect_is_chosen_once_not_matched_per_call() {
        // One `Dialect` per binding and version, selected in `A2aClient::new`: neither the
        // client nor the shared HTTP plumbing matches on the endpoint's binding.
        let needle = [".endpoint", ".binding"].concat();
        for (file, source) in [
            ("transport.rs", include_str!("transport.rs")),
            ("wire.rs", include_str!("wire.rs")),
        ] {
            assert!(!source.contains(&needle), "{file} matches on the binding");
        }
    }
}
