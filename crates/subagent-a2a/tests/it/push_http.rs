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

use crate::common;

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
    rpc_with(&reqwest::Client::new(), base, method, params).await
}

/// A 1.0 JSON-RPC call through `client`; the answer's JSON.
async fn rpc_with(client: &reqwest::Client, base: &str, method: &str, params: Value) -> Value {
    json_of(
        client
            .post(base)
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})),
    )
    .await
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

/// Each of `urls` is refused as a webhook of `task_id` (invalid params).
async fn assert_webhooks_refused(base: &str, task_id: &str, urls: &[&str]) {
    for url in urls {
        let r = create_config(base, task_id, url).await;
        assert_eq!(r["error"]["code"], -32602, "{url}: {r}");
    }
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
    // The refused addresses: `webhooks_at_private_embedded_and_special_addresses_are_refused`.
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

/// A webhook that accepts connections and never answers; the number accepted so far.
async fn hanging_webhook() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(s);
        }
    });
    (format!("http://{addr}/hook"), accepted)
}

#[tokio::test]
async fn hanging_webhooks_are_bounded_over_the_whole_server() {
    use std::sync::atomic::Ordering::SeqCst;
    let (hook_url, accepted) = hanging_webhook().await;
    let server = A2aServer::builder()
        .push_notifications(true)
        .push_allow_private(true)
        .push_max_deliveries(2)
        .push_max_queued(16)
        .mount(common::agent_at("/a", "a", Default::default()))
        .build()
        .unwrap();
    let srv = common::serve_on(server.clone(), common::bind().await);
    let base = srv.url("/a");
    // Eight tasks, each with a webhook that never answers (inline config): about 4 updates
    // each (delivered in order per task), far more than 2 in flight and 16 queued.
    for i in 0..8 {
        let r = rpc(
            &base,
            "SendMessage",
            json!({"message": {"messageId": format!("h{i}"), "role": "ROLE_USER",
                               "parts": [{"text": "hello"}]},
                   "configuration": {"taskPushNotificationConfig": {"url": hook_url}}}),
        )
        .await;
        assert_eq!(
            r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "the server keeps answering: {r}"
        );
    }
    // Two deliveries hang; the rest wait or were dropped.
    let mut stats = server.push_stats().unwrap();
    for _ in 0..400 {
        stats = server.push_stats().unwrap();
        if stats.in_flight == 2 && accepted.load(SeqCst) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(stats.in_flight, 2, "{stats:?}");
    assert!(stats.queued <= 16, "{stats:?}");
    assert!(
        stats.dropped > 0,
        "updates over the queue are dropped: {stats:?}"
    );
    // A while later there are still only two connections to the webhook (without the cap,
    // each task's delivery opens its own at once).
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        assert_eq!(accepted.load(SeqCst), 2, "{:?}", server.push_stats());
    }
    // The server still answers.
    let r = rpc(
        &base,
        "SendMessage",
        json!({"message": {"messageId": "after", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}),
    )
    .await;
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    drop(srv);
}

#[tokio::test]
async fn push_configs_are_capped_per_task_and_counted_in_the_task_budget() {
    // The per-task cap, configurable: the fourth config is refused, replacing one is not.
    let (base, srv) = serve(
        A2aServer::builder()
            .push_notifications(true)
            .push_max_configs_per_task(3),
    )
    .await;
    let task_id = waiting_task(&base).await;
    for i in 0..3 {
        let r = rpc(
            &base,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": format!("c{i}"), "url": "https://example.com/hook"}),
        )
        .await;
        assert!(r.get("result").is_some(), "{r}");
    }
    let r = rpc(
        &base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": "c3", "url": "https://example.com/hook"}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("at most 3"), "{msg}");
    let again = rpc(
        &base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": "c1", "url": "https://example.com/other"}),
    )
    .await;
    assert!(again.get("result").is_some(), "replacing is fine: {again}");
    drop(srv);

    // The byte budget: a running task's configs (4 KiB tokens) fill a 24 KiB store.
    let (base, srv) = serve(
        A2aServer::builder()
            .push_notifications(true)
            .task_store_max_bytes(24 * 1024),
    )
    .await;
    let r = rpc(
        &base,
        "SendMessage",
        json!({"message": {"messageId": "hold", "role": "ROLE_USER", "parts": [{"text": "hold"}]},
               "configuration": {"returnImmediately": true}}),
    )
    .await;
    let task_id = r["result"]["task"]["id"].as_str().unwrap().to_string();
    let mut refused = None;
    for i in 0..16 {
        let r = rpc(
            &base,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": format!("c{i}"), "url": "https://example.com/hook",
                   "token": "t".repeat(4000)}),
        )
        .await;
        if r.get("error").is_some() {
            refused = Some((i, r));
            break;
        }
    }
    let (i, r) = refused.expect("configs beyond the budget are refused");
    assert!(i < 6, "refused only at config {i}");
    assert_eq!(r["error"]["code"], -32000, "ServerBusy: {r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("budget"),
        "{r}"
    );
    drop(srv);
}

