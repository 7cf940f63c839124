//! A2A **0.3** types: the JSON schema of tag `v0.3.0` (`specification/json/a2a.json`).
//!
//! Objects carry a `kind` discriminator (`message`, `task`, `status-update`,
//! `artifact-update`; parts `text`, `file`, `data`); states are kebab-case strings
//! (`input-required`); cards have `url`, `protocolVersion`, `preferredTransport` and
//! `additionalInterfaces`. The `kind` of a standalone object is a one-value enum such as
//! [`MessageKind`], defaulting to its only value on input, so peers that omit it still parse.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::JsonObject;

/// JSON-RPC method names of the 0.3 binding.
pub mod methods {
    /// `message/send`.
    pub const MESSAGE_SEND: &str = "message/send";
    /// `message/stream` (answered with Server-Sent Events).
    pub const MESSAGE_STREAM: &str = "message/stream";
    /// `tasks/get`.
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/cancel`.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// `tasks/resubscribe` (answered with Server-Sent Events).
    pub const TASKS_RESUBSCRIBE: &str = "tasks/resubscribe";
    /// `tasks/pushNotificationConfig/set`.
    pub const PUSH_CONFIG_SET: &str = "tasks/pushNotificationConfig/set";
    /// `tasks/pushNotificationConfig/get`.
    pub const PUSH_CONFIG_GET: &str = "tasks/pushNotificationConfig/get";
    /// `tasks/pushNotificationConfig/list`.
    pub const PUSH_CONFIG_LIST: &str = "tasks/pushNotificationConfig/list";
    /// `tasks/pushNotificationConfig/delete`.
    pub const PUSH_CONFIG_DELETE: &str = "tasks/pushNotificationConfig/delete";
    /// `agent/getAuthenticatedExtendedCard`.
    pub const GET_AUTHENTICATED_EXTENDED_CARD: &str = "agent/getAuthenticatedExtendedCard";
}

macro_rules! kind_marker {
    ($(#[$meta:meta])* $name:ident, $wire:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
        pub enum $name {
            #[doc = concat!("`", $wire, "`")]
            #[default]
            #[serde(rename = $wire)]
            Value,
        }
    };
}

kind_marker!(
    /// The `kind` of a [`Message`]: always `message`.
    MessageKind,
    "message"
);
kind_marker!(
    /// The `kind` of a [`Task`]: always `task`.
    TaskKind,
    "task"
);
kind_marker!(
    /// The `kind` of a [`TaskStatusUpdateEvent`]: always `status-update`.
    StatusUpdateKind,
    "status-update"
);
kind_marker!(
    /// The `kind` of a [`TaskArtifactUpdateEvent`]: always `artifact-update`.
    ArtifactUpdateKind,
    "artifact-update"
);

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The client.
    User,
    /// The remote agent.
    Agent,
}

/// The lifecycle state of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// `submitted`.
    Submitted,
    /// `working`.
    Working,
    /// `input-required` (interrupted).
    InputRequired,
    /// `completed` (terminal).
    Completed,
    /// `canceled` (terminal).
    Canceled,
    /// `failed` (terminal).
    Failed,
    /// `rejected` (terminal).
    Rejected,
    /// `auth-required` (interrupted).
    AuthRequired,
    /// `unknown`.
    Unknown,
}

impl TaskState {
    /// Completed, canceled, failed or rejected.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }
}

/// A text part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// A file given inline (`bytes`, base64) or by `uri`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    /// Base64 content (`FileWithBytes`); checked to be base64 when read.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "base64_field"
    )]
    pub bytes: Option<String>,
    /// Location (`FileWithUri`); must not be empty when present.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "uri_field"
    )]
    pub uri: Option<String>,
    /// Media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// File name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

fn base64_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    // Large values: read without serde_json's scratch copy (an encoder may escape `/` as `\/`).
    let v = serde::de::DeserializeSeed::deserialize(super::json_text::OptString, d)?;
    if let Some(b) = &v {
        super::check_base64(b)
            .map_err(|e| serde::de::Error::custom(format_args!("`file.bytes` is {e}")))?;
    }
    Ok(v)
}

fn uri_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<String>::deserialize(d)?;
    if v.as_deref().is_some_and(|u| u.trim().is_empty()) {
        return Err(serde::de::Error::custom("`file.uri` must not be empty"));
    }
    Ok(v)
}

/// A file part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilePart {
    /// The file.
    pub file: FileContent,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// A structured-data part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataPart {
    /// The data (a JSON object).
    pub data: JsonObject,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// One piece of a message or artifact, tagged by `kind`.
///
/// Serialized as a derived internally tagged enum (`kind` first, then the variant's fields).
/// Deserialization is written by hand (see [`part_serde`](self)): the derived one buffered the
/// whole part into an intermediate tree (an owned copy of its text) before choosing the
/// variant, so a large text part with escapes cost three times its size.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Part {
    /// `{"kind": "text", "text": ...}`.
    Text(TextPart),
    /// `{"kind": "file", "file": {...}}`.
    File(FilePart),
    /// `{"kind": "data", "data": {...}}`.
    Data(DataPart),
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text(TextPart {
            text: text.into(),
            metadata: None,
        })
    }
}

/// [`Part`]'s deserialization: one pass over the object, without buffering it.
///
/// Every key is read as it comes, in any order (`kind` may come last): the text with
/// [`OptString`] (no scratch copy), `file`, `data` and `metadata` as their types; unknown keys
/// are skipped. Once `kind` is known, the fields of the other kinds are skipped unread, as the
/// derived enum did; `file` and `data` before `kind` are kept as JSON until `kind` says
/// whether they are the part's. Errors keep the derived enum's wording: a missing field, an
/// unknown variant (with the list of kinds), a duplicate field, an invalid type.
///
/// Stricter than the derived enum in three cases no A2A peer produces: a part that is not an
/// object is refused ("expected internally tagged enum Part"), the array form
/// `["text", "hi"]` too; a `text` before `kind` must be a string or `null` even when `kind`
/// then says `file` or `data`; and a key repeated before `kind` is a duplicate even when it is
/// another kind's.
mod part_serde {
    use std::fmt;

    use serde::de::DeserializeOwned;
    use serde::de::{self, IgnoredAny, MapAccess, Unexpected, Visitor};
    use serde::{Deserialize, Deserializer};

    use super::{DataPart, FileContent, FilePart, JsonObject, Part, TextPart};
    use crate::types::json_text::OptString;

    /// A part's `kind`: the derived identifier gives serde's wording for an unknown one.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
    #[serde(variant_identifier, rename_all = "lowercase")]
    enum Kind {
        Text,
        File,
        Data,
    }

    /// A key of a part's object; unknown keys are skipped, as for every other A2A object.
    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "lowercase")]
    enum Key {
        Kind,
        Text,
        File,
        Data,
        Metadata,
        #[serde(other)]
        Other,
    }

    /// `file` or `data`: typed as read once `kind` says the part has it; read before `kind`,
    /// kept as JSON and typed only if `kind` then wants it (the derived enum ignored another
    /// kind's field, whatever it held; and `serde_json::Value`'s keys come sorted, `data` and
    /// `file` before `kind`).
    enum Slot<T> {
        Typed(T),
        Early(serde_json::Value),
    }

    impl<T: DeserializeOwned> Slot<T> {
        /// Reads the field's value: typed when `kind` is known (then it is the part's field).
        fn read<'de, A: MapAccess<'de>>(map: &mut A, kind_known: bool) -> Result<Self, A::Error> {
            Ok(if kind_known {
                Slot::Typed(map.next_value()?)
            } else {
                Slot::Early(map.next_value()?)
            })
        }

        /// The field `name` of the part's kind.
        fn typed<E: de::Error>(slot: Option<Self>, name: &'static str) -> Result<T, E> {
            match slot {
                None => Err(E::missing_field(name)),
                Some(Slot::Typed(t)) => Ok(t),
                Some(Slot::Early(v)) => T::deserialize(v).map_err(E::custom),
            }
        }
    }

    /// Refuses a second `name` ("duplicate field ..."), as a derived struct does.
    fn first<T, E: de::Error>(slot: &Option<T>, name: &'static str) -> Result<(), E> {
        match slot {
            Some(_) => Err(E::duplicate_field(name)),
            None => Ok(()),
        }
    }

    impl<'de> Deserialize<'de> for Part {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(PartVisitor)
        }
    }

    struct PartVisitor;

    impl<'de> Visitor<'de> for PartVisitor {
        type Value = Part;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("internally tagged enum Part")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
            let mut kind: Option<Kind> = None;
            // `Some(None)`: the key with `null`, refused for a text part when it is built.
            let mut text: Option<Option<String>> = None;
            let mut file: Option<Slot<FileContent>> = None;
            let mut data: Option<Slot<JsonObject>> = None;
            let mut metadata: Option<Option<JsonObject>> = None;
            while let Some(key) = map.next_key::<Key>()? {
                // Before `kind`, any kind's field is read; after it, only the kind's own.
                let known = kind;
                let wanted = |k: Kind| known.is_none_or(|have| have == k);
                match key {
                    Key::Kind => {
                        first(&kind, "kind")?;
                        kind = Some(map.next_value()?);
                    }
                    Key::Text if wanted(Kind::Text) => {
                        first(&text, "text")?;
                        text = Some(map.next_value_seed(OptString)?);
                    }
                    Key::File if wanted(Kind::File) => {
                        first(&file, "file")?;
                        file = Some(Slot::read(&mut map, known.is_some())?);
                    }
                    Key::Data if wanted(Kind::Data) => {
                        first(&data, "data")?;
                        data = Some(Slot::read(&mut map, known.is_some())?);
                    }
                    Key::Metadata => {
                        first(&metadata, "metadata")?;
                        metadata = Some(map.next_value()?);
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            let metadata = metadata.flatten();
            Ok(
                match kind.ok_or_else(|| de::Error::missing_field("kind"))? {
                    Kind::Text => Part::Text(TextPart {
                        text: match text {
                            Some(Some(text)) => text,
                            Some(None) => {
                                return Err(de::Error::invalid_type(Unexpected::Unit, &"a string"));
                            }
                            None => return Err(de::Error::missing_field("text")),
                        },
                        metadata,
                    }),
                    Kind::File => Part::File(FilePart {
                        file: Slot::typed(file, "file")?,
                        metadata,
                    }),
                    Kind::Data => Part::Data(DataPart {
                        data: Slot::typed(data, "data")?,
                        metadata,
                    }),
                },
            )
        }
    }

    #[cfg(test)]
    mod tests {
        use serde::Deserialize;

        use super::super::Part;

        /// The derived enum this module replaces: the oracle (named `Part` for serde's
        /// wording, "expected internally tagged enum Part").
        mod derived {
            use serde::{Deserialize, Serialize};

            use super::super::super::{DataPart, FilePart, TextPart};

            #[derive(Debug, Serialize, Deserialize)]
            #[serde(tag = "kind", rename_all = "lowercase")]
            pub(super) enum Part {
                Text(TextPart),
                File(FilePart),
                Data(DataPart),
            }
        }
        use derived::Part as Derived;

        impl From<Derived> for Part {
            fn from(d: Derived) -> Part {
                match d {
                    Derived::Text(t) => Part::Text(t),
                    Derived::File(f) => Part::File(f),
                    Derived::Data(d) => Part::Data(d),
                }
            }
        }

        /// An error's text less serde_json's position (ours is reported where the field is,
        /// the derived enum's where the buffered object ends).
        fn head(e: serde_json::Error) -> String {
            let e = e.to_string();
            e.split(" at line").next().unwrap_or(&e).to_owned()
        }

        type Read = Result<Part, String>;

        /// `json` read by ours and by the derived enum, every way in: a slice, a `&str`, a
        /// reader, a `Value` (which keeps the last of duplicate keys).
        fn both(json: &str) -> Vec<(&'static str, Read, Read)> {
            fn read<T: for<'de> Deserialize<'de>>(how: &str, json: &str) -> Result<T, String> {
                match how {
                    "slice" => serde_json::from_slice(json.as_bytes()),
                    "str" => serde_json::from_str(json),
                    "reader" => serde_json::from_reader(json.as_bytes()),
                    _ => serde_json::from_str::<serde_json::Value>(json)
                        .and_then(serde_json::from_value),
                }
                .map_err(head)
            }
            ["slice", "str", "reader", "value"]
                .into_iter()
                .map(|how| {
                    (
                        how,
                        read::<Part>(how, json),
                        read::<Derived>(how, json).map(Part::from),
                    )
                })
                .collect()
        }

        /// The same part, or the same error (less its position), as the derived enum; the
        /// same bytes out, read back as the same part.
        fn same(json: &str) {
            for (how, ours, derived) in both(json) {
                assert_eq!(ours, derived, "{how}: {json}");
                if let Ok(p) = &ours {
                    let derived = match p.clone() {
                        Part::Text(t) => Derived::Text(t),
                        Part::File(f) => Derived::File(f),
                        Part::Data(d) => Derived::Data(d),
                    };
                    let out = serde_json::to_string(p).unwrap();
                    assert_eq!(out, serde_json::to_string(&derived).unwrap(), "{json}");
                    assert_eq!(&serde_json::from_str::<Part>(&out).unwrap(), p, "{out}");
                }
            }
        }

        #[test]
        fn parts_read_as_the_derived_enum_read_them() {
            for json in [
                // Every kind, `kind` first, last, between.
                r#"{"kind": "text", "text": "hi"}"#,
                r#"{"text": "hi", "kind": "text"}"#,
                r#"{"kind": "text", "text": "a\nb \"q\" \/ \u00e9 \ud83d\ude00", "metadata": {"k": 1}}"#,
                r#"{"metadata": {"k": [1, {"x": null}]}, "text": "x\ty", "kind": "text"}"#,
                r#"{"kind": "text", "text": "", "metadata": null}"#,
                r#"{"kind": "file", "file": {"bytes": "QUJD", "mimeType": "text/plain", "name": "a.txt"}}"#,
                r#"{"file": {"uri": "https://example.com/a"}, "kind": "file", "metadata": {}}"#,
                r#"{"kind": "file", "file": {"bytes": "QU\/D"}}"#,
                r#"{"kind": "file", "file": {}}"#,
                r#"{"kind": "data", "data": {"a": [1, 2], "b": {"c": "d"}}}"#,
                r#"{"data": {}, "metadata": {"m": "v"}, "kind": "data"}"#,
                // Unknown keys are skipped; so are the other kinds' fields after `kind`.
                r#"{"kind": "text", "text": "x", "extra": [1, {"a": 2}], "data": "no", "file": 5}"#,
                r#"{"kind": "text", "text": "x", "data": {}, "data": {}}"#,
                r#"{"kind": "data", "data": {}, "text": 7, "file": null}"#,
                r#"{"kind": "file", "file": {"uri": "u"}, "text": null, "data": [1]}"#,
                // The other kinds' fields before `kind` are dropped, valid or not.
                r#"{"file": {"uri": "u"}, "data": {"x": 1}, "text": "t", "kind": "text"}"#,
                r#"{"data": "no", "kind": "text", "text": "t"}"#,
                r#"{"file": {"uri": ""}, "data": [], "kind": "text", "text": "t"}"#,
                r#"{"file": 5, "kind": "data", "data": {}}"#,
                r#"{"data": 5, "file": {"bytes": "QUJD"}, "kind": "file"}"#,
                // `file` and `data` before `kind`, wrong.
                r#"{"file": {"bytes": "!!!notbase64"}, "kind": "file"}"#,
                r#"{"file": "x", "kind": "file"}"#,
                r#"{"data": [1], "kind": "data"}"#,
                r#"{"data": null, "kind": "data"}"#,
                r#"{"text": "t", "kind": "data", "data": {"x": 1}}"#,
                r#"{"text": null, "kind": "file", "file": {"uri": "u"}}"#,
                // Refused, with the derived enum's wording.
                r#"{}"#,
                r#"{"text": "x"}"#,
                r#"{"kind": "image", "text": "x"}"#,
                r#"{"text": "x", "kind": "TEXT"}"#,
                r#"{"kind": null, "text": "x"}"#,
                r#"{"kind": 1, "text": "x"}"#,
                r#"{"kind": "text", "kind": "text", "text": "x"}"#,
                r#"{"kind": "text"}"#,
                r#"{"kind": "text", "metadata": {}}"#,
                r#"{"kind": "text", "text": null}"#,
                r#"{"kind": "text", "text": 5}"#,
                r#"{"kind": "text", "text": ["x"]}"#,
                r#"{"kind": "text", "text": "a", "text": "b"}"#,
                r#"{"text": "a", "kind": "text", "text": "b"}"#,
                r#"{"kind": "text", "text": "a", "metadata": []}"#,
                r#"{"kind": "text", "text": "a", "metadata": {}, "metadata": {}}"#,
                r#"{"kind": "text", "text": "lone \ud800 surrogate"}"#,
                r#"{"kind": "text", "text": "trailing \udc00 surrogate"}"#,
                r#"{"kind": "text", "text": "bad \q escape"}"#,
                r#"{"kind": "file"}"#,
                r#"{"kind": "file", "file": "x"}"#,
                r#"{"kind": "file", "file": {"bytes": "!!!notbase64"}}"#,
                r#"{"kind": "file", "file": {"uri": " "}}"#,
                r#"{"kind": "file", "file": {"uri": "u"}, "file": {"uri": "v"}}"#,
                r#"{"kind": "data"}"#,
                r#"{"kind": "data", "data": null}"#,
                r#"{"kind": "data", "data": [1]}"#,
                r#""text""#,
                "5",
                "null",
            ] {
                same(json);
            }
        }

        /// Where the two differ, on purpose: the array form, a `text` of another kind's part
        /// before `kind` that is not a string, and a key repeated before `kind`.
        #[test]
        fn the_differences_from_the_derived_enum_are_refusals() {
            for (json, want) in [
                (
                    r#"["text", "hi"]"#,
                    "invalid type: sequence, expected internally tagged enum Part",
                ),
                (
                    r#"{"text": 5, "kind": "data", "data": {}}"#,
                    "invalid type: integer `5`, expected a string",
                ),
                (
                    r#"{"text": {}, "kind": "file", "file": {"uri": "u"}}"#,
                    "invalid type: map, expected a string",
                ),
                (
                    r#"{"data": {}, "data": {}, "kind": "text", "text": "t"}"#,
                    "duplicate field `data`",
                ),
            ] {
                assert!(serde_json::from_str::<Derived>(json).is_ok(), "{json}");
                let e = head(serde_json::from_str::<Part>(json).unwrap_err());
                assert_eq!(e, want, "{json}");
            }
            // An empty array: refused by both, in other words.
            let e = head(serde_json::from_str::<Part>("[]").unwrap_err());
            assert_eq!(
                e,
                "invalid type: sequence, expected internally tagged enum Part"
            );
            let e = head(serde_json::from_str::<Derived>("[]").unwrap_err());
            assert_eq!(e, "missing field `kind`");
        }

        /// Random texts over an alphabet of escapes, halves of surrogate pairs and multi-byte
        /// characters, `kind` before or after them, against the derived enum (a fixed
        /// xorshift seed: the same cases every run). A text with two defects may be refused
        /// for the other one (see `json_text`), so only the verdict is compared on errors.
        #[test]
        fn random_texts_read_as_the_derived_enum_read_them() {
            let pieces = [
                "a",
                "zz",
                "é",
                "😀",
                "\\n",
                "\\\"",
                "\\\\",
                "\\/",
                "\\t",
                "\\u0041",
                "\\u00E9",
                "\\ud83d\\ude00",
                "\\ud83d",
                "\\ude00",
                "\\uDBFF",
                "\\u",
                "12",
                "\\q",
            ];
            let mut rng = crate::types::XorShift(0x2545_F491_4F6C_DD1D);
            for _ in 0..2000 {
                let text = rng.concat(&pieces, 10);
                let json = match rng.next() % 3 {
                    0 => format!(r#"{{"kind": "text", "text": "{text}"}}"#),
                    1 => format!(r#"{{"text": "{text}", "metadata": {{"a": 1}}, "kind": "text"}}"#),
                    _ => {
                        format!(r#"{{"metadata": null, "text": "{text}", "kind": "text", "x": 1}}"#)
                    }
                };
                for (how, ours, derived) in both(&json) {
                    match (&ours, &derived) {
                        (Ok(o), Ok(d)) => assert_eq!(o, d, "{how}: {json}"),
                        (Err(_), Err(_)) => {}
                        _ => panic!("{how}: {json}: ours {ours:?}, derived {derived:?}"),
                    }
                }
            }
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Always `message`.
    #[serde(default)]
    pub kind: MessageKind,
    /// The message id (a missing one reads as empty).
    #[serde(default)]
    pub message_id: String,
    /// The conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who sent it.
    pub role: Role,
    /// The content.
    pub parts: Vec<Part>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Extension URIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Referenced tasks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

/// A task's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// A message about the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// ISO 8601 timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// The artifact id (a missing one reads as empty).
    #[serde(default)]
    pub artifact_id: String,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content.
    pub parts: Vec<Part>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Extension URIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A unit of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Always `task`.
    #[serde(default)]
    pub kind: TaskKind,
    /// The task id.
    pub id: String,
    /// The conversation.
    pub context_id: String,
    /// The status.
    pub status: TaskStatus,
    /// Outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// History.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// A status change on a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// Always `status-update`.
    #[serde(default)]
    pub kind: StatusUpdateKind,
    /// The task.
    pub task_id: String,
    /// The conversation.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// True on the last event of the stream.
    #[serde(default, rename = "final")]
    pub is_final: bool,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// An artifact update on a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// Always `artifact-update`.
    #[serde(default)]
    pub kind: ArtifactUpdateKind,
    /// The task.
    pub task_id: String,
    /// The conversation.
    pub context_id: String,
    /// The artifact or chunk.
    pub artifact: Artifact,
    /// True when the parts extend an earlier artifact with the same id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    /// True on the last chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_chunk: Option<bool>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// Any kind-tagged object a 0.3 server sends as a result or stream event: the result of
/// `message/send` is a [`Message`](Event::Message) or [`Task`](Event::Task); a stream also
/// carries the two update events.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Event {
    /// `kind: "message"`.
    Message(Message),
    /// `kind: "task"`.
    Task(Task),
    /// `kind: "status-update"`.
    StatusUpdate(TaskStatusUpdateEvent),
    /// `kind: "artifact-update"`.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        let kind = v
            .get("kind")
            .and_then(|k| k.as_str())
            .ok_or_else(|| D::Error::custom("0.3 event without a string `kind`"))?
            .to_string();
        let r = match kind.as_str() {
            "message" => serde_json::from_value(v).map(Event::Message),
            "task" => serde_json::from_value(v).map(Event::Task),
            "status-update" => serde_json::from_value(v).map(Event::StatusUpdate),
            "artifact-update" => serde_json::from_value(v).map(Event::ArtifactUpdate),
            other => {
                return Err(D::Error::custom(format!(
                    "unknown 0.3 event kind `{other}`"
                )));
            }
        };
        r.map_err(|e| D::Error::custom(format!("invalid 0.3 `{kind}`: {e}")))
    }
}

/// Push-notification webhook authentication.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushNotificationAuthenticationInfo {
    /// Accepted schemes (`Bearer`...).
    pub schemes: Vec<String>,
    /// Credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// A push-notification webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushNotificationConfig {
    /// Config id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Webhook URL.
    pub url: String,
    /// Token echoed back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushNotificationAuthenticationInfo>,
}

/// A webhook bound to a task (`tasks/pushNotificationConfig/set` params and results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The task.
    pub task_id: String,
    /// The webhook.
    pub push_notification_config: PushNotificationConfig,
}

/// Options of `message/send`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendConfiguration {
    /// Accepted output media types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// Wait for a terminal or interrupted state (true) or return at once (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    /// History length to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// A webhook for the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config: Option<PushNotificationConfig>,
}

/// Params of `message/send` and `message/stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageSendParams {
    /// The message.
    pub message: Message,
    /// Options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<MessageSendConfiguration>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// Params of `tasks/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    /// The task id.
    pub id: String,
    /// History length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// Params of `tasks/cancel`, `tasks/resubscribe` and `tasks/pushNotificationConfig/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskIdParams {
    /// The task id.
    pub id: String,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// Params of `tasks/pushNotificationConfig/get` and `.../delete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigParams {
    /// The task id.
    pub id: String,
    /// The config id (required for delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config_id: Option<String>,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

// ---------------------------------------------------------------------------------------------
// Agent card
// ---------------------------------------------------------------------------------------------

/// An additional endpoint: URL + transport.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInterface {
    /// Endpoint URL.
    pub url: String,
    /// `JSONRPC`, `GRPC` or `HTTP+JSON`.
    pub transport: String,
}

/// The provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentProvider {
    /// Organization name.
    pub organization: String,
    /// URL.
    pub url: String,
}

