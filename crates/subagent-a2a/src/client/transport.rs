//! [`A2aClient`]: one remote A2A endpoint, spoken in its own version and binding, presented in
//! 1.0 terms.

use std::time::Duration;

use http::HeaderMap;

use super::dialect::{self, Dialect, RawCard};
use super::endpoint::{Endpoint, EventStream};
use crate::error::A2aError;
use crate::types::{ProtocolVersion, v1, v03};

/// A client for one A2A endpoint. Every call takes and returns 1.0 types; for a 0.3 endpoint
/// the client converts to and from 0.3 on the wire.
///
/// Supported: JSON-RPC and HTTP+JSON, each in 1.0 and 0.3 (0.3 HTTP+JSON: the `/v1/…` routes
/// with the 0.3 ProtoJSON shapes of [`v03_rest`](crate::types::v03_rest)), and gRPC 1.0
/// (feature `grpc-client`). The wire dialect is chosen once, when the client is made.
pub struct A2aClient {
    dialect: Box<dyn Dialect>,
    /// How the extended card's signatures are checked.
    pub(super) verification: std::sync::Arc<super::CardVerification>,
}

impl std::fmt::Debug for A2aClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold credentials: never print them.
        f.debug_struct("A2aClient")
            .field("endpoint", &self.dialect.wire().endpoint)
            .finish_non_exhaustive()
    }
}

impl A2aClient {
    /// A client for `endpoint`, sending `headers` (e.g. auth) on every request.
    pub fn new(http: reqwest::Client, endpoint: Endpoint, headers: HeaderMap) -> Self {
        Self {
            dialect: dialect::select(http, endpoint, headers),
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
    /// [`A2aError::Protocol`] naming the URL and the limit (see
    /// [`stream_idle_error`](super::stream_idle_error); default
    /// [`DEFAULT_STREAM_IDLE_TIMEOUT`](super::endpoint::DEFAULT_STREAM_IDLE_TIMEOUT)).
    /// `Duration::ZERO` waits forever.
    #[must_use]
    pub fn with_stream_idle_timeout(mut self, limit: Duration) -> Self {
        self.dialect.wire_mut().stream_idle_timeout = (!limit.is_zero()).then_some(limit);
        self
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.dialect.wire().endpoint
    }

    fn tenant(&self) -> Option<String> {
        self.dialect.wire().endpoint.tenant.clone()
    }

    /// `req` with the endpoint's tenant when it names none.
    fn tenanted<R: Tenanted>(&self, mut req: R) -> R {
        let t = req.tenant_mut();
        if t.is_none() {
            *t = self.tenant();
        }
        req
    }

    /// `SendMessage` / `message/send`.
    pub async fn send_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        self.dialect.send_message(self.tenanted(req)).await
    }

    /// `SendStreamingMessage` / `message/stream`: the events as they arrive.
    pub async fn send_streaming_message(
        &self,
        req: v1::SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        self.dialect
            .send_streaming_message(self.tenanted(req))
            .await
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
        self.dialect.get_task(req).await
    }

    /// `ListTasks` (1.0 only; 0.3 has no list method).
    pub async fn list_tasks(
        &self,
        req: v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        self.dialect.list_tasks(self.tenanted(req)).await
    }

    /// `CancelTask` / `tasks/cancel`.
    pub async fn cancel_task(&self, id: &str) -> Result<v1::Task, A2aError> {
        let req = v1::CancelTaskRequest {
            tenant: self.tenant(),
            id: id.to_string(),
            metadata: None,
        };
        self.dialect.cancel_task(req).await
    }

    /// `CreateTaskPushNotificationConfig` / `tasks/pushNotificationConfig/set`: registers a
    /// webhook for `task_id`; the server's copy (with its id) comes back.
    pub async fn create_push_config(
        &self,
        task_id: &str,
        mut config: v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        config.task_id = Some(task_id.to_string());
        self.dialect.create_push_config(self.tenanted(config)).await
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
        self.dialect.get_push_config(req).await
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
        self.dialect.list_push_configs(req).await
    }

    /// `DeleteTaskPushNotificationConfig` / `tasks/pushNotificationConfig/delete`.
    pub async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), A2aError> {
        let req = self.push_config_ref(task_id, config_id);
        self.dialect.delete_push_config(req).await
    }

    /// `GetExtendedAgentCard` / `agent/getAuthenticatedExtendedCard` / `GET extendedAgentCard`:
    /// the card an authenticated caller gets (send the credentials in the client's headers).
    /// Its signatures are checked as the resolver checks the public card's (see
    /// [`with_card_verification`](Self::with_card_verification)): a refused card is
    /// [`A2aError::CardSignature`] naming the endpoint.
    pub async fn get_extended_agent_card(&self) -> Result<v1::AgentCard, A2aError> {
        // The card as the peer sent it (signatures are over that shape), and its version.
        let RawCard { url, card, version } = self.dialect.extended_card().await?;
        self.verification
            .check_value(&self.dialect.wire().http, &url, &card)
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
        self.dialect.subscribe_to_task(req).await
    }
}

/// A request naming a tenant ([`A2aClient`] fills in the endpoint's when it names none).
trait Tenanted {
    fn tenant_mut(&mut self) -> &mut Option<String>;
}

macro_rules! tenanted {
    ($($t:ty),*) => {$(
        impl Tenanted for $t {
            fn tenant_mut(&mut self) -> &mut Option<String> {
                &mut self.tenant
            }
        }
    )*};
}

tenanted!(
    v1::SendMessageRequest,
    v1::ListTasksRequest,
    v1::TaskPushNotificationConfig
);
