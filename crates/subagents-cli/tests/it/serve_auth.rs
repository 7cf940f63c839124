//! `subagents serve` with credentials: refused beyond loopback without a key, 401 without the
//! key, both header forms accepted, both card versions declare the schemes, our own A2A client
//! authenticates with per-agent metadata, and the key never shows in the server's output.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{free_port, process_in, rt, spawn_serve};
use serde_json::{Value, json};
use subagent_testkit::Reply;
use subagents::spi::{SubagentReference, TaskCall, TaskContext};
use subagents::{Dispatch, Subagents};

const KEY: &str = "s3cret-KEY-for-tests-0123456789";

fn agents_dir(root: &Path) -> PathBuf {
    common::write_agent(
        root,
        "echo",
        "---\nname: echo\ndescription: Answers.\ntools: Read\n---\nAnswer.\n",
    )
}

/// `subagents SUBCOMMAND --listen 0.0.0.0:PORT ARGS...` exits 2 and names the key options.
fn refused_beyond_loopback_without_a_key(subcommand: &str, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = process_in(dir.path())
        .args([subcommand, "--listen", &format!("0.0.0.0:{}", free_port())])
        .args(args)
        .arg("--agents")
        .arg(agents_dir(dir.path()))
        .output();
    let err = common::stderr_on_exit(out, 2);
    common::assert_has(&err, &["--api-key", "--allow-unauthenticated"]);
}

#[test]
fn beyond_loopback_without_a_key_exits_2_naming_api_key() {
    refused_beyond_loopback_without_a_key(
        "serve",
        &["--model", "openai-compatible:m@http://127.0.0.1:9/v1"],
    );
}

fn send(text: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}}
    })
}

