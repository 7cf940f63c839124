//! Approximate memory sizes of tasks, messages, events and push configs: what a bounded store
//! counts against its budget.

use crate::types::v1;

/// Fixed cost counted per object (a message, part, artifact, JSON node...): its struct and
/// allocation overhead, roughly.
const OBJECT_BYTES: usize = 64;

fn opt_len(s: &Option<String>) -> usize {
    s.as_ref().map_or(0, String::len)
}

/// The approximate memory a JSON value holds: its strings and keys plus a fixed cost per node.
fn json_bytes(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 16,
        Value::String(s) => OBJECT_BYTES / 2 + s.len(),
        Value::Array(a) => OBJECT_BYTES + a.iter().map(json_bytes).sum::<usize>(),
        Value::Object(o) => object_bytes(o),
    }
}

fn object_bytes(o: &crate::types::JsonObject) -> usize {
    OBJECT_BYTES
        + o.iter()
            .map(|(k, v)| OBJECT_BYTES / 2 + k.len() + json_bytes(v))
            .sum::<usize>()
}

fn metadata_bytes(m: &Option<crate::types::JsonObject>) -> usize {
    m.as_ref().map_or(0, object_bytes)
}

/// The approximate memory a part holds (its text, raw or URL string, or data value, plus
/// metadata, file name and media type).
fn part_bytes(p: &v1::Part) -> usize {
    let content = match &p.content {
        v1::PartContent::Text(t) | v1::PartContent::Raw(t) | v1::PartContent::Url(t) => t.len(),
        v1::PartContent::Data(d) => json_bytes(d),
    };
    OBJECT_BYTES
        + content
        + metadata_bytes(&p.metadata)
        + opt_len(&p.filename)
        + opt_len(&p.media_type)
}

/// What a message and an artifact both hold: parts, metadata and extension URIs.
fn content_bytes(
    parts: &[v1::Part],
    metadata: &Option<crate::types::JsonObject>,
    extensions: &[String],
) -> usize {
    parts.iter().map(part_bytes).sum::<usize>()
        + metadata_bytes(metadata)
        + extensions.iter().map(String::len).sum::<usize>()
}

/// The approximate memory a message holds: its parts, ids and metadata.
pub fn message_bytes(m: &v1::Message) -> usize {
    OBJECT_BYTES
        + m.message_id.len()
        + opt_len(&m.context_id)
        + opt_len(&m.task_id)
        + content_bytes(&m.parts, &m.metadata, &m.extensions)
        + m.reference_task_ids.iter().map(String::len).sum::<usize>()
}

/// The approximate memory an artifact holds.
fn artifact_bytes(a: &v1::Artifact) -> usize {
    OBJECT_BYTES
        + a.artifact_id.len()
        + opt_len(&a.name)
        + opt_len(&a.description)
        + content_bytes(&a.parts, &a.metadata, &a.extensions)
}

/// The approximate memory a task holds: history, artifacts, status message, ids and metadata.
/// Approximate but honest: every payload byte (texts, raw and URL parts, data values, metadata)
/// counts, plus a fixed cost per object for the structure around it.
pub fn task_bytes(t: &v1::Task) -> usize {
    OBJECT_BYTES
        + t.id.len()
        + opt_len(&t.context_id)
        + t.status.message.as_ref().map_or(0, message_bytes)
        + opt_len(&t.status.timestamp)
        + t.history.iter().map(message_bytes).sum::<usize>()
        + t.artifacts.iter().map(artifact_bytes).sum::<usize>()
        + metadata_bytes(&t.metadata)
}

/// Approximate bytes of a push-notification config: what it holds (URL, token, ids,
/// credentials), counted in [`InMemoryTaskStore`](super::InMemoryTaskStore)'s budget with its task.
pub(crate) fn push_config_bytes(c: &v1::TaskPushNotificationConfig) -> usize {
    OBJECT_BYTES
        + c.url.len()
        + opt_len(&c.token)
        + opt_len(&c.id)
        + opt_len(&c.task_id)
        + opt_len(&c.tenant)
        + c.authentication
            .as_ref()
            .map_or(0, |a| a.scheme.len() + opt_len(&a.credentials))
}

/// Approximate bytes of a task event (the task, message, status or artifact it carries).
#[cfg_attr(not(feature = "push"), allow(dead_code))]
pub(crate) fn event_bytes(e: &v1::StreamResponse) -> usize {
    OBJECT_BYTES
        + match e {
            v1::StreamResponse::Task(t) => task_bytes(t),
            v1::StreamResponse::Message(m) => message_bytes(m),
            v1::StreamResponse::StatusUpdate(u) => {
                u.status.message.as_ref().map_or(0, message_bytes) + metadata_bytes(&u.metadata)
            }
            v1::StreamResponse::ArtifactUpdate(u) => {
                artifact_bytes(&u.artifact) + metadata_bytes(&u.metadata)
            }
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_count_every_payload_byte() {
        let mut m = v1::Message::new(v1::Role::User, "id", vec![v1::Part::text("x".repeat(1000))]);
        let base = message_bytes(&m);
        assert!(base >= 1000);
        m.parts
            .push(v1::Part::data(serde_json::json!({"k": "y".repeat(500)})));
        assert!(message_bytes(&m) >= base + 500);
        let mut raw = v1::Part::from_content(v1::PartContent::Raw("QUJD".repeat(100)));
        raw.filename = Some("f".repeat(50));
        assert!(part_bytes(&raw) >= 450);
    }
}
