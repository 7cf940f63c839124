//! A2A **1.0** types: the ProtoJSON form of `lf.a2a.v1` in `specification/a2a.proto`.
//!
//! Field names are camelCase, enums are their proto names, `bytes` are base64 strings,
//! timestamps are ISO 8601 strings, and one-of fields are a single key (see [`PartContent`],
//! [`SendMessageResponse`], [`StreamResponse`], [`SecurityScheme`], [`OAuthFlows`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{JsonObject, proto_enum};

/// JSON-RPC method names of the 1.0 binding.
pub mod methods {
    /// `SendMessage`.
    pub const SEND_MESSAGE: &str = "SendMessage";
    /// `SendStreamingMessage` (answered with Server-Sent Events).
    pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
    /// `GetTask`.
    pub const GET_TASK: &str = "GetTask";
    /// `ListTasks`.
    pub const LIST_TASKS: &str = "ListTasks";
    /// `CancelTask`.
    pub const CANCEL_TASK: &str = "CancelTask";
    /// `SubscribeToTask` (answered with Server-Sent Events).
    pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
    /// `CreateTaskPushNotificationConfig`.
    pub const CREATE_PUSH_CONFIG: &str = "CreateTaskPushNotificationConfig";
    /// `GetTaskPushNotificationConfig`.
    pub const GET_PUSH_CONFIG: &str = "GetTaskPushNotificationConfig";
    /// `ListTaskPushNotificationConfigs`.
    pub const LIST_PUSH_CONFIGS: &str = "ListTaskPushNotificationConfigs";
    /// `DeleteTaskPushNotificationConfig`.
    pub const DELETE_PUSH_CONFIG: &str = "DeleteTaskPushNotificationConfig";
    /// `GetExtendedAgentCard`.
    pub const GET_EXTENDED_AGENT_CARD: &str = "GetExtendedAgentCard";
}

proto_enum! {
    /// Who sent a message.
    pub enum Role {
        /// `ROLE_UNSPECIFIED`.
        #[default]
        Unspecified = (0, "ROLE_UNSPECIFIED"),
        /// `ROLE_USER`: the client.
        User = (1, "ROLE_USER"),
        /// `ROLE_AGENT`: the remote agent.
        Agent = (2, "ROLE_AGENT"),
    }
}

proto_enum! {
    /// The lifecycle state of a task.
    pub enum TaskState {
        /// `TASK_STATE_UNSPECIFIED`.
        #[default]
        Unspecified = (0, "TASK_STATE_UNSPECIFIED"),
        /// `TASK_STATE_SUBMITTED`.
        Submitted = (1, "TASK_STATE_SUBMITTED"),
        /// `TASK_STATE_WORKING`.
        Working = (2, "TASK_STATE_WORKING"),
        /// `TASK_STATE_COMPLETED` (terminal).
        Completed = (3, "TASK_STATE_COMPLETED"),
        /// `TASK_STATE_FAILED` (terminal).
        Failed = (4, "TASK_STATE_FAILED"),
        /// `TASK_STATE_CANCELED` (terminal).
        Canceled = (5, "TASK_STATE_CANCELED"),
        /// `TASK_STATE_INPUT_REQUIRED` (interrupted).
        InputRequired = (6, "TASK_STATE_INPUT_REQUIRED"),
        /// `TASK_STATE_REJECTED` (terminal).
        Rejected = (7, "TASK_STATE_REJECTED"),
        /// `TASK_STATE_AUTH_REQUIRED` (interrupted).
        AuthRequired = (8, "TASK_STATE_AUTH_REQUIRED"),
    }
}

impl TaskState {
    /// Completed, failed, canceled or rejected: the task will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input-required or auth-required: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The content of a [`Part`]: exactly one of `text`, `raw`, `url` or `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartContent {
    /// Plain text.
    Text(String),
    /// Inline bytes, base64-encoded as ProtoJSON encodes `bytes`.
    Raw(String),
    /// A URL pointing at the content.
    Url(String),
    /// Any JSON value.
    Data(serde_json::Value),
}

