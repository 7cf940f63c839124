//! Conversions between [`v03`] and [`v1`] types, both ways.
//!
//! Lossless where both versions can say the same thing. Where they cannot:
//! - a 1.0 data part whose value is not an object becomes a 0.3 data part `{"value": ...}` with
//!   metadata `data_part_compat: true` (the convention the official SDK uses), and converts back;
//! - 0.3 `unknown` state <-> 1.0 `TASK_STATE_UNSPECIFIED`;
//! - a 1.0 card becomes a 0.3 card whose `url` is its first JSON-RPC interface (else its first
//!   interface), `preferredTransport` that interface's binding and `additionalInterfaces` every
//!   interface; a 0.3 card becomes a 1.0 card with the main endpoint first, then the additional
//!   ones, all with the card's protocol version.
//! - OAuth: 1.0 holds one flow, 0.3 several; 0.3 -> 1.0 keeps the first present of
//!   authorization code, client credentials, implicit, password.

use std::collections::BTreeMap;

use super::{JsonObject, binding, v1, v03};

/// The metadata key marking a 0.3 data part that wraps a non-object 1.0 value in `{"value": ..}`.
pub const DATA_PART_COMPAT_KEY: &str = "data_part_compat";

/// The `protocolVersion` a converted 0.3 card declares.
pub const V03_PROTOCOL_VERSION: &str = "0.3.0";

// ---------------------------------------------------------------------------------------------
// enums
// ---------------------------------------------------------------------------------------------

impl From<v03::Role> for v1::Role {
    fn from(r: v03::Role) -> Self {
        match r {
            v03::Role::User => v1::Role::User,
            v03::Role::Agent => v1::Role::Agent,
        }
    }
}

impl From<v1::Role> for v03::Role {
    /// `ROLE_UNSPECIFIED` becomes `user` (0.3 has no unspecified role).
    fn from(r: v1::Role) -> Self {
        match r {
            v1::Role::Agent => v03::Role::Agent,
            v1::Role::User | v1::Role::Unspecified => v03::Role::User,
        }
    }
}

impl From<v03::TaskState> for v1::TaskState {
    fn from(s: v03::TaskState) -> Self {
        use v1::TaskState as T;
        match s {
            v03::TaskState::Submitted => T::Submitted,
            v03::TaskState::Working => T::Working,
            v03::TaskState::InputRequired => T::InputRequired,
            v03::TaskState::Completed => T::Completed,
            v03::TaskState::Canceled => T::Canceled,
            v03::TaskState::Failed => T::Failed,
            v03::TaskState::Rejected => T::Rejected,
            v03::TaskState::AuthRequired => T::AuthRequired,
            v03::TaskState::Unknown => T::Unspecified,
        }
    }
}

