//! A2A **0.3** over HTTP+JSON: the ProtoJSON shapes of the 0.3 `a2a.proto` (tag `v0.3.0`,
//! package `a2a.v1`), converted to and from the kind-tagged 0.3 JSON of [`v03`](super::v03).
//!
//! The 0.3 HTTP+JSON binding (`POST /v1/message:send`, `GET /v1/tasks/{id}`, …) carries the
//! proto messages of the 0.3 gRPC service as ProtoJSON, which differ from the JSON-RPC shapes:
//!
//! | JSON-RPC 0.3 | HTTP+JSON 0.3 (ProtoJSON) |
//! |---|---|
//! | `{"kind": "message", "role": "user", "parts": […]}` | `{"role": "ROLE_USER", "content": […]}` |
//! | `{"kind": "text", "text": …}` | `{"text": …}` |
//! | `{"kind": "file", "file": {"uri", "bytes", "mimeType", "name"}}` | `{"file": {"fileWithUri" \| "fileWithBytes", "mimeType", "name"}}` |
//! | `{"kind": "data", "data": {…}}` | `{"data": {"data": {…}}}` |
//! | `"state": "input-required"`, `"canceled"` | `"state": "TASK_STATE_INPUT_REQUIRED"`, `"TASK_STATE_CANCELLED"` |
//! | `message/send` result: a task or a message | `{"task": …}` or `{"message": …}` |
//! | stream events tagged by `kind` | `{"task"}`, `{"message"}`, `{"statusUpdate"}`, `{"artifactUpdate"}` |
//! | `{"taskId", "pushNotificationConfig"}` | `{"name": "tasks/{id}/pushNotificationConfigs/{cid}", "pushNotificationConfig"}` |
//!
//! Output uses the proto JSON names (lowerCamelCase) and leaves out fields the proto does not
//! have (e.g. `referenceTaskIds`), since ProtoJSON parsers refuse unknown fields. Input accepts
//! the JSON names and the proto field names (`message_id` as well as `messageId`), enums by
//! name or number, as ProtoJSON parsers must. `fileWithBytes` is the file's base64 text (proto
//! `bytes` in JSON), i.e. the 0.3 JSON `bytes` field unchanged.

use serde_json::{Map, Value, json};

type Obj = Map<String, Value>;

/// Reads a field by its JSON name or its proto (snake_case) name.
fn field<'a>(o: &'a Obj, camel: &str) -> Option<&'a Value> {
    if let Some(v) = o.get(camel) {
        return Some(v);
    }
    let mut snake = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
    }
    o.get(&snake)
}

fn non_null(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// Copies the fields `names` (each read by either spelling) to `out` under their JSON names,
/// those present and not null.
fn copy(out: &mut Obj, o: &Obj, names: &[&str]) {
    for name in names {
        if let Some(v) = non_null(field(o, name)) {
            out.insert((*name).to_string(), v.clone());
        }
    }
}

/// Copies the string fields `names`, leaving out empty strings (proto3 defaults).
fn copy_str(out: &mut Obj, o: &Obj, names: &[&str]) {
    for name in names {
        if let Some(Value::String(s)) = field(o, name)
            && !s.is_empty()
        {
            out.insert((*name).to_string(), Value::String(s.clone()));
        }
    }
}

/// Inserts `items` under `key` unless there are none (left out, as proto3 does).
fn insert_non_empty(out: &mut Obj, key: &str, items: Vec<Value>) {
    if !items.is_empty() {
        out.insert(key.to_string(), Value::Array(items));
    }
}

fn obj(v: &Value) -> Obj {
    v.as_object().cloned().unwrap_or_default()
}

fn array<'a>(o: &'a Obj, name: &str) -> impl Iterator<Item = &'a Value> {
    non_null(field(o, name))
        .and_then(Value::as_array)
        .map(|a| a.iter())
        .into_iter()
        .flatten()
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC 0.3 -> ProtoJSON
// ---------------------------------------------------------------------------------------------