/// One piece of a message or artifact.
///
/// On the wire the content is one of the keys `text`, `raw`, `url` or `data` beside the optional
/// `metadata`, `filename` and `mediaType` (ProtoJSON's `media_type` is accepted too). Serde is
/// written by hand (see [`part_serde`](self)): a derived `#[serde(flatten)]` buffers every part
/// into an intermediate tree first, which was the largest single cost of reading a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The content.
    pub content: PartContent,
    /// Optional metadata.
    pub metadata: Option<JsonObject>,
    /// An optional file name.
    pub filename: Option<String>,
    /// The media type (e.g. `text/plain`, `application/json`).
    pub media_type: Option<String>,
}

mod part_serde {
    use std::fmt;

    use serde::de::{self, IgnoredAny, MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{JsonObject, Part, PartContent};
    use crate::types::json_text::OptString;

    impl Serialize for Part {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let len = 1
                + usize::from(self.metadata.is_some())
                + usize::from(self.filename.is_some())
                + usize::from(self.media_type.is_some());
            let mut map = serializer.serialize_map(Some(len))?;
            match &self.content {
                PartContent::Text(t) => map.serialize_entry("text", t)?,
                PartContent::Raw(r) => map.serialize_entry("raw", r)?,
                PartContent::Url(u) => map.serialize_entry("url", u)?,
                PartContent::Data(d) => map.serialize_entry("data", d)?,
            }
            if let Some(m) = &self.metadata {
                map.serialize_entry("metadata", m)?;
            }
            if let Some(f) = &self.filename {
                map.serialize_entry("filename", f)?;
            }
            if let Some(mt) = &self.media_type {
                map.serialize_entry("mediaType", mt)?;
            }
            map.end()
        }
    }

    /// A field name of a part; unknown names are skipped, as for every other A2A object.
    enum Key {
        Text,
        Raw,
        Url,
        Data,
        Metadata,
        Filename,
        MediaType,
        Other,
    }

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct KeyVisitor;
            impl<'de> Visitor<'de> for KeyVisitor {
                type Value = Key;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a part field name")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                    Ok(match v {
                        "text" => Key::Text,
                        "raw" => Key::Raw,
                        "url" => Key::Url,
                        "data" => Key::Data,
                        "metadata" => Key::Metadata,
                        "filename" => Key::Filename,
                        "mediaType" | "media_type" => Key::MediaType,
                        _ => Key::Other,
                    })
                }
            }
            d.deserialize_identifier(KeyVisitor)
        }
    }

    const CONTENT_KEYS: &str = "one of `text`, `raw`, `url` or `data`";

    impl<'de> Deserialize<'de> for Part {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct PartVisitor;
            impl<'de> Visitor<'de> for PartVisitor {
                type Value = Part;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    write!(f, "a part: an object with {CONTENT_KEYS}")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
                    let mut content: Option<PartContent> = None;
                    let mut metadata: Option<JsonObject> = None;
                    let mut filename: Option<String> = None;
                    let mut media_type: Option<String> = None;
                    let set = |slot: &mut Option<PartContent>, c: Option<PartContent>| match (
                        slot.is_some(),
                        c,
                    ) {
                        (_, None) => Ok(()),
                        (true, Some(_)) => Err(de::Error::custom(format!(
                            "a part holds exactly {CONTENT_KEYS}, not several"
                        ))),
                        (false, c) => {
                            *slot = c;
                            Ok(())
                        }
                    };
                    while let Some(key) = map.next_key::<Key>()? {
                        match key {
                            // ProtoJSON: `null` is the same as an absent field.
                            // Large values: read without serde_json's scratch copy.
                            Key::Text => set(
                                &mut content,
                                map.next_value_seed(OptString)?.map(PartContent::Text),
                            )?,
                            Key::Raw => {
                                let raw = map.next_value_seed(OptString)?;
                                if let Some(r) = &raw {
                                    crate::types::check_base64(r).map_err(|e| {
                                        de::Error::custom(format_args!("`raw` is {e}"))
                                    })?;
                                }
                                set(&mut content, raw.map(PartContent::Raw))?
                            }
                            Key::Url => {
                                let url = map.next_value::<Option<String>>()?;
                                if url.as_deref().is_some_and(|u| u.trim().is_empty()) {
                                    return Err(de::Error::custom("`url` must not be empty"));
                                }
                                set(&mut content, url.map(PartContent::Url))?
                            }
                            Key::Data => {
                                let data: serde_json::Value = map.next_value()?;
                                if data.is_null() {
                                    return Err(de::Error::custom(
                                        "`data` must be a JSON value other than null",
                                    ));
                                }
                                set(&mut content, Some(PartContent::Data(data)))?
                            }
                            Key::Metadata => metadata = map.next_value()?,
                            Key::Filename => filename = map.next_value()?,
                            Key::MediaType => media_type = map.next_value()?,
                            Key::Other => {
                                map.next_value::<IgnoredAny>()?;
                            }
                        }
                    }
                    let content = content
                        .ok_or_else(|| de::Error::custom(format!("a part needs {CONTENT_KEYS}")))?;
                    Ok(Part {
                        content,
                        metadata,
                        filename,
                        media_type,
                    })
                }
            }
            d.deserialize_map(PartVisitor)
        }
    }
}