impl From<v1::TaskState> for v03::TaskState {
    fn from(s: v1::TaskState) -> Self {
        use v03::TaskState as T;
        match s {
            v1::TaskState::Submitted => T::Submitted,
            v1::TaskState::Working => T::Working,
            v1::TaskState::InputRequired => T::InputRequired,
            v1::TaskState::Completed => T::Completed,
            v1::TaskState::Canceled => T::Canceled,
            v1::TaskState::Failed => T::Failed,
            v1::TaskState::Rejected => T::Rejected,
            v1::TaskState::AuthRequired => T::AuthRequired,
            v1::TaskState::Unspecified => T::Unknown,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// parts, messages, tasks
// ---------------------------------------------------------------------------------------------

impl From<v03::Part> for v1::Part {
    fn from(p: v03::Part) -> Self {
        match p {
            v03::Part::Text(t) => v1::Part {
                content: v1::PartContent::Text(t.text),
                metadata: t.metadata,
                filename: None,
                media_type: None,
            },
            v03::Part::File(f) => {
                let content = match (f.file.bytes, f.file.uri) {
                    (Some(b), _) => v1::PartContent::Raw(b),
                    (None, Some(u)) => v1::PartContent::Url(u),
                    (None, None) => v1::PartContent::Raw(String::new()),
                };
                v1::Part {
                    content,
                    metadata: f.metadata,
                    filename: f.file.name,
                    media_type: f.file.mime_type,
                }
            }
            v03::Part::Data(d) => {
                let mut metadata = d.metadata;
                let compat = metadata
                    .as_mut()
                    .and_then(|m| m.remove(DATA_PART_COMPAT_KEY))
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false);
                if metadata.as_ref().is_some_and(|m| m.is_empty()) {
                    metadata = None;
                }
                let mut data = d.data;
                let value = if compat && data.contains_key("value") {
                    data.remove("value").unwrap_or(serde_json::Value::Null)
                } else {
                    serde_json::Value::Object(data)
                };
                v1::Part {
                    content: v1::PartContent::Data(value),
                    metadata,
                    filename: None,
                    media_type: None,
                }
            }
        }
    }
}

impl From<v1::Part> for v03::Part {
    fn from(p: v1::Part) -> Self {
        match p.content {
            v1::PartContent::Text(text) => v03::Part::Text(v03::TextPart {
                text,
                metadata: p.metadata,
            }),
            v1::PartContent::Raw(b) => v03::Part::File(v03::FilePart {
                file: v03::FileContent {
                    bytes: Some(b),
                    uri: None,
                    mime_type: p.media_type,
                    name: p.filename,
                },
                metadata: p.metadata,
            }),
            v1::PartContent::Url(u) => v03::Part::File(v03::FilePart {
                file: v03::FileContent {
                    bytes: None,
                    uri: Some(u),
                    mime_type: p.media_type,
                    name: p.filename,
                },
                metadata: p.metadata,
            }),
            v1::PartContent::Data(serde_json::Value::Object(data)) => {
                v03::Part::Data(v03::DataPart {
                    data,
                    metadata: p.metadata,
                })
            }
            v1::PartContent::Data(other) => {
                let mut data = JsonObject::new();
                data.insert("value".into(), other);
                let mut metadata = p.metadata.unwrap_or_default();
                metadata.insert(DATA_PART_COMPAT_KEY.into(), serde_json::Value::Bool(true));
                v03::Part::Data(v03::DataPart {
                    data,
                    metadata: Some(metadata),
                })
            }
        }
    }
}

fn conv<A, B: From<A>>(v: Vec<A>) -> Vec<B> {
    v.into_iter().map(B::from).collect()
}

fn opt<A, B: From<A>>(v: Option<A>) -> Option<B> {
    v.map(B::from)
}

/// `From` both ways between the structs `v03::$ty` and `v1::$ty`, whose fields carry over one
/// for one: `field` moves as it is, `field: f` goes through the function `f`; `[name: value]`
/// first sets a field only 0.3 has (its `kind` tag).
macro_rules! both_ways {
    ($ty:ident { $([$x:ident: $xv:expr])? $($f:ident $(: $conv:expr)?),* $(,)? }) => {
        impl From<v03::$ty> for v1::$ty {
            fn from(v: v03::$ty) -> Self {
                v1::$ty { $($f: both_ways!(@field v.$f $(, $conv)?)),* }
            }
        }

        impl From<v1::$ty> for v03::$ty {
            fn from(v: v1::$ty) -> Self {
                v03::$ty { $($x: $xv,)? $($f: both_ways!(@field v.$f $(, $conv)?)),* }
            }
        }
    };
    (@field $e:expr) => { $e };
    (@field $e:expr, $conv:expr) => { ($conv)($e) };
}

/// `From` both ways between the enums `$ma::$a` and `$mb::$b`, whose variants have the same
/// names and hold values that convert.
macro_rules! both_ways_enum {
    ($ma:ident::$a:ident, $mb:ident::$b:ident { $($variant:ident),* $(,)? }) => {
        impl From<$ma::$a> for $mb::$b {
            fn from(e: $ma::$a) -> Self {
                match e {
                    $($ma::$a::$variant(x) => $mb::$b::$variant(x.into()),)*
                }
            }
        }

        impl From<$mb::$b> for $ma::$a {
            fn from(e: $mb::$b) -> Self {
                match e {
                    $($mb::$b::$variant(x) => $ma::$a::$variant(x.into()),)*
                }
            }
        }
    };
}

both_ways!(Message {
    [kind: v03::MessageKind::Value]
    message_id,
    context_id,
    task_id,
    role: Into::into,
    parts: conv,
    metadata,
    extensions,
    reference_task_ids,
});

both_ways!(TaskStatus {
    state: Into::into,
    message: opt,
    timestamp,
});

both_ways!(Artifact {
    artifact_id,
    name,
    description,
    parts: conv,
    metadata,
    extensions,
});

impl From<v03::Task> for v1::Task {
    fn from(t: v03::Task) -> Self {
        v1::Task {
            id: t.id,
            context_id: Some(t.context_id).filter(|c| !c.is_empty()),
            status: t.status.into(),
            artifacts: conv(t.artifacts),
            history: conv(t.history),
            metadata: t.metadata,
        }
    }
}

impl From<v1::Task> for v03::Task {
    fn from(t: v1::Task) -> Self {
        v03::Task {
            kind: v03::TaskKind::Value,
            id: t.id,
            context_id: t.context_id.unwrap_or_default(),
            status: t.status.into(),
            artifacts: conv(t.artifacts),
            history: conv(t.history),
            metadata: t.metadata,
        }
    }
}

impl From<v03::TaskStatusUpdateEvent> for v1::TaskStatusUpdateEvent {
    fn from(e: v03::TaskStatusUpdateEvent) -> Self {
        v1::TaskStatusUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            status: e.status.into(),
            metadata: e.metadata,
        }
    }
}

impl From<v1::TaskStatusUpdateEvent> for v03::TaskStatusUpdateEvent {
    /// `final` is set when the new state is terminal or interrupted (the stream ends there).
    fn from(e: v1::TaskStatusUpdateEvent) -> Self {
        let is_final = e.status.state.is_terminal() || e.status.state.is_interrupted();
        v03::TaskStatusUpdateEvent {
            kind: v03::StatusUpdateKind::Value,
            task_id: e.task_id,
            context_id: e.context_id,
            status: e.status.into(),
            is_final,
            metadata: e.metadata,
        }
    }
}

impl From<v03::TaskArtifactUpdateEvent> for v1::TaskArtifactUpdateEvent {
    fn from(e: v03::TaskArtifactUpdateEvent) -> Self {
        v1::TaskArtifactUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            artifact: e.artifact.into(),
            append: e.append.unwrap_or(false),
            last_chunk: e.last_chunk.unwrap_or(false),
            metadata: e.metadata,
        }
    }
}

