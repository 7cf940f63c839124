//! The server writes a task created by a message once, in the state the handler's first event
//! (or its end) gives it, instead of first writing it `submitted`. These tests show that this
//! loses nothing: the final task is in the SQLite file when the reply arrives (and after a
//! SIGKILL), and a streaming client never hears of a task state that is not committed: at each
//! event, another connection to the file reads at least that state.

#![cfg(feature = "a2a")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Sut, event_state, message, response, sse_events, state};
use serde_json::{Value, json};
use subagent_a2a::server::{A2aHandler, A2aServer, AgentInfo, AgentMount, handler_fn};
use subagent_a2a::types::v1;
use subagent_store::Db;
use subagent_store::a2a::A2aStoreOptions;
use tokio::sync::Semaphore;

#[tokio::test(flavor = "multi_thread")]
async fn a_task_that_completes_at_once_is_in_the_file_after_sigkill() {
    let (_dir, store, a) = common::sut_on_new_sqlite().await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let done = a.send(message("tck-complete-task", None), false).await;
        assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
        ids.push(done["id"].as_str().unwrap().to_string());
    }
    a.kill9().await;

    let b = Sut::start(&store, &[]).await;
    for id in &ids {
        let got = b.get(id).await;
        assert_eq!(state(&got), "TASK_STATE_COMPLETED", "{got}");
        assert_eq!(got["history"][0]["role"], "ROLE_USER", "{got}");
    }
    let listed = b.rpc("ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 5, "{listed}");
}

/// Completes at once ("now"), or reports `working` and completes when the test adds a permit.
fn gated(gate: Arc<Semaphore>) -> impl A2aHandler {
    handler_fn(move |req, ev, _| {
        let gate = gate.clone();
        async move {
            if req.text() != "now" {
                ev.working_text("on it").await?;
                gate.acquire().await.expect("gate").forget();
            }
            ev.complete(Some(ev.agent_text("done"))).await?;
            Ok(())
        }
    })
}

/// The committed state of `id`, read through a pool of its own (never the server's). A plain
/// database handle: a second task store on the file would be refused (it is the server's).
async fn committed(reader: &Db, id: &str) -> Option<v1::TaskState> {
    let Db::Sqlite(pool) = reader else {
        panic!("a SQLite file")
    };
    let body: Option<String> = sqlx::query_scalar("SELECT body FROM a2a_tasks WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
        .unwrap();
    body.map(|b| serde_json::from_str::<v1::Task>(&b).unwrap().status.state)
}

fn event_task_id(ev: &Value) -> &str {
    let r = response(ev);
    r["task"]["id"]
        .as_str()
        .or_else(|| r["statusUpdate"]["taskId"].as_str())
        .unwrap_or("")
}

/// How far along a state is, for "the file holds at least this state".
fn rank(state: &str) -> u8 {
    match state {
        "TASK_STATE_SUBMITTED" => 1,
        "TASK_STATE_WORKING" => 2,
        "TASK_STATE_COMPLETED" => 3,
        other => panic!("unexpected state {other}"),
    }
}

fn committed_rank(s: v1::TaskState) -> u8 {
    match s {
        v1::TaskState::Submitted => 1,
        v1::TaskState::Working => 2,
        v1::TaskState::Completed => 3,
        other => panic!("unexpected stored state {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn streaming_and_replies_only_show_committed_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let url = common::sqlite_url(&dir);
    let (_, served) = common::task_store(&url, A2aStoreOptions::default()).await;
    let gate = Arc::new(Semaphore::new(0));
    let mount = AgentMount::new("/", AgentInfo::new("gated", "waits"), gated(gate.clone()))
        .with_store(Arc::new(served.for_agent("")));
    let app = A2aServer::builder().mount(mount).build().unwrap().router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    // Another process's view of the file: a pool of its own sees committed rows only.
    let reader = common::db(&url).await;

    let client = reqwest::Client::new();
    let call = |method: &'static str, text: &'static str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
            "messageId": format!("m-{text}-{method}"), "role": "ROLE_USER",
            "parts": [{"text": text}]}}});
        client
            .post(&base)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
    };

    // A reply: the completed task is committed when the client reads it.
    let reply: Value = call("SendMessage", "now")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = &reply["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{reply}");
    let id = task["id"].as_str().unwrap();
    assert_eq!(committed(&reader, id).await, Some(v1::TaskState::Completed));

    // Streams: at every event, the file already holds that state or a later one.
    for (text, gated) in [("now", false), ("wait", true)] {
        let resp = call("SendStreamingMessage", text).await.unwrap();
        assert_eq!(resp.status(), 200);
        let g = gate.clone();
        let r = reader.clone();
        let mut checked = Vec::new();
        let events = sse_events(resp, Duration::from_secs(20), |ev| {
            let id = event_task_id(ev).to_string();
            let shown = event_state(ev)
                .unwrap_or_else(|| panic!("{ev}"))
                .to_string();
            let stored = tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(committed(&r, &id))
            })
            .unwrap_or_else(|| {
                panic!("a stream showed task {id} ({shown}) before it was committed")
            });
            assert!(
                committed_rank(stored) >= rank(&shown),
                "the stream showed {shown} while the file holds {stored:?}"
            );
            checked.push(shown.clone());
            if gated && shown == "TASK_STATE_WORKING" {
                g.add_permits(1);
            }
            shown == "TASK_STATE_COMPLETED"
        })
        .await;
        assert_eq!(
            checked.first().map(String::as_str),
            Some("TASK_STATE_SUBMITTED"),
            "{events:?}"
        );
        assert_eq!(
            checked.last().map(String::as_str),
            Some("TASK_STATE_COMPLETED"),
            "{events:?}"
        );
        if gated {
            assert!(
                checked.iter().any(|s| s == "TASK_STATE_WORKING"),
                "{events:?}"
            );
        }
    }
    server.abort();
}