/// An extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentExtension {
    /// URI.
    pub uri: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
}

/// Optional features.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Streaming supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notifications supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// Status transition history kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_transition_history: Option<bool>,
    /// Extensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
}

/// A skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Input media types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Output media types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// Security requirements (scheme name -> scopes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security: Vec<BTreeMap<String, Vec<String>>>,
}

/// A JWS signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCardSignature {
    /// Protected header.
    pub protected: String,
    /// Signature.
    pub signature: String,
    /// Unprotected header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<JsonObject>,
}

/// OAuth flows (several may be present in 0.3).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthFlows {
    /// Authorization code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_code: Option<OAuthFlow>,
    /// Client credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_credentials: Option<OAuthFlow>,
    /// Implicit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implicit: Option<OAuthFlow>,
    /// Password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<OAuthFlow>,
}

/// One OAuth flow (the union of the 0.3 flow objects' fields).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthFlow {
    /// Authorization URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    /// Token URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Refresh URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope -> description.
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
}

/// A security scheme, tagged by `type` (OpenAPI style).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SecurityScheme {
    /// `apiKey`.
    #[serde(rename = "apiKey")]
    ApiKey {
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// `query`, `header` or `cookie`.
        #[serde(rename = "in")]
        location: String,
        /// The parameter name.
        name: String,
    },
    /// `http`.
    #[serde(rename = "http")]
    Http {
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// `bearer`, `basic`...
        scheme: String,
        /// Token format hint.
        #[serde(
            default,
            rename = "bearerFormat",
            skip_serializing_if = "Option::is_none"
        )]
        bearer_format: Option<String>,
    },
    /// `oauth2`.
    #[serde(rename = "oauth2")]
    OAuth2 {
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Flows (boxed: the largest variant).
        flows: Box<OAuthFlows>,
        /// Metadata URL.
        #[serde(
            default,
            rename = "oauth2MetadataUrl",
            skip_serializing_if = "Option::is_none"
        )]
        oauth2_metadata_url: Option<String>,
    },
    /// `openIdConnect`.
    #[serde(rename = "openIdConnect")]
    OpenIdConnect {
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Discovery URL.
        #[serde(rename = "openIdConnectUrl")]
        open_id_connect_url: String,
    },
    /// `mutualTLS`.
    #[serde(rename = "mutualTLS")]
    MutualTls {
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

/// The 0.3 agent card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// The preferred endpoint.
    pub url: String,
    /// Protocol version (`0.3.0`).
    pub protocol_version: String,
    /// Transport of `url` (default `JSONRPC`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_transport: Option<String>,
    /// Other endpoints (may repeat the main one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_interfaces: Vec<AgentInterface>,
    /// Agent version.
    pub version: String,
    /// Provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// Documentation URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Icon URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    /// Features.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Security schemes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Security requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security: Vec<BTreeMap<String, Vec<String>>>,
    /// Input media types.
    #[serde(default)]
    pub default_input_modes: Vec<String>,
    /// Output media types.
    #[serde(default)]
    pub default_output_modes: Vec<String>,
    /// Skills.
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// An extended card is available to authenticated clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_authenticated_extended_card: Option<bool>,
    /// Signatures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
}