const STATES: &[(&str, &str)] = &[
    ("submitted", "TASK_STATE_SUBMITTED"),
    ("working", "TASK_STATE_WORKING"),
    ("completed", "TASK_STATE_COMPLETED"),
    ("failed", "TASK_STATE_FAILED"),
    ("canceled", "TASK_STATE_CANCELLED"),
    ("input-required", "TASK_STATE_INPUT_REQUIRED"),
    ("rejected", "TASK_STATE_REJECTED"),
    ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
    ("unknown", "TASK_STATE_UNSPECIFIED"),
];

/// A 0.3 part (`kind`-tagged) as a proto `Part`.
pub fn part_to_proto(p: &Value) -> Value {
    let o = obj(p);
    let mut out = Obj::new();
    let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == "text" || (kind.is_empty() && o.contains_key("text")) {
        out.insert(
            "text".into(),
            o.get("text")
                .cloned()
                .unwrap_or(Value::String(String::new())),
        );
    } else if kind == "file" || (kind.is_empty() && o.contains_key("file")) {
        let f = o.get("file").map(obj).unwrap_or_default();
        let mut file = Obj::new();
        if let Some(u) = non_null(f.get("uri")) {
            file.insert("fileWithUri".into(), u.clone());
        } else if let Some(b) = non_null(f.get("bytes")) {
            file.insert("fileWithBytes".into(), b.clone());
        }
        copy_str(&mut file, &f, &["mimeType", "name"]);
        out.insert("file".into(), Value::Object(file));
    } else {
        let data = o.get("data").cloned().unwrap_or_else(|| json!({}));
        out.insert("data".into(), json!({ "data": data }));
    }
    copy(&mut out, &o, &["metadata"]);
    Value::Object(out)
}

/// A 0.3 message as a proto `Message`.
pub fn message_to_proto(m: &Value) -> Value {
    let o = obj(m);
    let mut out = Obj::new();
    copy_str(&mut out, &o, &["messageId", "contextId", "taskId"]);
    let role = match o.get("role").and_then(Value::as_str) {
        Some("agent") => "ROLE_AGENT",
        Some("user") => "ROLE_USER",
        _ => "ROLE_UNSPECIFIED",
    };
    out.insert("role".into(), Value::String(role.into()));
    content_to_proto(&mut out, &o, "content");
    Value::Object(out)
}

/// What a message and an artifact both carry: their parts (as proto parts, under `key`),
/// metadata and extensions (left out when there are none).
fn content_to_proto(out: &mut Obj, o: &Obj, key: &str) {
    let parts = array(o, "parts").map(part_to_proto).collect();
    out.insert(key.to_string(), Value::Array(parts));
    copy(out, o, &["metadata"]);
    insert_non_empty(out, "extensions", array(o, "extensions").cloned().collect());
}

fn status_to_proto(s: &Value) -> Value {
    let o = obj(s);
    let mut out = Obj::new();
    let state = o.get("state").and_then(Value::as_str).unwrap_or("unknown");
    let name = STATES
        .iter()
        .find(|(w, _)| *w == state)
        .map_or("TASK_STATE_UNSPECIFIED", |(_, p)| p);
    out.insert("state".into(), Value::String(name.into()));
    if let Some(m) = non_null(o.get("message")) {
        out.insert("message".into(), message_to_proto(m));
    }
    copy_str(&mut out, &o, &["timestamp"]);
    Value::Object(out)
}

fn artifact_to_proto(a: &Value) -> Value {
    let o = obj(a);
    let mut out = Obj::new();
    copy_str(&mut out, &o, &["artifactId", "name", "description"]);
    content_to_proto(&mut out, &o, "parts");
    Value::Object(out)
}

