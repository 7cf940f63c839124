//! Push notifications over real sockets: configs through JSON-RPC (1.0 and 0.3) and
//! HTTP+JSON, delivery to a webhook (an axum server on 127.0.0.1) with the config's
//! authentication, 1.0 `StreamResponse` and 0.3 task payloads, retries after a 503, and the
//! refusal of loopback webhooks unless allowed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use subagent_a2a::server::{A2aServer, A2aServerBuilder};

mod common;

use common::{BINDINGS, Srv, client, json_of, status_of};

/// What the webhook received: (authorization, token, body).
type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;

#[derive(Clone)]
struct Hook {
    seen: Seen,
    /// Answer 503 to this many first requests.
    fail_first: Arc<Mutex<usize>>,
}

async fn hook(State(h): State<Hook>, headers: HeaderMap, body: String) -> StatusCode {
    {
        let mut f = h.fail_first.lock().unwrap();
        if *f > 0 {
            *f -= 1;
            return StatusCode::SERVICE_UNAVAILABLE;
        }
    }
    let get = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    h.seen
        .lock()
        .unwrap()
        .push((get("authorization"), get("x-a2a-notification-token"), v));
    StatusCode::OK
}

async fn webhook(fail_first: usize) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let state = Hook {
        seen: seen.clone(),
        fail_first: Arc::new(Mutex::new(fail_first)),
    };
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(state);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    (format!("http://{addr}/hook"), seen)
}

/// Serves `builder` with the test agent at `/a`; the agent's URL and the server.
async fn serve(builder: A2aServerBuilder) -> (String, Srv) {
    let srv = common::serve(builder.mount(common::agent_at("/a", "a", Default::default()))).await;
    (srv.url("/a"), srv)
}

async fn rpc(base: &str, method: &str, params: Value) -> Value {
    reqwest::Client::new()
        .post(base)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The deliveries so far, once `done` holds for them (or after 20 s, for the asserts to say
/// what came).
async fn wait_until(
    seen: &Seen,
    done: impl Fn(&[(String, String, Value)]) -> bool,
) -> Vec<(String, String, Value)> {
    for _ in 0..800 {
        if done(&seen.lock().unwrap()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    seen.lock().unwrap().clone()
}

fn state(v: &Value) -> Option<&str> {
    v.pointer("/statusUpdate/status/state")
        .or_else(|| v.pointer("/task/status/state"))
        .and_then(Value::as_str)
}

/// Serves the test agent with push notifications on, loopback webhooks allowed.
async fn serve_pushing_to_loopback() -> (String, Srv) {
    serve(
        A2aServer::builder()
            .push_notifications(true)
            .push_allow_private(true),
    )
    .await
}

/// Sends `ask` over JSON-RPC 1.0; the id of the task, which waits for input.
async fn waiting_task(base: &str) -> String {
    let msg = json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "ask"}]});
    let r = rpc(base, "SendMessage", json!({ "message": msg })).await;
    r["result"]["task"]["id"].as_str().unwrap().to_string()
}

/// `CreateTaskPushNotificationConfig` over JSON-RPC 1.0 for `task_id` and `url`.
async fn create_config(base: &str, task_id: &str, url: &str) -> Value {
    let params = json!({"taskId": task_id, "url": url});
    rpc(base, "CreateTaskPushNotificationConfig", params).await
}

#[tokio::test]
async fn v1_configs_and_delivery_with_authentication() {
    let (hook_url, seen) = webhook(1).await;
    let (base, srv) = serve_pushing_to_loopback().await;
    let card: Value =
        json_of(reqwest::Client::new().get(format!("{base}/.well-known/agent-card.json"))).await;
    assert_eq!(card["capabilities"]["pushNotifications"], true);

    // A task waiting for input, a webhook for it, then the message that completes it.
    let task_id = waiting_task(&base).await;
    let created = rpc(
        &base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task_id, "url": hook_url, "token": "tok",
               "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}),
    )
    .await;
    let config_id = created["result"]["id"].as_str().unwrap().to_string();
    assert_eq!(created["result"]["taskId"], task_id.as_str());
    let got = rpc(
        &base,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": config_id}),
    )
    .await;
    assert_eq!(got["result"]["url"], hook_url.as_str());
    let listed = rpc(
        &base,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task_id}),
    )
    .await;
    assert_eq!(listed["result"]["configs"].as_array().unwrap().len(), 1);

    rpc(
        &base,
        "SendMessage",
        json!({"message": {"messageId": "m2", "role": "ROLE_USER", "taskId": task_id,
                            "parts": [{"text": "go on"}]}}),
    )
    .await;
    // working, artifact, completed (the first attempt got a 503 and was retried).
    // Wait for the final state, not a count: a retried delivery may come in late.
    let got = wait_until(&seen, |got| {
        got.len() >= 3
            && got
                .last()
                .is_some_and(|d| state(&d.2) == Some("TASK_STATE_COMPLETED"))
    })
    .await;
    assert!(got.len() >= 3, "deliveries: {got:?}");
    for (auth, token, _) in &got {
        assert_eq!(auth, "Bearer s3cret");
        assert_eq!(token, "tok");
    }
    assert_eq!(state(&got[0].2), Some("TASK_STATE_WORKING"));
    assert!(
        got.iter()
            .any(|(_, _, v)| v.get("artifactUpdate").is_some())
    );
    assert_eq!(state(&got.last().unwrap().2), Some("TASK_STATE_COMPLETED"));

    // Delete, twice (idempotent), then it is gone.
    for _ in 0..2 {
        let d = rpc(
            &base,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": config_id}),
        )
        .await;
        assert!(d.get("error").is_none(), "{d}");
    }
    let gone = rpc(
        &base,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": config_id}),
    )
    .await;
    assert_eq!(gone["error"]["code"], -32001);
    drop(srv);
}

