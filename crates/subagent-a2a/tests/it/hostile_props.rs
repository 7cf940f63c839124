//! Property tests: whatever a client sends, the JSON-RPC envelope parser, the HTTP+JSON body
//! parser and part / message parsing answer with errors, never panics; garbage is always an
//! error. The server is driven in-process through its real router (no sockets: hundreds of
//! cases must stay fast). The SSE decoder's properties live beside it (`client/sse.rs`).
//!
//! Case counts are bounded (`CASES`) so the suite takes a few seconds in debug builds.

use std::sync::OnceLock;

use axum::body::Body;
use proptest::prelude::*;
use serde_json::{Value, json};
use subagent_a2a::server::{A2aServer, AgentInfo, AgentMount};
use subagent_a2a::types::{v1, v03};
use tower::ServiceExt;

const CASES: u32 = 256;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

use crate::common;

use common::replier;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

fn router() -> axum::Router {
    static SERVER: OnceLock<A2aServer> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            A2aServer::builder()
                .max_body_bytes(64 * 1024)
                .mount(AgentMount::new(
                    "/a",
                    AgentInfo::new("a", "props"),
                    replier(),
                ))
                .build()
                .expect("server")
        })
        .router()
}

/// POSTs `body` to `path`; the status and the body (JSON when there is one).
fn post(path: &str, body: Vec<u8>, a2a_version: bool) -> (u16, Option<Value>) {
    runtime().block_on(async {
        let mut req = http::Request::post(path).header("content-type", "application/json");
        if a2a_version {
            req = req.header("A2A-Version", "1.0");
        }
        let resp = router()
            .oneshot(req.body(Body::from(body)).expect("request"))
            .await
            .expect("infallible");
        let status = resp.status().as_u16();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        let v = (!bytes.is_empty()).then(|| {
            serde_json::from_slice::<Value>(&bytes).unwrap_or_else(|e| {
                panic!(
                    "answer is not JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        });
        (status, v)
    })
}

fn is_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// Keys that A2A objects use.
const KEYS: &[&str] = &[
    "jsonrpc",
    "id",
    "method",
    "params",
    "message",
    "messageId",
    "role",
    "parts",
    "text",
    "raw",
    "url",
    "data",
    "kind",
    "file",
    "bytes",
];

/// Values that A2A methods and objects use.
const WORDS: &[&str] = &[
    "2.0",
    "SendMessage",
    "GetTask",
    "message/send",
    "ROLE_USER",
    "user",
    "QUJD",
    "!!!",
];

/// One of `words`, each as likely as the others.
fn words(words: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(words).prop_map(str::to_string)
}

/// Any JSON value, nested a few levels, with keys that A2A objects use.
fn any_json() -> impl Strategy<Value = Value> {
    // Weighted so that each word is as likely as the random key.
    let key = prop_oneof![
        KEYS.len() as u32 => words(KEYS),
        1 => "[a-zA-Z_]{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            WORDS.len() as u32 => words(WORDS),
            1 => ".{0,12}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A JSON-RPC request whose parts vary (valid or not).
fn envelope() -> impl Strategy<Value = Value> {
    let method = prop_oneof![
        Just(json!("SendMessage")),
        Just(json!("GetTask")),
        Just(json!("ListTasks")),
        Just(json!("CancelTask")),
        Just(json!("message/send")),
        Just(json!("tasks/get")),
        Just(json!(7)),
        Just(Value::Null),
        ".{0,10}".prop_map(Value::String),
    ];
    let id = prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        any::<i64>().prop_map(|i| Some(json!(i))),
        ".{0,6}".prop_map(|s| Some(json!(s))),
        Just(Some(json!(1.5))),
        Just(Some(json!([1]))),
    ];
    let jsonrpc = prop_oneof![
        Just(Some(json!("2.0"))),
        Just(Some(json!("1.0"))),
        Just(None)
    ];
    (jsonrpc, id, method, prop::option::of(any_json())).prop_map(|(j, id, m, params)| {
        let mut o = serde_json::Map::new();
        if let Some(j) = j {
            o.insert("jsonrpc".into(), j);
        }
        if let Some(id) = id {
            o.insert("id".into(), id);
        }
        o.insert("method".into(), m);
        if let Some(p) = params {
            o.insert("params".into(), p);
        }
        Value::Object(o)
    })
}

fn check_rpc_answer(status: u16, answer: Option<Value>, request: &[u8]) {
    match answer {
        None => assert_eq!(status, 204, "no body is only for notifications"),
        Some(v) => {
            assert!(
                [200, 413, 503].contains(&status),
                "status {status} for {}",
                String::from_utf8_lossy(request)
            );
            assert_eq!(v["jsonrpc"], "2.0", "{v}");
            assert!(v.get("id").is_some(), "{v}");
            assert!(
                v.get("result").is_some() != v.get("error").is_some(),
                "exactly one of result / error: {v}"
            );
            if let Some(code) = v.pointer("/error/code") {
                assert!(code.is_i64(), "{v}");
                if !is_json(request) {
                    assert_eq!(code, -32700, "garbage is a parse error: {v}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn jsonrpc_envelope_never_panics_on_bytes(body in prop::collection::vec(any::<u8>(), 0..256)) {
        let (status, answer) = post("/a", body.clone(), true);
        check_rpc_answer(status, answer, &body);
    }

    #[test]
    fn jsonrpc_envelope_never_panics_on_text(body in ".{0,200}") {
        let (status, answer) = post("/a", body.clone().into_bytes(), false);
        check_rpc_answer(status, answer, body.as_bytes());
    }

    #[test]
    fn jsonrpc_envelope_answers_every_shape(req in envelope()) {
        let body = serde_json::to_vec(&req).unwrap();
        let (status, answer) = post("/a", body.clone(), true);
        // Without an `id` member a well-formed call is a notification: 204, no body.
        let notification = req.get("id").is_none()
            && req["jsonrpc"] == "2.0"
            && req["method"].is_string();
        // A 0.3 call (a method name with `/`) that fails is answered even so, with
        // `"id": null` (A2A 0.3 requires `id`; its SDKs answer such calls).
        let v03 = req["method"].as_str().is_some_and(|m| m.contains('/'));
        if notification && !(v03 && answer.is_some()) {
            prop_assert_eq!(status, 204);
            prop_assert!(answer.is_none());
        } else if notification {
            let v = answer.expect("an answer");
            prop_assert!(v.get("error").is_some(), "{}", v);
            prop_assert_eq!(&v["id"], &Value::Null);
        } else {
            check_rpc_answer(status, answer, &body);
        }
    }

    #[test]
    fn jsonrpc_batches_are_one_error(items in prop::collection::vec(envelope(), 0..8)) {
        let body = serde_json::to_vec(&items).unwrap();
        let (status, answer) = post("/a", body, true);
        prop_assert_eq!(status, 200);
        let v = answer.expect("an answer");
        prop_assert_eq!(&v["error"]["code"], &json!(-32600));
        prop_assert_eq!(&v["id"], &Value::Null);
    }

    #[test]
    fn http_json_bodies_never_panic(body in prop::collection::vec(any::<u8>(), 0..256)) {
        let (status, answer) = post("/a/message:send", body.clone(), false);
        let v = answer.expect("an answer");
        if status == 200 {
            prop_assert!(is_json(&body));
        } else {
            prop_assert!((400..600).contains(&status), "status {}", status);
            prop_assert_eq!(&v["error"]["code"], &json!(status));
            prop_assert!(v["error"]["message"].is_string());
        }
    }

    #[test]
    fn http_json_send_bodies_of_any_shape(message in any_json()) {
        let body = serde_json::to_vec(&json!({"message": message})).unwrap();
        let (status, answer) = post("/a/message:send", body, false);
        let v = answer.expect("an answer");
        prop_assert!(status == 200 || (400..600).contains(&status));
        if status != 200 {
            prop_assert_eq!(&v["error"]["code"], &json!(status));
        }
    }

    #[test]
    fn parts_and_messages_parse_or_fail_cleanly(v in any_json()) {
        let text = v.to_string();
        let _ = serde_json::from_str::<v1::Part>(&text);
        let _ = serde_json::from_str::<v1::Message>(&text);
        let _ = serde_json::from_str::<v1::SendMessageRequest>(&text);
        let _ = serde_json::from_str::<v03::Part>(&text);
        let _ = serde_json::from_str::<v03::Message>(&text);
        // A part that parses holds content the checks allow.
        if let Ok(p) = serde_json::from_str::<v1::Part>(&text) {
            match &p.content {
                v1::PartContent::Raw(r) => prop_assert!(subagent_a2a::types::check_base64(r).is_ok()),
                v1::PartContent::Url(u) => prop_assert!(!u.trim().is_empty()),
                v1::PartContent::Data(d) => prop_assert!(!d.is_null()),
                v1::PartContent::Text(_) => {}
            }
            // And it survives a round trip.
            let again: v1::Part = serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
            prop_assert_eq!(again, p);
        }
    }

    #[test]
    fn garbage_is_never_a_part_or_message(text in ".{0,64}") {
        prop_assume!(!is_json(text.as_bytes()));
        prop_assert!(serde_json::from_str::<v1::Part>(&text).is_err());
        prop_assert!(serde_json::from_str::<v1::Message>(&text).is_err());
        prop_assert!(serde_json::from_str::<v03::Message>(&text).is_err());
    }

    #[test]
    fn raw_parts_accept_exactly_base64(bytes in prop::collection::vec(any::<u8>(), 0..48), junk in "[^A-Za-z0-9+/=_-]") {
        // Encode with the standard alphabet; every encoding parses.
        const ALPHA: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut enc = String::new();
        for c in bytes.chunks(3) {
            let n = c.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..=c.len() {
                enc.push(ALPHA[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
            for _ in c.len()..3 {
                enc.push('=');
            }
        }
        let ok = json!({"raw": enc}).to_string();
        prop_assert!(serde_json::from_str::<v1::Part>(&ok).is_ok(), "{}", ok);
        // A foreign character anywhere makes it an error naming `raw`.
        let at = enc.len() / 2;
        let bad = format!("{}{}{}", &enc[..at], junk, &enc[at..]);
        let e = serde_json::from_str::<v1::Part>(&json!({"raw": bad}).to_string()).unwrap_err();
        prop_assert!(e.to_string().contains("`raw` is not valid base64"), "{}", e);
    }
}
