//! A served agent's A2A tasks in a SQLite store (`ServeOptions::task_store`) outlive the
//! server: a second server on the same file answers GetTask and ListTasks.

#![cfg(all(feature = "server", feature = "store"))]

use crate::common;
use crate::common::Built as _;

use common::{a2a_rpc as rpc, team_builder};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::{ServeOptions, open_task_store};

async fn serve_once(
    model: &ScriptedModelServer,
    store_url: &str,
    call: impl AsyncFnOnce(&str) -> Value,
) -> Value {
    let agents = team_builder(model).built().await;
    let store = open_task_store(&store_url.parse().expect("url"))
        .await
        .expect("store opens")
        .expect("a database");
    let server = agents
        .a2a_server(&ServeOptions::new().agents(["leaf"]).task_store(store))
        .expect("server");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/leaf", listener.local_addr().unwrap());
    let token = server.shutdown_token();
    let serving = tokio::spawn(server.serve(listener, std::future::pending()));
    let out = call(&base).await;
    token.cancel();
    serving.await.unwrap().unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_tasks_survive_a_new_server_on_the_same_sqlite_file() {
    let model = ScriptedModelServer::start().await;
    model.push(Reply::text("STORED-ANSWER"));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("serve.db").display());
    let first = serve_once(&model, &url, async |base| {
        let msg = json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "look"}]});
        rpc(base, "SendMessage", json!({"message": msg})).await
    })
    .await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
    let id = task["id"].as_str().unwrap().to_string();
    let again = serve_once(&model, &url, async |base| {
        json!({
            "get": rpc(base, "GetTask", json!({"id": id})).await,
            "list": rpc(base, "ListTasks", json!({})).await,
        })
    })
    .await;
    assert_eq!(again["get"]["result"]["id"], id.as_str(), "{again}");
    assert_eq!(
        again["get"]["result"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(
        again["get"].to_string().contains("STORED-ANSWER"),
        "{again}"
    );
    assert_eq!(again["list"]["result"]["totalSize"], 1, "{again}");
}