/// Reads a list of parts, naming the index of a part that fails (`part 2: ...`).
pub(crate) fn parts_named<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Part>, D::Error> {
    use serde::de::{Error, SeqAccess, Visitor};
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<Part>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of parts")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Part>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
            loop {
                match seq.next_element::<Part>() {
                    Ok(Some(p)) => out.push(p),
                    Ok(None) => return Ok(out),
                    Err(e) => {
                        return Err(A::Error::custom(format_args!("part {}: {e}", out.len())));
                    }
                }
            }
        }
    }
    d.deserialize_seq(V)
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::from_content(PartContent::Text(text.into()))
    }

    /// A data part.
    pub fn data(value: serde_json::Value) -> Self {
        Self::from_content(PartContent::Data(value))
    }

    /// A part with the given content and nothing else.
    pub fn from_content(content: PartContent) -> Self {
        Self {
            content,
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    /// The text, for a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The message's unique id (set by its sender). Required; an empty id is omitted, as
    /// ProtoJSON omits empty strings, and a missing one reads as empty.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        alias = "message_id"
    )]
    pub message_id: String,
    /// The conversation this message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub context_id: Option<String>,
    /// The task this message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub task_id: Option<String>,
    /// Who sent it.
    pub role: Role,
    /// The content.
    #[serde(deserialize_with = "parts_named")]
    pub parts: Vec<Part>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// URIs of extensions used in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Other tasks this message refers to.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "reference_task_ids"
    )]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message with the given role, id and parts.
    pub fn new(role: Role, message_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Self {
            message_id: message_id.into(),
            context_id: None,
            task_id: None,
            role,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }
}

/// A task's current state, with an optional message and timestamp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// A message about the state (the agent's question for input-required, the error for
    /// failed...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the state was entered, ISO 8601 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// A status with only a state.
    pub fn new(state: TaskState) -> Self {
        Self::at(state, None)
    }

    /// A status with a state and when it was entered (ISO 8601 UTC).
    pub fn at(state: TaskState, timestamp: Option<String>) -> Self {
        Self {
            state,
            message: None,
            timestamp,
        }
    }
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// The artifact's id, unique within the task. Required; empty is omitted and missing
    /// reads as empty, as for [`Message::message_id`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub artifact_id: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content.
    #[serde(deserialize_with = "parts_named")]
    pub parts: Vec<Part>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// URIs of extensions used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A unit of work with a lifecycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task id (chosen by the server).
    pub id: String,
    /// The conversation the task belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The current status.
    pub status: TaskStatus,
    /// Outputs so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Messages exchanged so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

impl Task {
    /// A task in `status` with no artifacts, history or metadata yet.
    pub fn new(id: impl Into<String>, context_id: Option<String>, status: TaskStatus) -> Self {
        Self {
            id: id.into(),
            context_id,
            status,
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
        }
    }
}

