//! `subagents serve` options for A2A peers and push: `--legacy-card` serves the 0.3 card to
//! stock 0.3 clients (no `A2A-Version` header) at `.well-known/agent-card.json`, and `--push`
//! offers push notifications with the private-address guard on.

use crate::common;

use std::path::{Path, PathBuf};

use common::{rt, spawn_serve};
use serde_json::{Value, json};
use subagent_testkit::Reply;

fn agents_dir(root: &Path) -> PathBuf {
    common::write_agent(
        root,
        "echo",
        "---\nname: echo\ndescription: Answers.\ntools: Read\n---\nAnswer.\n",
    )
}

/// The card at `url`, fetched with `A2A-Version: version` when given.
async fn card(url: &str, version: Option<&str>) -> Value {
    let mut r = reqwest::Client::new().get(url);
    if let Some(v) = version {
        r = r.header("A2A-Version", v);
    }
    r.send().await.unwrap().json().await.unwrap()
}

#[test]
fn legacy_card_serves_the_03_card_to_requests_without_a_version() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let agents = agents_dir(dir.path());
    let model = "openai-compatible:m@http://127.0.0.1:9/v1";
    // Without the flag (the default): the 1.0 card for every request.
    let plain = spawn_serve(&rt, dir.path(), |cmd| {
        cmd.args(["--model", model]).arg("--agents").arg(&agents);
    });
    let url = format!("{}/echo/.well-known/agent-card.json", plain.base);
    let c = rt.block_on(card(&url, None));
    assert!(c.get("protocolVersion").is_none(), "a 1.0 card: {c}");
    assert!(c["supportedInterfaces"].is_array(), "{c}");
    drop(plain);

    // With --legacy-card: what a stock 0.3 client fetches is a 0.3 card.
    let legacy = spawn_serve(&rt, dir.path(), |cmd| {
        cmd.args(["--model", model, "--legacy-card"])
            .arg("--agents")
            .arg(&agents);
    });
    let url = format!("{}/echo/.well-known/agent-card.json", legacy.base);
    let c = rt.block_on(card(&url, None));
    assert_eq!(c["protocolVersion"], "0.3.0", "a 0.3 card: {c}");
    assert_eq!(c["url"], format!("{}/echo", legacy.base), "{c}");
    assert_eq!(c["preferredTransport"], "JSONRPC", "{c}");
    // A 1.0 client that says so still gets the 1.0 card.
    let c = rt.block_on(card(&url, Some("1.0")));
    assert!(c.get("protocolVersion").is_none(), "a 1.0 card: {c}");
    assert!(c["supportedInterfaces"].is_array(), "{c}");
}

#[test]
fn push_is_offered_with_the_private_address_guard_on() {
    let (rt, model_server) = common::scripted();
    model_server.set_fallback(Some(Reply::text("done")));
    let dir = tempfile::tempdir().unwrap();
    let serve = spawn_serve(&rt, dir.path(), |cmd| {
        cmd.args(["--model", &model_server.openai_model("m"), "--push"])
            .args(["--push-max-configs", "2"])
            .arg("--agents")
            .arg(agents_dir(dir.path()));
    });
    let agent = format!("{}/echo", serve.base);
    rt.block_on(async {
        let c = card(&format!("{agent}/.well-known/agent-card.json"), Some("1.0")).await;
        assert_eq!(c["capabilities"]["pushNotifications"], true, "{c}");
        let http = reqwest::Client::new();
        let rpc = |method: &str, params: Value| {
            http.post(&agent)
                .header("A2A-Version", "1.0")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
                .send()
        };
        let r: Value = rpc(
            "SendMessage",
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
        )
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        let task_id = r["result"]["task"]["id"].as_str().expect("a task").to_string();
        // Loopback, private and embedded-loopback webhooks are refused at registration.
        for url in [
            "http://127.0.0.1:9/hook",
            "http://localhost./hook",
            "http://[::ffff:10.0.0.1]/hook",
            "http://[64:ff9b::7f00:1]/hook",
        ] {
            let r: Value = rpc(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task_id, "url": url}),
            )
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
            assert_eq!(r["error"]["code"], -32602, "{url}: {r}");
        }
        // A public one is accepted, up to --push-max-configs per task.
        for (i, ok) in [(0, true), (1, true), (2, false)] {
            let r: Value = rpc(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task_id, "id": format!("c{i}"), "url": "https://example.com/hook"}),
            )
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
            assert_eq!(r.get("result").is_some(), ok, "config {i}: {r}");
        }
    });
}