/// A 0.3 task as a proto `Task`.
pub fn task_to_proto(t: &Value) -> Value {
    let o = obj(t);
    let mut out = Obj::new();
    copy_str(&mut out, &o, &["id", "contextId"]);
    out.insert(
        "status".into(),
        status_to_proto(o.get("status").unwrap_or(&Value::Null)),
    );
    let artifacts = array(&o, "artifacts").map(artifact_to_proto).collect();
    insert_non_empty(&mut out, "artifacts", artifacts);
    let history = array(&o, "history").map(message_to_proto).collect();
    insert_non_empty(&mut out, "history", history);
    copy(&mut out, &o, &["metadata"]);
    Value::Object(out)
}

/// What a status and an artifact update both carry, as proto: the task and context ids, the
/// update's `key` (`status` or `artifact`, converted with `convert`) and metadata.
fn update_to_proto(o: &Obj, key: &str, convert: fn(&Value) -> Value) -> Obj {
    let mut out = Obj::new();
    copy_str(&mut out, o, &["taskId", "contextId"]);
    out.insert(key.into(), convert(o.get(key).unwrap_or(&Value::Null)));
    copy(&mut out, o, &["metadata"]);
    out
}

/// A 0.3 result or stream event (`kind`-tagged) as a proto `StreamResponse` (which is also
/// the shape of `SendMessageResponse` for a task or a message).
pub fn event_to_proto(ev: &Value) -> Value {
    let o = obj(ev);
    match o.get("kind").and_then(Value::as_str) {
        Some("message") => json!({ "message": message_to_proto(ev) }),
        Some("status-update") => {
            let mut out = update_to_proto(&o, "status", status_to_proto);
            if o.get("final").and_then(Value::as_bool) == Some(true) {
                out.insert("final".into(), Value::Bool(true));
            }
            json!({ "statusUpdate": out })
        }
        Some("artifact-update") => {
            let mut out = update_to_proto(&o, "artifact", artifact_to_proto);
            for k in ["append", "lastChunk"] {
                if o.get(k).and_then(Value::as_bool) == Some(true) {
                    out.insert(k.into(), Value::Bool(true));
                }
            }
            json!({ "artifactUpdate": out })
        }
        _ => json!({ "task": task_to_proto(ev) }),
    }
}

fn push_to_proto(p: &Value) -> Value {
    let o = obj(p);
    let mut out = Obj::new();
    copy_str(&mut out, &o, &["id", "url", "token"]);
    if let Some(a) = non_null(o.get("authentication")) {
        let a = obj(a);
        let mut auth = Obj::new();
        copy(&mut auth, &a, &["schemes"]);
        copy_str(&mut auth, &a, &["credentials"]);
        out.insert("authentication".into(), Value::Object(auth));
    }
    Value::Object(out)
}

/// A 0.3 `TaskPushNotificationConfig` (`taskId` + `pushNotificationConfig`) as the proto one
/// (`name` = `tasks/{taskId}/pushNotificationConfigs/{id}`).
pub fn push_config_to_proto(c: &Value) -> Value {
    let o = obj(c);
    let task = o.get("taskId").and_then(Value::as_str).unwrap_or("");
    let pc = o.get("pushNotificationConfig").unwrap_or(&Value::Null);
    let id = pc.get("id").and_then(Value::as_str).unwrap_or("");
    json!({
        "name": format!("tasks/{task}/pushNotificationConfigs/{id}"),
        "pushNotificationConfig": push_to_proto(pc),
    })
}