#[test]
fn with_a_key_requests_need_it_and_both_header_forms_work() {
    let (rt, model_server) = common::scripted();
    model_server.set_fallback(Some(Reply::text("authenticated answer")));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let serve = spawn_serve(&rt, dir.path(), |cmd| {
        cmd.args(["--model", &model_server.openai_model("m"), "--log", "debug"])
            .arg("--agents")
            .arg(agents_dir(dir.path()))
            .env("SUBAGENTS_API_KEYS", format!("other-key,{KEY}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
    });
    let http = reqwest::Client::new();
    let agent = format!("{}/echo", serve.base);

    rt.block_on(async {
        // Cards are public and declare both schemes, in both versions.
        for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
            let card: Value = http
                .get(format!("{agent}{path}"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let schemes = card["securitySchemes"].as_object().expect("schemes");
            assert!(
                schemes.contains_key("bearer") && schemes.contains_key("apiKey"),
                "{card}"
            );
            assert!(!card.to_string().contains(KEY));
        }
        let body = send("hi");
        // No key: 401 with an A2A-shaped error.
        let r = http.post(&agent).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 401);
        assert!(r.headers().get("www-authenticate").is_some());
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["status"], "UNAUTHENTICATED", "{e}");
        // A wrong key: 401.
        let r = http
            .post(&agent)
            .bearer_auth("wrong")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        // Bearer and X-API-Key both work.
        for req in [
            http.post(&agent).bearer_auth(KEY),
            http.post(&agent).header("X-API-Key", KEY),
        ] {
            let r = req.json(&body).send().await.unwrap();
            assert_eq!(r.status(), 200);
            let v: Value = r.json().await.unwrap();
            assert!(v.to_string().contains("authenticated answer"), "{v}");
        }

        // Our own A2A client with per-agent credentials in the reference's metadata.
        let agents = Subagents::builder()
            .builtin_agents(false)
            .a2a_reference(
                SubagentReference::new(&agent, subagents::a2a::client::KIND)
                    .with_metadata("auth.api_key", KEY),
            )
            .workspace(dir.path())
            .build()
            .await
            .expect("the card resolves");
        match agents
            .dispatch(TaskCall::new("echo", "d", "hello"), &TaskContext::new())
            .await
            .expect("authenticated call")
        {
            Dispatch::Foreground { outcome, .. } => {
                assert_eq!(outcome.text, "authenticated answer")
            }
            other => panic!("{other:?}"),
        }
    });

    // The command as a client: `auth.bearer_env`-style settings from subagents.toml, the
    // secret in the environment.
    let client_dir = tempfile::tempdir().unwrap();
    std::fs::write(
        client_dir.path().join("subagents.toml"),
        format!("a2a = [{{ url = \"{agent}\", bearer_env = \"SERVED_AGENT_TOKEN\" }}]\n"),
    )
    .unwrap();
    let task = |token: Option<&str>| {
        let mut cmd = process_in(client_dir.path());
        // Given with --config: the user's own file (a workspace file found by itself would
        // need approval before it may send a secret of the environment).
        cmd.arg("--config")
            .arg(client_dir.path().join("subagents.toml"));
        cmd.args(["task", "echo", "hello", "--json"]);
        match token {
            Some(t) => cmd.env("SERVED_AGENT_TOKEN", t),
            None => cmd.env("SERVED_AGENT_TOKEN", "not-the-key"),
        };
        cmd.output().expect("runs")
    };
    let ok = task(Some(KEY));
    assert!(ok.status.success(), "{ok:?}");
    let v: Value = serde_json::from_slice(&ok.stdout).expect("JSON");
    assert_eq!(v["text"], "authenticated answer", "{v}");
    // `subagents call` with a key from the environment (the card's API-key header).
    let called = process_in(client_dir.path())
        .args([
            "call",
            &agent,
            "hello",
            "--json",
            "--api-key-env",
            "SERVED_AGENT_KEY",
        ])
        .env("SERVED_AGENT_KEY", KEY)
        .output()
        .expect("runs");
    assert!(called.status.success(), "{called:?}");
    assert!(String::from_utf8_lossy(&called.stdout).contains("authenticated answer"));
    let refused = task(None);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr).to_lowercase();
    assert!(err.contains("401") || err.contains("unauthor"), "{err}");
    assert!(!err.contains(&KEY.to_lowercase()));

    drop(serve);
    let mut logged = String::new();
    std::fs::File::open(&log)
        .unwrap()
        .read_to_string(&mut logged)
        .unwrap();
    assert!(logged.contains("2 key(s)"), "{logged}");
    assert!(
        !logged.contains(KEY),
        "the key never shows in the output: {logged}"
    );
}

#[test]
fn mcp_listen_beyond_loopback_without_a_key_exits_2_naming_api_key() {
    refused_beyond_loopback_without_a_key("mcp", &[]);
}

#[test]
fn mcp_listen_with_a_key_answers_401_without_it_and_serves_with_either_header() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let serve = process_in(dir.path())
        .args(["mcp", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--agents")
        .arg(agents_dir(dir.path()))
        .env("SUBAGENTS_API_KEYS", KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp starts");
    let _serve = common::Killed(serve);
    let http = reqwest::Client::new();
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "auth-test", "version": "1"}
        }
    });
    let post = |key: Option<(&'static str, String)>| {
        let mut r = http
            .post(&url)
            .header("Accept", "application/json, text/event-stream")
            .json(&init);
        if let Some((h, v)) = key {
            r = r.header(h, v);
        }
        r.send()
    };
    rt.block_on(async {
        let mut first = None;
        for _ in 0..400 {
            if let Ok(r) = post(None).await {
                first = Some(r);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let r = first.expect("the MCP server comes up");
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("X-API-Key"),
            "{body}"
        );
        let wrong = post(Some(("Authorization", "Bearer nope".into())))
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401);
        let bearer = post(Some(("Authorization", format!("Bearer {KEY}"))))
            .await
            .unwrap();
        assert_eq!(bearer.status(), 200, "{:?}", bearer.text().await);
        let api_key = post(Some(("X-API-Key", KEY.to_string()))).await.unwrap();
        assert_eq!(api_key.status(), 200);
    });
}