#[tokio::test]
async fn webhooks_at_private_embedded_and_special_addresses_are_refused() {
    let (base, srv) = serve(A2aServer::builder().push_notifications(true)).await;
    let task_id = waiting_task(&base).await;
    assert_webhooks_refused(
        &base,
        &task_id,
        &[
            // loopback, private, link-local (cloud metadata), not HTTP
            "http://127.0.0.1:9/hook",
            "http://localhost/hook",
            "http://[::1]/hook",
            "http://10.0.0.1/hook",
            "http://169.254.169.254/latest/meta-data",
            "ftp://example.com/hook",
            // IPv4-compatible ::127.0.0.1
            "http://[::7f00:1]/",
            // NAT64 of 127.0.0.1, and of 10.0.0.1
            "http://[64:ff9b::7f00:1]/",
            "http://[64:ff9b::a00:1]/",
            // 6to4 of 127.0.0.1, and of 192.168.0.1
            "http://[2002:7f00:1::]/",
            "http://[2002:c0a8:1::]/",
            // benchmarking 198.18.0.0/15
            "http://198.18.0.1/",
            "http://198.19.255.1/",
            // localhost with the trailing dot, and its subdomains
            "http://localhost./",
            "http://LOCALHOST./hook",
            "http://api.localhost/",
            // 127.0.0.1 spelled in hex
            "http://0x7f.1/",
        ],
    )
    .await;
    // Public addresses in the same forms are fine.
    for url in [
        "http://[64:ff9b::808:808]/",
        "http://[2002:808:808::]/",
        "http://198.20.0.1/",
    ] {
        let r = create_config(&base, &task_id, url).await;
        assert!(r.get("result").is_some(), "{url}: {r}");
    }
    drop(srv);
}

/// Set in the environment of the child process [`push_ignores_proxy_settings`] runs.
const PROXY_CHILD: &str = "SUBAGENT_A2A_PUSH_PROXY_CHILD";

#[tokio::test]
async fn push_ignores_proxy_settings() {
    // A "proxy" that records connections; the child process gets it in every proxy variable
    // (environment variables are process-wide, so the server runs in a process of its own:
    // this test binary, running `push_http::proxy_child` only).
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = proxy.accept().await {
            h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let mut cmd = tokio::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "push_http::proxy_child",
        "--exact",
        "--ignored",
        "--nocapture",
    ])
    .env(PROXY_CHILD, "1")
    .env_remove("NO_PROXY")
    .env_remove("no_proxy");
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env(var, &proxy_url);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the child ends")
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed: {text}");
    assert!(text.contains("1 passed"), "the child ran its test: {text}");
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the push client went through the proxy"
    );
}

/// The server side of [`push_ignores_proxy_settings`] (run only by it, in its own process):
/// a delivery reaches the webhook directly.
#[tokio::test]
#[ignore = "run by push_ignores_proxy_settings in a process with proxy variables set"]
async fn proxy_child() {
    if std::env::var_os(PROXY_CHILD).is_none() {
        return;
    }
    let (hook_url, seen) = webhook(0).await;
    let (base, srv) = serve_pushing_to_loopback().await;
    // This test's own client must not use the proxy either.
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let params = json!({
        "message": {"messageId": "p1", "role": "ROLE_USER", "parts": [{"text": "hello"}]},
        "configuration": {"taskPushNotificationConfig": {"url": hook_url}}});
    let r = rpc_with(&c, &base, "SendMessage", params).await;
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    let got = wait_until(&seen, |got| {
        got.iter()
            .any(|d| state(&d.2) == Some("TASK_STATE_COMPLETED"))
    })
    .await;
    assert!(
        got.iter()
            .any(|d| state(&d.2) == Some("TASK_STATE_COMPLETED")),
        "the webhook got the updates directly: {got:?}"
    );
    drop(srv);
}

/// A store of tasks only: it implements `TaskStore` and nothing else.
struct TasksOnly(subagent_a2a::server::InMemoryTaskStore);

#[subagent_spi::async_trait]
impl subagent_a2a::server::TaskStore for TasksOnly {
    async fn save(
        &self,
        task: subagent_a2a::types::v1::Task,
    ) -> Result<(), subagent_a2a::server::StoreError> {
        self.0.save(task).await
    }
    async fn get(
        &self,
        task_id: &str,
    ) -> Result<Option<subagent_a2a::types::v1::Task>, subagent_a2a::server::StoreError> {
        self.0.get(task_id).await
    }
    async fn list(
        &self,
        filter: &subagent_a2a::server::TaskFilter,
        offset: usize,
        limit: usize,
    ) -> Result<subagent_a2a::server::TaskPage, subagent_a2a::server::StoreError> {
        self.0.list(filter, offset, limit).await
    }
}

#[tokio::test]
async fn a_store_keeping_no_push_configs_offers_no_push_notifications() {
    // Push notifications on, but the agent's store keeps tasks only: the card must not
    // promise push notifications, and the config methods refuse (PushNotificationNotSupported).
    let mount = common::agent_at("/a", "a", Default::default())
        .with_store(
            Arc::new(TasksOnly(Default::default())) as Arc<dyn subagent_a2a::server::TaskStore>
        );
    let srv = common::serve(
        A2aServer::builder()
            .push_notifications(true)
            .push_allow_private(true)
            .mount(mount),
    )
    .await;
    let base = srv.url("/a");
    let card: Value = common::get_json(&format!("{base}/.well-known/agent-card.json")).await;
    assert_eq!(card["capabilities"]["pushNotifications"], false, "{card}");
    let task_id = waiting_task(&base).await;
    let r = create_config(&base, &task_id, "https://example.com/hook").await;
    assert_eq!(r["error"]["code"], -32003, "{r}");
    // The inline config of a new message is refused the same way.
    let msg = json!({"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "ask"}]});
    let conf = json!({"taskPushNotificationConfig": {"url": "https://example.com/hook"}});
    let r = rpc(
        &base,
        "SendMessage",
        json!({"message": msg, "configuration": conf}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32003, "{r}");
    drop(srv);
}