#[tokio::test]
async fn inline_config_over_http_json_and_03_task_payloads() {
    let (hook_url, seen) = webhook(0).await;
    let (base, srv) = serve_pushing_to_loopback().await;
    let c = reqwest::Client::new();
    // HTTP+JSON: the config inline in the SendMessage configuration.
    let r: Value = json_of(c
        .post(format!("{base}/message:send"))
        .json(&json!({"message": {"messageId": "h1", "role": "ROLE_USER", "parts": [{"text": "ask"}]},
                      "configuration": {"taskPushNotificationConfig": {"id": "c1", "url": hook_url}}}))).await;
    let task_id = r["task"]["id"].as_str().unwrap().to_string();
    let listed: Value =
        json_of(c.get(format!("{base}/tasks/{task_id}/pushNotificationConfigs"))).await;
    assert_eq!(listed["configs"][0]["id"], "c1");
    assert_eq!(
        status_of(c.get(format!("{base}/tasks/{task_id}/pushNotificationConfigs/c1"))).await,
        200
    );
    assert_eq!(
        status_of(c.delete(format!("{base}/tasks/{task_id}/pushNotificationConfigs/c1"))).await,
        200
    );

    // 0.3: a task created over 0.3, a config set over 0.3: the webhook gets task snapshots.
    let r: Value = json_of(c.post(&base).json(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
            "message": {"kind": "message", "messageId": "o1", "role": "user",
                        "parts": [{"kind": "text", "text": "ask"}]}}}),
    ))
    .await;
    let t03 = r["result"]["id"].as_str().unwrap().to_string();
    let set: Value = json_of(c
        .post(&base)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/pushNotificationConfig/set",
            "params": {"taskId": t03, "pushNotificationConfig": {"url": hook_url, "token": "t03"}}}))).await;
    assert_eq!(set["result"]["taskId"], t03.as_str());
    let list: Value = json_of(c.post(&base).json(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/pushNotificationConfig/list",
            "params": {"id": t03}}),
    ))
    .await;
    assert_eq!(list["result"].as_array().unwrap().len(), 1);
    c.post(&base)
        .json(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "message/send", "params": {
            "message": {"kind": "message", "messageId": "o2", "role": "user", "taskId": t03,
                        "parts": [{"kind": "text", "text": "go on"}]}}}),
        )
        .send()
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..200 {
        got = seen.lock().unwrap().clone();
        if got
            .iter()
            .any(|(_, _, v)| v["status"]["state"] == "completed")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let ours: Vec<&Value> = got
        .iter()
        .filter(|(_, token, _)| token == "t03")
        .map(|(_, _, v)| v)
        .collect();
    let last = ours.last().expect("deliveries for the 0.3 task");
    assert_eq!(last["kind"], "task", "0.3 payloads are tasks: {last}");
    assert_eq!(last["id"], t03.as_str());
    assert_eq!(last["status"]["state"], "completed");
    assert!(ours.iter().all(|v| v["kind"] == "task"));
    drop(srv);
}

#[tokio::test]
async fn loopback_webhooks_are_refused_unless_allowed_and_off_by_default() {
    // Push off (the default): the card says so and the methods refuse.
    let (base, srv) = serve(A2aServer::builder()).await;
    let r = create_config(&base, "x", "https://example.com/hook").await;
    assert_eq!(r["error"]["code"], -32003);
    drop(srv);

    let (base, srv) = serve(A2aServer::builder().push_notifications(true)).await;
    let task_id = waiting_task(&base).await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://10.0.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "ftp://example.com/hook",
    ] {
        let r = create_config(&base, &task_id, url).await;
        assert_eq!(r["error"]["code"], -32602, "{url}: {r}");
    }
    let ok = create_config(&base, &task_id, "https://example.com/hook").await;
    assert!(ok.get("result").is_some(), "{ok}");
    let missing = create_config(&base, "no-such-task", "https://example.com/hook").await;
    assert_eq!(missing["error"]["code"], -32001);
    drop(srv);
}

#[tokio::test]
async fn client_calls_manage_configs_on_every_binding() {
    use subagent_a2a::types::v1;
    let (base, srv) = serve(A2aServer::builder().push_notifications(true)).await;
    for (binding, version) in BINDINGS {
        let client = client(&base, (binding, version), Default::default());
        let mut m = v1::Message::new(v1::Role::User, "c-m", vec![v1::Part::text("ask")]);
        m.message_id = format!("m-{binding:?}-{version}");
        let r = client
            .send_message(v1::SendMessageRequest::new(m))
            .await
            .unwrap();
        let v1::SendMessageResponse::Task(t) = r else {
            panic!("a task")
        };
        let config = common::push_config("cfg", "https://example.com/hook", "tok");
        let made = client.create_push_config(&t.id, config).await.unwrap();
        assert_eq!(made.id.as_deref(), Some("cfg"), "{binding:?} {version}");
        let got = client.get_push_config(&t.id, "cfg").await.unwrap();
        assert_eq!(got.url, "https://example.com/hook");
        assert_eq!(client.list_push_configs(&t.id).await.unwrap().len(), 1);
        client.delete_push_config(&t.id, "cfg").await.unwrap();
        assert!(client.list_push_configs(&t.id).await.unwrap().is_empty());
        assert!(client.get_push_config(&t.id, "cfg").await.is_err());
    }
    drop(srv);
}