/// A 0.3 `MessageSendParams` as the proto `SendMessageRequest`.
pub fn send_params_to_proto(p: &Value) -> Value {
    let o = obj(p);
    let mut out = Obj::new();
    out.insert(
        "message".into(),
        message_to_proto(o.get("message").unwrap_or(&Value::Null)),
    );
    if let Some(c) = non_null(o.get("configuration")) {
        let c = obj(c);
        let mut conf = Obj::new();
        copy(&mut conf, &c, &["acceptedOutputModes"]);
        if let Some(p) = non_null(c.get("pushNotificationConfig")) {
            conf.insert("pushNotification".into(), push_to_proto(p));
        }
        copy(&mut conf, &c, &["historyLength", "blocking"]);
        out.insert("configuration".into(), Value::Object(conf));
    }
    copy(&mut out, &o, &["metadata"]);
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// ProtoJSON -> JSON-RPC 0.3
// ---------------------------------------------------------------------------------------------

/// Why a ProtoJSON value could not be read.
fn bad(what: &str) -> String {
    format!("invalid {what}")
}

fn enum_name<'a>(v: Option<&'a Value>, numbers: &[&'a str]) -> Option<&'a str> {
    match v? {
        Value::String(s) => Some(s.as_str()),
        Value::Number(n) => n.as_u64().and_then(|i| numbers.get(i as usize).copied()),
        _ => None,
    }
}

/// A proto `Part` as a 0.3 part.
pub fn part_from_proto(p: &Value) -> Result<Value, String> {
    let o = p.as_object().ok_or_else(|| bad("part: not an object"))?;
    let mut out = Obj::new();
    if let Some(t) = non_null(o.get("text")) {
        out.insert("kind".into(), "text".into());
        out.insert("text".into(), t.clone());
    } else if let Some(f) = non_null(o.get("file")) {
        let f = f.as_object().ok_or_else(|| bad("file part"))?;
        let mut file = Obj::new();
        if let Some(u) = non_null(field(f, "fileWithUri")) {
            file.insert("uri".into(), u.clone());
        } else if let Some(b) = non_null(field(f, "fileWithBytes")) {
            file.insert("bytes".into(), b.clone());
        } else {
            return Err(bad("file part: neither fileWithUri nor fileWithBytes"));
        }
        copy_str(&mut file, f, &["mimeType", "name"]);
        out.insert("kind".into(), "file".into());
        out.insert("file".into(), Value::Object(file));
    } else if let Some(d) = non_null(o.get("data")) {
        let inner = d
            .as_object()
            .and_then(|d| d.get("data"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        if !inner.is_object() {
            return Err(bad("data part: `data.data` must be an object"));
        }
        out.insert("kind".into(), "data".into());
        out.insert("data".into(), inner);
    } else {
        return Err(bad("part: none of text, file, data"));
    }
    copy(&mut out, o, &["metadata"]);
    Ok(Value::Object(out))
}

/// A proto `Message` as a 0.3 message.
pub fn message_from_proto(m: &Value) -> Result<Value, String> {
    let o = m.as_object().ok_or_else(|| bad("message: not an object"))?;
    let mut out = Obj::new();
    out.insert("kind".into(), "message".into());
    copy_str(&mut out, o, &["messageId", "contextId", "taskId"]);
    let role = match enum_name(
        field(o, "role"),
        &["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"],
    ) {
        Some("ROLE_AGENT" | "agent") => "agent",
        Some("ROLE_USER" | "user") => "user",
        // A message must say who sent it.
        None | Some("ROLE_UNSPECIFIED") => return Err("`message.role` is required".into()),
        Some(other) => return Err(format!("invalid message role `{other}`")),
    };
    out.insert("role".into(), role.into());
    // `content` is the proto field; `parts` is read too (a common slip of hand-written peers).
    let parts_field = if field(o, "content").is_some() {
        "content"
    } else {
        "parts"
    };
    content_from_proto(&mut out, o, parts_field)?;
    Ok(Value::Object(out))
}

/// What a proto message and artifact both carry: their parts (read from `parts_field`),
/// metadata and extensions.
fn content_from_proto(out: &mut Obj, o: &Obj, parts_field: &str) -> Result<(), String> {
    let parts = array(o, parts_field)
        .map(part_from_proto)
        .collect::<Result<Vec<_>, _>>()?;
    out.insert("parts".into(), Value::Array(parts));
    copy(out, o, &["metadata", "extensions"]);
    Ok(())
}

fn status_from_proto(s: &Value) -> Result<Value, String> {
    let o = obj(s);
    let mut out = Obj::new();
    let numbers: Vec<&str> = [
        "TASK_STATE_UNSPECIFIED",
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELLED",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_REJECTED",
        "TASK_STATE_AUTH_REQUIRED",
    ]
    .to_vec();
    let name = enum_name(o.get("state"), &numbers).unwrap_or("TASK_STATE_UNSPECIFIED");
    let state = STATES
        .iter()
        .find(|(w, p)| {
            *p == name || *w == name || (name == "TASK_STATE_CANCELED" && *w == "canceled")
        })
        .map_or("unknown", |(w, _)| w);
    out.insert("state".into(), state.into());
    if let Some(m) = non_null(field(&o, "message")).or_else(|| non_null(o.get("update"))) {
        out.insert("message".into(), message_from_proto(m)?);
    }
    copy_str(&mut out, &o, &["timestamp"]);
    Ok(Value::Object(out))
}

fn artifact_from_proto(a: &Value) -> Result<Value, String> {
    let o = a.as_object().ok_or_else(|| bad("artifact"))?;
    let mut out = Obj::new();
    copy_str(&mut out, o, &["artifactId", "name", "description"]);
    content_from_proto(&mut out, o, "parts")?;
    Ok(Value::Object(out))
}

/// A proto `Task` as a 0.3 task.
pub fn task_from_proto(t: &Value) -> Result<Value, String> {
    let o = t.as_object().ok_or_else(|| bad("task: not an object"))?;
    let mut out = Obj::new();
    out.insert("kind".into(), "task".into());
    copy_str(&mut out, o, &["id", "contextId"]);
    out.insert(
        "status".into(),
        status_from_proto(o.get("status").unwrap_or(&Value::Null))?,
    );
    let artifacts = array(o, "artifacts")
        .map(artifact_from_proto)
        .collect::<Result<_, _>>()?;
    insert_non_empty(&mut out, "artifacts", artifacts);
    let history = array(o, "history")
        .map(message_from_proto)
        .collect::<Result<_, _>>()?;
    insert_non_empty(&mut out, "history", history);
    copy(&mut out, o, &["metadata"]);
    Ok(Value::Object(out))
}

/// A proto status or artifact update as the 0.3 event `kind`: the task and context ids, the
/// update's `key` (`status` or `artifact`, converted with `convert`) and metadata.
fn update_from_proto(
    u: &Obj,
    kind: &str,
    key: &str,
    convert: fn(&Value) -> Result<Value, String>,
) -> Result<Obj, String> {
    let mut out = Obj::new();
    out.insert("kind".into(), kind.into());
    copy_str(&mut out, u, &["taskId", "contextId"]);
    out.insert(key.into(), convert(u.get(key).unwrap_or(&Value::Null))?);
    copy(&mut out, u, &["metadata"]);
    Ok(out)
}

/// A proto `StreamResponse` or `SendMessageResponse` (`{"task"}`, `{"message"}`/`{"msg"}`,
/// `{"statusUpdate"}`, `{"artifactUpdate"}`) as a 0.3 kind-tagged event.
pub fn event_from_proto(ev: &Value) -> Result<Value, String> {
    let o = ev
        .as_object()
        .ok_or_else(|| bad("stream response: not an object"))?;
    if let Some(t) = non_null(o.get("task")) {
        return task_from_proto(t);
    }
    if let Some(m) = non_null(o.get("message")).or_else(|| non_null(o.get("msg"))) {
        return message_from_proto(m);
    }
    if let Some(u) = non_null(field(o, "statusUpdate")) {
        let u = u.as_object().ok_or_else(|| bad("statusUpdate"))?;
        let mut out = update_from_proto(u, "status-update", "status", status_from_proto)?;
        out.insert(
            "final".into(),
            Value::Bool(u.get("final").and_then(Value::as_bool).unwrap_or(false)),
        );
        return Ok(Value::Object(out));
    }
    if let Some(u) = non_null(field(o, "artifactUpdate")) {
        let u = u.as_object().ok_or_else(|| bad("artifactUpdate"))?;
        let mut out = update_from_proto(u, "artifact-update", "artifact", artifact_from_proto)?;
        copy(&mut out, u, &["append", "lastChunk"]);
        return Ok(Value::Object(out));
    }
    Err(bad(
        "response: none of task, message, statusUpdate, artifactUpdate",
    ))
}

fn push_from_proto(p: &Value) -> Result<Value, String> {
    let o = p
        .as_object()
        .ok_or_else(|| bad("pushNotificationConfig: not an object"))?;
    let mut out = Obj::new();
    copy_str(&mut out, o, &["id", "url", "token"]);
    if let Some(a) = non_null(o.get("authentication")) {
        let a = obj(a);
        let mut auth = Obj::new();
        auth.insert(
            "schemes".into(),
            non_null(a.get("schemes")).cloned().unwrap_or(json!([])),
        );
        copy_str(&mut auth, &a, &["credentials"]);
        out.insert("authentication".into(), Value::Object(auth));
    }
    Ok(Value::Object(out))
}

/// The task id and config id in a resource name `tasks/{id}[/pushNotificationConfigs/{cid}]`.
pub fn parse_name(name: &str) -> Option<(&str, Option<&str>)> {
    let rest = name.strip_prefix("tasks/")?;
    match rest.split_once('/') {
        None => Some((rest, None)),
        Some((task, tail)) => {
            let cid = tail.strip_prefix("pushNotificationConfigs/")?;
            Some((task, (!cid.is_empty()).then_some(cid)))
        }
    }
}

/// A proto `TaskPushNotificationConfig` as the 0.3 one; `task_id` fills in when the name
/// does not say.
pub fn push_config_from_proto(c: &Value, task_id: &str) -> Result<Value, String> {
    let o = c
        .as_object()
        .ok_or_else(|| bad("TaskPushNotificationConfig: not an object"))?;
    let name = field(o, "name").and_then(Value::as_str).unwrap_or("");
    let (task, cid) = parse_name(name).unwrap_or((task_id, None));
    let mut pc =
        push_from_proto(non_null(field(o, "pushNotificationConfig")).ok_or_else(|| {
            bad("TaskPushNotificationConfig: `pushNotificationConfig` is missing")
        })?)?;
    if let (Some(cid), Some(m)) = (cid, pc.as_object_mut())
        && !m.contains_key("id")
    {
        m.insert("id".into(), Value::String(cid.to_string()));
    }
    Ok(json!({
        "taskId": if task.is_empty() { task_id } else { task },
        "pushNotificationConfig": pc,
    }))
}

/// The body of `POST /v1/tasks/{id}/pushNotificationConfigs` as a 0.3 config: the proto
/// `CreateTaskPushNotificationConfigRequest` (`parent`, `configId`, `config`, as the 0.3
/// Python SDK sends it) or the bare `TaskPushNotificationConfig` (the `body: "config"` of the
/// proto's HTTP annotation).
pub fn create_push_config_from_proto(body: &Value, task_id: &str) -> Result<Value, String> {
    let o = body
        .as_object()
        .ok_or_else(|| bad("push config body: not an object"))?;
    let Some(config) = non_null(o.get("config")) else {
        return push_config_from_proto(body, task_id);
    };
    let mut c = push_config_from_proto(config, task_id)?;
    if let Some(cid) = field(o, "configId").and_then(Value::as_str)
        && !cid.is_empty()
        && let Some(pc) = c
            .get_mut("pushNotificationConfig")
            .and_then(Value::as_object_mut)
        && !pc.contains_key("id")
    {
        pc.insert("id".into(), Value::String(cid.to_string()));
    }
    // The path names the task.
    c["taskId"] = Value::String(task_id.to_string());
    Ok(c)
}

/// A proto `SendMessageRequest` as 0.3 `MessageSendParams`.
pub fn send_params_from_proto(req: &Value) -> Result<Value, String> {
    let o = req
        .as_object()
        .ok_or_else(|| bad("SendMessageRequest: not an object"))?;
    let m = non_null(o.get("message"))
        .or_else(|| non_null(o.get("request")))
        .ok_or_else(|| "`message` is required".to_string())?;
    let mut out = Obj::new();
    out.insert("message".into(), message_from_proto(m)?);
    if let Some(c) = non_null(o.get("configuration")) {
        let c = c
            .as_object()
            .ok_or_else(|| bad("configuration: not an object"))?;
        let mut conf = Obj::new();
        copy(&mut conf, c, &["acceptedOutputModes"]);
        if let Some(p) = non_null(field(c, "pushNotification")) {
            conf.insert("pushNotificationConfig".into(), push_from_proto(p)?);
        }
        copy(&mut conf, c, &["historyLength", "blocking"]);
        out.insert("configuration".into(), Value::Object(conf));
    }
    copy(&mut out, o, &["metadata"]);
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_proto_json() {
        let m = json!({
            "kind": "message", "messageId": "m1", "contextId": "c", "role": "user",
            "parts": [
                {"kind": "text", "text": "hi"},
                {"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png"}},
                {"kind": "data", "data": {"a": 1}},
            ],
            "referenceTaskIds": ["t0"],
        });
        let p = message_to_proto(&m);
        assert_eq!(p["role"], "ROLE_USER");
        assert_eq!(p["content"][1]["file"]["fileWithUri"], "https://x/y.png");
        assert_eq!(p["content"][2]["data"]["data"]["a"], 1);
        assert!(p.get("referenceTaskIds").is_none());
        let back = message_from_proto(&p).unwrap();
        assert_eq!(back["parts"], m["parts"]);
        assert_eq!(back["role"], "user");
    }

    #[test]
    fn proto_field_names_and_enum_numbers_are_read() {
        let p = json!({"message_id": "m", "role": 2, "content": [{"text": "x"}]});
        let m = message_from_proto(&p).unwrap();
        assert_eq!(m["messageId"], "m");
        assert_eq!(m["role"], "agent");
        assert!(message_from_proto(&json!({"messageId": "m", "content": []})).is_err());
        let t = task_from_proto(&json!({"id": "t", "context_id": "c",
            "status": {"state": "TASK_STATE_CANCELLED"}}))
        .unwrap();
        assert_eq!(t["contextId"], "c");
        assert_eq!(t["status"]["state"], "canceled");
    }

    #[test]
    fn events_and_push_configs_map_both_ways() {
        let ev = json!({"kind": "status-update", "taskId": "t", "contextId": "c",
            "status": {"state": "input-required"}, "final": true});
        let p = event_to_proto(&ev);
        assert_eq!(
            p["statusUpdate"]["status"]["state"],
            "TASK_STATE_INPUT_REQUIRED"
        );
        assert_eq!(event_from_proto(&p).unwrap(), ev);
        let c = json!({"taskId": "t", "pushNotificationConfig": {"id": "p", "url": "http://h/"}});
        let p = push_config_to_proto(&c);
        assert_eq!(p["name"], "tasks/t/pushNotificationConfigs/p");
        assert_eq!(push_config_from_proto(&p, "").unwrap(), c);
        let create = json!({"parent": "tasks/t", "configId": "q",
            "config": {"name": "tasks/t/pushNotificationConfigs/", "pushNotificationConfig": {"url": "http://h/"}}});
        let c = create_push_config_from_proto(&create, "t").unwrap();
        assert_eq!(c["pushNotificationConfig"]["id"], "q");
        assert_eq!(
            parse_name("tasks/a/pushNotificationConfigs/b"),
            Some(("a", Some("b")))
        );
    }
}