/// A status change of a task, sent on a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// A new or extended artifact, sent on a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The artifact (or the chunk of it).
    pub artifact: Artifact,
    /// True when the parts extend an artifact sent before with the same id.
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    /// True on the last chunk of the artifact.
    #[serde(default, skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// The result of `SendMessage`: a task or a direct message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the message started or continued.
    Task(Task),
    /// A direct reply.
    Message(Message),
}

/// One event of a stream (`SendStreamingMessage`, `SubscribeToTask`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// A task snapshot (usually the first event).
    Task(Task),
    /// A direct reply (the only event of its stream).
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact update.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl From<SendMessageResponse> for StreamResponse {
    fn from(r: SendMessageResponse) -> Self {
        match r {
            SendMessageResponse::Task(t) => StreamResponse::Task(t),
            SendMessageResponse::Message(m) => StreamResponse::Message(m),
        }
    }
}

/// Authentication the server uses when delivering push notifications.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The HTTP auth scheme (e.g. `Bearer`).
    pub scheme: String,
    /// The credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// Where and how to deliver push notifications for a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// Tenant, when the server is multi-tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The config's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub task_id: Option<String>,
    /// The webhook URL.
    pub url: String,
    /// A token echoed back in notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Authentication for the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// Options of a `SendMessage` call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in the reply.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "accepted_output_modes"
    )]
    pub accepted_output_modes: Vec<String>,
    /// Push notifications for the task.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "task_push_notification_config"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// How many history messages to return.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "history_length"
    )]
    pub history_length: Option<i32>,
    /// True to get the task back at once instead of waiting for a terminal or interrupted state.
    #[serde(
        default,
        skip_serializing_if = "is_false",
        alias = "return_immediately"
    )]
    pub return_immediately: bool,
}

/// Params of `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// Tenant, when the server is multi-tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The message.
    pub message: Message,
    /// Options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

impl SendMessageRequest {
    /// A request with only a message.
    pub fn new(message: Message) -> Self {
        Self {
            tenant: None,
            message,
            configuration: None,
            metadata: None,
        }
    }
}

/// Params of `GetTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id.
    pub id: String,
    /// How many history messages to return.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "history_length"
    )]
    pub history_length: Option<i32>,
}

/// Params of `ListTasks`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Only tasks of this context.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub context_id: Option<String>,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// Page size.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "page_size")]
    pub page_size: Option<i32>,
    /// The token of the page to return.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "page_token")]
    pub page_token: Option<String>,
    /// How many history messages to return per task.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "history_length"
    )]
    pub history_length: Option<i32>,
    /// Only tasks whose status changed after this time (ISO 8601).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "status_timestamp_after"
    )]
    pub status_timestamp_after: Option<String>,
    /// Whether to include artifacts.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "include_artifacts"
    )]
    pub include_artifacts: Option<bool>,
}

/// Result of `ListTasks`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The tasks of this page.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// The token of the next page, empty on the last.
    #[serde(default)]
    pub next_page_token: String,
    /// The page size used.
    #[serde(default)]
    pub page_size: i32,
    /// The number of tasks matching the filter.
    #[serde(default)]
    pub total_size: i32,
}

/// Params of `CancelTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id.
    pub id: String,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// Params of `SubscribeToTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id.
    pub id: String,
}

/// Params of `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRef {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The config id.
    pub id: String,
}

/// Params of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Page size.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "page_size")]
    pub page_size: Option<i32>,
    /// The token of the page to return.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "page_token")]
    pub page_token: Option<String>,
}

/// Result of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The configs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// The token of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// Params of `GetExtendedAgentCard`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Agent card
// ---------------------------------------------------------------------------------------------

/// One way to reach the agent: URL + binding + protocol version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The absolute endpoint URL.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON`, `GRPC` or a custom binding URI.
    pub protocol_binding: String,
    /// Tenant to pass in requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The protocol version spoken there (`1.0`, `0.3`).
    pub protocol_version: String,
}

/// The organization providing the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// The provider's URL.
    pub url: String,
    /// The provider's name.
    pub organization: String,
}

/// A protocol extension the agent supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// The extension's URI.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uri: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// True when clients must support it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// Extension parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
}