impl From<v1::TaskArtifactUpdateEvent> for v03::TaskArtifactUpdateEvent {
    fn from(e: v1::TaskArtifactUpdateEvent) -> Self {
        v03::TaskArtifactUpdateEvent {
            kind: v03::ArtifactUpdateKind::Value,
            task_id: e.task_id,
            context_id: e.context_id,
            artifact: e.artifact.into(),
            append: e.append.then_some(true),
            last_chunk: e.last_chunk.then_some(true),
            metadata: e.metadata,
        }
    }
}

both_ways_enum!(
    v03::Event,
    v1::StreamResponse {
        Message,
        Task,
        StatusUpdate,
        ArtifactUpdate,
    }
);

impl From<v1::SendMessageResponse> for v03::Event {
    fn from(r: v1::SendMessageResponse) -> Self {
        v1::StreamResponse::from(r).into()
    }
}

impl TryFrom<v03::Event> for v1::SendMessageResponse {
    type Error = v03::Event;

    /// Fails (giving the event back) for the two update events, which are not valid results of
    /// `message/send`.
    fn try_from(e: v03::Event) -> Result<Self, v03::Event> {
        match e {
            v03::Event::Message(m) => Ok(v1::SendMessageResponse::Message(m.into())),
            v03::Event::Task(t) => Ok(v1::SendMessageResponse::Task(t.into())),
            other => Err(other),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// requests
// ---------------------------------------------------------------------------------------------

impl From<v03::PushNotificationConfig> for v1::TaskPushNotificationConfig {
    fn from(c: v03::PushNotificationConfig) -> Self {
        v1::TaskPushNotificationConfig {
            tenant: None,
            id: c.id,
            task_id: None,
            url: c.url,
            token: c.token,
            authentication: c.authentication.map(|a| v1::AuthenticationInfo {
                scheme: a.schemes.join(","),
                credentials: a.credentials,
            }),
        }
    }
}

impl From<v1::TaskPushNotificationConfig> for v03::PushNotificationConfig {
    fn from(c: v1::TaskPushNotificationConfig) -> Self {
        v03::PushNotificationConfig {
            id: c.id,
            url: c.url,
            token: c.token,
            authentication: c
                .authentication
                .map(|a| v03::PushNotificationAuthenticationInfo {
                    schemes: a
                        .scheme
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect(),
                    credentials: a.credentials,
                }),
        }
    }
}

impl From<v03::TaskPushNotificationConfig> for v1::TaskPushNotificationConfig {
    fn from(c: v03::TaskPushNotificationConfig) -> Self {
        let mut out = v1::TaskPushNotificationConfig::from(c.push_notification_config);
        out.task_id = Some(c.task_id);
        out
    }
}

impl From<v1::TaskPushNotificationConfig> for v03::TaskPushNotificationConfig {
    fn from(c: v1::TaskPushNotificationConfig) -> Self {
        let task_id = c.task_id.clone().unwrap_or_default();
        v03::TaskPushNotificationConfig {
            task_id,
            push_notification_config: c.into(),
        }
    }
}

impl From<v03::MessageSendConfiguration> for v1::SendMessageConfiguration {
    fn from(c: v03::MessageSendConfiguration) -> Self {
        v1::SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            task_push_notification_config: c.push_notification_config.map(Into::into),
            history_length: c.history_length,
            return_immediately: c.blocking == Some(false),
        }
    }
}

impl From<v1::SendMessageConfiguration> for v03::MessageSendConfiguration {
    fn from(c: v1::SendMessageConfiguration) -> Self {
        v03::MessageSendConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            blocking: Some(!c.return_immediately),
            history_length: c.history_length,
            push_notification_config: c.task_push_notification_config.map(Into::into),
        }
    }
}

impl From<v03::MessageSendParams> for v1::SendMessageRequest {
    fn from(p: v03::MessageSendParams) -> Self {
        v1::SendMessageRequest {
            tenant: None,
            message: p.message.into(),
            configuration: p.configuration.map(Into::into),
            metadata: p.metadata,
        }
    }
}

impl From<v1::SendMessageRequest> for v03::MessageSendParams {
    fn from(r: v1::SendMessageRequest) -> Self {
        v03::MessageSendParams {
            message: r.message.into(),
            configuration: r.configuration.map(Into::into),
            metadata: r.metadata,
        }
    }
}

impl From<v03::TaskQueryParams> for v1::GetTaskRequest {
    fn from(p: v03::TaskQueryParams) -> Self {
        v1::GetTaskRequest {
            tenant: None,
            id: p.id,
            history_length: p.history_length,
        }
    }
}

impl From<v1::GetTaskRequest> for v03::TaskQueryParams {
    fn from(r: v1::GetTaskRequest) -> Self {
        v03::TaskQueryParams {
            id: r.id,
            history_length: r.history_length,
            metadata: None,
        }
    }
}

impl From<v03::TaskIdParams> for v1::CancelTaskRequest {
    fn from(p: v03::TaskIdParams) -> Self {
        v1::CancelTaskRequest {
            tenant: None,
            id: p.id,
            metadata: p.metadata,
        }
    }
}

impl From<v1::CancelTaskRequest> for v03::TaskIdParams {
    fn from(r: v1::CancelTaskRequest) -> Self {
        v03::TaskIdParams {
            id: r.id,
            metadata: r.metadata,
        }
    }
}

impl From<v03::TaskIdParams> for v1::SubscribeToTaskRequest {
    fn from(p: v03::TaskIdParams) -> Self {
        v1::SubscribeToTaskRequest {
            tenant: None,
            id: p.id,
        }
    }
}

impl From<v1::SubscribeToTaskRequest> for v03::TaskIdParams {
    fn from(r: v1::SubscribeToTaskRequest) -> Self {
        v03::TaskIdParams {
            id: r.id,
            metadata: None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// agent card
// ---------------------------------------------------------------------------------------------

fn requirements_to_v03(reqs: Vec<v1::SecurityRequirement>) -> Vec<BTreeMap<String, Vec<String>>> {
    reqs.into_iter()
        .map(|r| r.schemes.into_iter().map(|(k, v)| (k, v.list)).collect())
        .collect()
}

fn requirements_to_v1(reqs: Vec<BTreeMap<String, Vec<String>>>) -> Vec<v1::SecurityRequirement> {
    reqs.into_iter()
        .map(|r| v1::SecurityRequirement {
            schemes: r
                .into_iter()
                .map(|(k, list)| (k, v1::StringList { list }))
                .collect(),
        })
        .collect()
}

impl From<v1::SecurityScheme> for v03::SecurityScheme {
    fn from(s: v1::SecurityScheme) -> Self {
        match s {
            v1::SecurityScheme::ApiKeySecurityScheme(k) => v03::SecurityScheme::ApiKey {
                description: k.description,
                location: k.location,
                name: k.name,
            },
            v1::SecurityScheme::HttpAuthSecurityScheme(h) => v03::SecurityScheme::Http {
                description: h.description,
                scheme: h.scheme,
                bearer_format: h.bearer_format,
            },
            v1::SecurityScheme::Oauth2SecurityScheme(o) => {
                let mut flows = v03::OAuthFlows::default();
                let flow = |authorization_url, token_url, refresh_url, scopes| {
                    Some(v03::OAuthFlow {
                        authorization_url,
                        token_url,
                        refresh_url,
                        scopes,
                    })
                };
                match o.flows {
                    v1::OAuthFlows::AuthorizationCode(f) => {
                        flows.authorization_code = flow(
                            Some(f.authorization_url),
                            Some(f.token_url),
                            f.refresh_url,
                            f.scopes,
                        )
                    }
                    v1::OAuthFlows::ClientCredentials(f) => {
                        flows.client_credentials =
                            flow(None, Some(f.token_url), f.refresh_url, f.scopes)
                    }
                    v1::OAuthFlows::Implicit(f) => {
                        flows.implicit = flow(f.authorization_url, None, f.refresh_url, f.scopes)
                    }
                    v1::OAuthFlows::Password(f) => {
                        flows.password = flow(None, f.token_url, f.refresh_url, f.scopes)
                    }
                    // 0.3 has no device-code flow; keep its token URL as client credentials.
                    v1::OAuthFlows::DeviceCode(f) => {
                        flows.client_credentials =
                            flow(None, Some(f.token_url), f.refresh_url, f.scopes)
                    }
                }
                v03::SecurityScheme::OAuth2 {
                    description: o.description,
                    flows: Box::new(flows),
                    oauth2_metadata_url: o.oauth2_metadata_url,
                }
            }
            v1::SecurityScheme::OpenIdConnectSecurityScheme(o) => {
                v03::SecurityScheme::OpenIdConnect {
                    description: o.description,
                    open_id_connect_url: o.open_id_connect_url,
                }
            }
            v1::SecurityScheme::MtlsSecurityScheme(m) => v03::SecurityScheme::MutualTls {
                description: m.description,
            },
        }
    }
}

impl From<v03::SecurityScheme> for v1::SecurityScheme {
    fn from(s: v03::SecurityScheme) -> Self {
        match s {
            v03::SecurityScheme::ApiKey {
                description,
                location,
                name,
            } => v1::SecurityScheme::ApiKeySecurityScheme(v1::ApiKeySecurityScheme {
                description,
                location,
                name,
            }),
            v03::SecurityScheme::Http {
                description,
                scheme,
                bearer_format,
            } => v1::SecurityScheme::HttpAuthSecurityScheme(v1::HttpAuthSecurityScheme {
                description,
                scheme,
                bearer_format,
            }),
            v03::SecurityScheme::OAuth2 {
                description,
                flows,
                oauth2_metadata_url,
            } => {
                let flows = *flows;
                let flow = if let Some(f) = flows.authorization_code {
                    v1::OAuthFlows::AuthorizationCode(v1::AuthorizationCodeOAuthFlow {
                        authorization_url: f.authorization_url.unwrap_or_default(),
                        token_url: f.token_url.unwrap_or_default(),
                        refresh_url: f.refresh_url,
                        scopes: f.scopes,
                        pkce_required: false,
                    })
                } else if let Some(f) = flows.client_credentials {
                    v1::OAuthFlows::ClientCredentials(v1::ClientCredentialsOAuthFlow {
                        token_url: f.token_url.unwrap_or_default(),
                        refresh_url: f.refresh_url,
                        scopes: f.scopes,
                    })
                } else if let Some(f) = flows.implicit {
                    v1::OAuthFlows::Implicit(v1::ImplicitOAuthFlow {
                        authorization_url: f.authorization_url,
                        refresh_url: f.refresh_url,
                        scopes: f.scopes,
                    })
                } else {
                    let f = flows.password.unwrap_or_default();
                    v1::OAuthFlows::Password(v1::PasswordOAuthFlow {
                        token_url: f.token_url,
                        refresh_url: f.refresh_url,
                        scopes: f.scopes,
                    })
                };
                v1::SecurityScheme::Oauth2SecurityScheme(v1::OAuth2SecurityScheme {
                    description,
                    flows: flow,
                    oauth2_metadata_url,
                })
            }
            v03::SecurityScheme::OpenIdConnect {
                description,
                open_id_connect_url,
            } => v1::SecurityScheme::OpenIdConnectSecurityScheme(v1::OpenIdConnectSecurityScheme {
                description,
                open_id_connect_url,
            }),
            v03::SecurityScheme::MutualTls { description } => {
                v1::SecurityScheme::MtlsSecurityScheme(v1::MutualTlsSecurityScheme { description })
            }
        }
    }
}

impl From<v1::AgentSkill> for v03::AgentSkill {
    fn from(s: v1::AgentSkill) -> Self {
        v03::AgentSkill {
            id: s.id,
            name: s.name,
            description: s.description,
            tags: s.tags,
            examples: s.examples,
            input_modes: s.input_modes,
            output_modes: s.output_modes,
            security: requirements_to_v03(s.security_requirements),
        }
    }
}

impl From<v03::AgentSkill> for v1::AgentSkill {
    fn from(s: v03::AgentSkill) -> Self {
        v1::AgentSkill {
            id: s.id,
            name: s.name,
            description: s.description,
            tags: s.tags,
            examples: s.examples,
            input_modes: s.input_modes,
            output_modes: s.output_modes,
            security_requirements: requirements_to_v1(s.security),
        }
    }
}

impl From<v1::AgentExtension> for v03::AgentExtension {
    fn from(e: v1::AgentExtension) -> Self {
        v03::AgentExtension {
            uri: e.uri,
            description: e.description,
            required: e.required.then_some(true),
            params: e.params,
        }
    }
}

impl From<v03::AgentExtension> for v1::AgentExtension {
    fn from(e: v03::AgentExtension) -> Self {
        v1::AgentExtension {
            uri: e.uri,
            description: e.description,
            required: e.required.unwrap_or(false),
            params: e.params,
        }
    }
}

both_ways!(AgentCardSignature {
    protected,
    signature,
    header,
});

impl From<v1::AgentCard> for v03::AgentCard {
    fn from(c: v1::AgentCard) -> Self {
        let main = c
            .supported_interfaces
            .iter()
            .find(|i| i.protocol_binding == binding::JSONRPC)
            .or_else(|| c.supported_interfaces.first())
            .cloned();
        let (url, preferred) = match main {
            Some(i) => (i.url, Some(i.protocol_binding)),
            None => (String::new(), None),
        };
        let mut additional: Vec<v03::AgentInterface> = Vec::new();
        for i in &c.supported_interfaces {
            let iface = v03::AgentInterface {
                url: i.url.clone(),
                transport: i.protocol_binding.clone(),
            };
            if !additional.contains(&iface) {
                additional.push(iface);
            }
        }
        v03::AgentCard {
            name: c.name,
            description: c.description,
            url,
            protocol_version: V03_PROTOCOL_VERSION.to_string(),
            preferred_transport: preferred,
            additional_interfaces: additional,
            version: c.version,
            provider: c.provider.map(|p| v03::AgentProvider {
                organization: p.organization,
                url: p.url,
            }),
            documentation_url: c.documentation_url,
            icon_url: c.icon_url,
            capabilities: v03::AgentCapabilities {
                streaming: c.capabilities.streaming,
                push_notifications: c.capabilities.push_notifications,
                state_transition_history: None,
                extensions: conv(c.capabilities.extensions),
            },
            security_schemes: c
                .security_schemes
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect(),
            security: requirements_to_v03(c.security_requirements),
            default_input_modes: c.default_input_modes,
            default_output_modes: c.default_output_modes,
            skills: conv(c.skills),
            supports_authenticated_extended_card: c.capabilities.extended_agent_card,
            signatures: conv(c.signatures),
        }
    }
}

impl From<v03::AgentCard> for v1::AgentCard {
    fn from(c: v03::AgentCard) -> Self {
        let version = c.protocol_version.clone();
        let mut interfaces = vec![v1::AgentInterface {
            url: c.url.clone(),
            protocol_binding: c
                .preferred_transport
                .clone()
                .unwrap_or_else(|| binding::JSONRPC.to_string()),
            tenant: None,
            protocol_version: version.clone(),
        }];
        for i in c.additional_interfaces {
            let iface = v1::AgentInterface {
                url: i.url,
                protocol_binding: i.transport,
                tenant: None,
                protocol_version: version.clone(),
            };
            if !interfaces.contains(&iface) {
                interfaces.push(iface);
            }
        }
        v1::AgentCard {
            name: c.name,
            description: c.description,
            supported_interfaces: interfaces,
            provider: c.provider.map(|p| v1::AgentProvider {
                url: p.url,
                organization: p.organization,
            }),
            version: c.version,
            documentation_url: c.documentation_url,
            capabilities: v1::AgentCapabilities {
                streaming: c.capabilities.streaming,
                push_notifications: c.capabilities.push_notifications,
                extensions: conv(c.capabilities.extensions),
                extended_agent_card: c.supports_authenticated_extended_card,
            },
            security_schemes: c
                .security_schemes
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect(),
            security_requirements: requirements_to_v1(c.security),
            default_input_modes: c.default_input_modes,
            default_output_modes: c.default_output_modes,
            skills: conv(c.skills),
            signatures: conv(c.signatures),
            icon_url: c.icon_url,
        }
    }
}