/// Optional features the agent supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask` are supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notifications are supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// Extensions supported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    /// `GetExtendedAgentCard` is supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// A list of strings (ProtoJSON form of `StringList`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StringList {
    /// The strings.
    #[serde(default)]
    pub list: Vec<String>,
}

/// A set of schemes that together satisfy the agent's security (scheme name -> scopes).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// Scheme name -> required scopes.
    #[serde(default)]
    pub schemes: BTreeMap<String, StringList>,
}

/// A capability of the agent, shown to clients (and to models deciding whether to delegate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Unique id.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// What the skill does.
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Accepted input media types (overrides the card's defaults).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Produced output media types (overrides the card's defaults).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// Security needed for this skill.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// A JWS signature of the card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    /// The protected JWS header, base64url.
    pub protected: String,
    /// The signature, base64url.
    pub signature: String,
    /// The unprotected JWS header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<JsonObject>,
}

/// API key authentication.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where the key goes: `query`, `header` or `cookie`.
    pub location: String,
    /// The header, query or cookie name.
    pub name: String,
}

/// HTTP authentication (`Bearer`, `Basic`...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The scheme name (`Bearer`).
    pub scheme: String,
    /// A hint about the bearer token format (`JWT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
}

/// The authorization-code OAuth flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCodeOAuthFlow {
    /// Authorization URL.
    pub authorization_url: String,
    /// Token URL.
    pub token_url: String,
    /// Refresh URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope -> description.
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
    /// True when PKCE is required.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pkce_required: bool,
}

/// The client-credentials OAuth flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsOAuthFlow {
    /// Token URL.
    pub token_url: String,
    /// Refresh URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope -> description.
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
}

/// The implicit OAuth flow (deprecated).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImplicitOAuthFlow {
    /// Authorization URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    /// Refresh URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope -> description.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
}

/// The password OAuth flow (deprecated).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswordOAuthFlow {
    /// Token URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Refresh URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope -> description.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
}

/// The device-code OAuth flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCodeOAuthFlow {
    /// Device authorization URL.
    pub device_authorization_url: String,
    /// Token URL.
    pub token_url: String,
    /// Refresh URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope -> description.
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
}

/// One OAuth flow (a one-of in 1.0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OAuthFlows {
    /// Authorization code.
    AuthorizationCode(AuthorizationCodeOAuthFlow),
    /// Client credentials.
    ClientCredentials(ClientCredentialsOAuthFlow),
    /// Implicit (deprecated).
    Implicit(ImplicitOAuthFlow),
    /// Password (deprecated).
    Password(PasswordOAuthFlow),
    /// Device code.
    DeviceCode(DeviceCodeOAuthFlow),
}

/// OAuth 2.0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The flow.
    pub flows: OAuthFlows,
    /// RFC 8414 metadata URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2_metadata_url: Option<String>,
}

/// OpenID Connect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The discovery URL.
    pub open_id_connect_url: String,
}

/// Mutual TLS.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MutualTlsSecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One security scheme (a one-of in 1.0: `{"httpAuthSecurityScheme": {...}}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    /// API key.
    ApiKeySecurityScheme(ApiKeySecurityScheme),
    /// HTTP auth.
    HttpAuthSecurityScheme(HttpAuthSecurityScheme),
    /// OAuth 2.0.
    Oauth2SecurityScheme(OAuth2SecurityScheme),
    /// OpenID Connect.
    OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme),
    /// Mutual TLS.
    MtlsSecurityScheme(MutualTlsSecurityScheme),
}

/// The agent card: who the agent is, what it can do, and how to reach it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// The agent's name.
    pub name: String,
    /// What the agent does.
    pub description: String,
    /// How to reach it, in order of preference.
    pub supported_interfaces: Vec<AgentInterface>,
    /// The provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    pub version: String,
    /// Documentation URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Optional features.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Security schemes by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Security requirements (any one of them suffices).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Accepted input media types.
    #[serde(default)]
    pub default_input_modes: Vec<String>,
    /// Produced output media types.
    #[serde(default)]
    pub default_output_modes: Vec<String>,
    /// Skills.
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// JWS signatures of the card.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    /// Icon URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}
