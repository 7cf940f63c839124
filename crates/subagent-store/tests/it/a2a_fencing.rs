//! Fencing between server processes sharing a task store: every task state change is a
//! compare-and-set on the task's version, so
//!
//! - of several messages continuing one `input-required` task through different replicas,
//!   exactly one continues it and the others are refused at once (UnsupportedOperation,
//!   -32004);
//! - a replica that stalled past its lease cannot overwrite the state another replica wrote
//!   meanwhile (its write is refused and it stops working on the task);
//! - a handler waiting in its run on one replica for an answer that another replica took stops
//!   waiting.
//!
//! Two real SUT processes on one PostgreSQL database (`#[ignore]`d: `.ci/run` starts one), two
//! servers (two engines) on one SQLite file, and two store handles at the store's own API.

#![cfg(feature = "a2a")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Sut, fresh_postgres_db, message, state};
use serde_json::{Value, json};
use subagent_a2a::server::{A2aHandler, A2aServer, AgentInfo, AgentMount, handler_fn};
use subagent_a2a::task_store::{StoreError as A2aStoreError, TaskStore};
use subagent_a2a::types::v1;
use subagent_store::a2a::{A2aStoreOptions, INTERRUPTED_BY_LEASE, SqlTaskStore};

/// Racing rounds per test.
const ROUNDS: usize = 30;

/// What one continuation got.
#[derive(Debug)]
enum Outcome {
    /// It continued the task (the reply is the completed task).
    Continued,
    /// Refused with UnsupportedOperation.
    Refused,
}

fn outcome(resp: &Value) -> Outcome {
    if state(&resp["result"]["task"]) == "TASK_STATE_COMPLETED" {
        Outcome::Continued
    } else if resp["error"]["code"] == -32004 {
        Outcome::Refused
    } else {
        panic!("a continuation got neither the task nor UnsupportedOperation: {resp}")
    }
}

/// The user messages in a task's history after the first (the continuations it took).
fn continuations(task: &Value) -> Vec<String> {
    task["history"]
        .as_array()
        .map(|h| {
            h.iter()
                .filter(|m| m["role"] == "ROLE_USER")
                .skip(1)
                .map(|m| m["messageId"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Checks one round: exactly one of the racing answers continued the task, and the stored task
/// took exactly that message.
fn one_won(round: usize, answers: &[(String, Value)], stored: &Value) -> Result<(), String> {
    let winners: Vec<&String> = answers
        .iter()
        .filter(|(_, r)| matches!(outcome(r), Outcome::Continued))
        .map(|(id, _)| id)
        .collect();
    if winners.len() != 1 {
        return Err(format!(
            "round {round}: {} continuations accepted: {answers:?}",
            winners.len()
        ));
    }
    let took = continuations(stored);
    if took != [winners[0].clone()] {
        return Err(format!(
            "round {round}: the task took {took:?}, the winner was {}",
            winners[0]
        ));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn racing_continuations_across_two_postgres_replicas_one_wins() {
    let (a, b) = Sut::replicas("race", &[], 60).await;
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        // The task waits on one replica or the other.
        let home = if round % 2 == 0 { &a } else { &b };
        let asking = home.send(message("tck-input-required", None), false).await;
        assert_eq!(state(&asking), "TASK_STATE_INPUT_REQUIRED", "{asking}");
        let id = asking["id"].as_str().unwrap().to_string();
        let (ma, mb) = (
            message("tck-complete-task", Some(&id)),
            message("tck-complete-task", Some(&id)),
        );
        let (ra, rb) = tokio::join!(
            a.rpc("SendMessage", json!({"message": ma})),
            b.rpc("SendMessage", json!({"message": mb})),
        );
        let answers = [
            (ma["messageId"].as_str().unwrap().to_string(), ra),
            (mb["messageId"].as_str().unwrap().to_string(), rb),
        ];
        if let Err(e) = one_won(round, &answers, &a.get(&id).await) {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ROUNDS} rounds did not have exactly one winner: {failures:#?}",
        failures.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn a_stalled_replica_cannot_overwrite_the_state_another_wrote() {
    // Long tasks work 4 s; leases last 2 s.
    let (a, b) = Sut::replicas("stall", &["--lease", "2"], 2).await;
    let long = a
        .send(message("test-resubscribe-message-id", None), true)
        .await;
    let id = long["id"].as_str().unwrap().to_string();
    let started = tokio::time::Instant::now();
    let t = wait_for(&b, &id, Duration::from_secs(10), |s| {
        s == "TASK_STATE_WORKING"
    })
    .await;
    assert_eq!(state(&t), "TASK_STATE_WORKING", "{t}");

    // A stalls (SIGSTOP): no lease renewal. B finds the lease expired and fails the task.
    a.signal("STOP");
    let t = wait_for(&b, &id, Duration::from_secs(15), |s| {
        s == "TASK_STATE_FAILED"
    })
    .await;
    assert_eq!(state(&t), "TASK_STATE_FAILED", "{t}");
    // Past the end of A's work: when A goes on, its handler completes at once.
    tokio::time::sleep_until(started + Duration::from_millis(4500)).await;
    a.signal("CONT");

    // A's handler completes; its write is refused, it drops the task (A answers from the
    // store), and the task stays as B wrote it.
    let from_a = wait_for(&a, &id, Duration::from_secs(15), |s| {
        s != "TASK_STATE_WORKING" && !s.is_empty()
    })
    .await;
    for (who, t) in [("A", from_a), ("B", b.get(&id).await)] {
        assert_eq!(state(&t), "TASK_STATE_FAILED", "{who}: {t}");
        assert_eq!(
            t["status"]["message"]["parts"][0]["text"], INTERRUPTED_BY_LEASE,
            "{who}: {t}"
        );
    }
    // A keeps serving.
    let done = a.send(message("tck-complete-task", None), false).await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
}

async fn wait_for(sut: &Sut, id: &str, within: Duration, want: impl Fn(&str) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let t = sut.get(id).await;
        if want(state(&t)) || tokio::time::Instant::now() > deadline {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asks on a new task (`input-required`), completes a continued one.
fn asker() -> impl A2aHandler {
    handler_fn(|req, ev, _| async move {
        if req.task.is_none() {
            ev.require_input("which one?").await?;
        } else {
            ev.complete(Some(ev.agent_text("done"))).await?;
        }
        Ok(())
    })
}

/// Serves [`asker`] on its own server (its own engine) with `store`; the base URL.
async fn serve(store: Arc<dyn TaskStore>) -> String {
    serve_agent(asker(), store).await
}

/// Serves `agent` on its own server (its own engine) with `store`; the base URL.
async fn serve_agent(agent: impl A2aHandler, store: Arc<dyn TaskStore>) -> String {
    let mount = AgentMount::new("/", AgentInfo::new("agent", "asks"), agent).with_store(store);
    let app = A2aServer::builder().mount(mount).build().unwrap().router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

async fn rpc(client: &reqwest::Client, base: &str, method: &str, params: Value) -> Value {
    client
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

/// Sends a user message `text` (continuing `task_id`, if any) to `base`; the JSON-RPC response.
async fn send_user(
    client: &reqwest::Client,
    base: &str,
    text: &str,
    task_id: Option<&str>,
) -> Value {
    let message = user(text, task_id);
    rpc(client, base, "SendMessage", json!({ "message": message })).await
}

/// Sends the `ask` message to `base`; the id of the task, which must wait for input.
async fn ask(client: &reqwest::Client, base: &str) -> String {
    let asked = send_user(client, base, "ask", None).await;
    let task = &asked["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{asked}");
    task["id"].as_str().unwrap().to_string()
}

fn user(text: &str, task_id: Option<&str>) -> Value {
    let mut m = json!({"messageId": format!("{text}-{}", uuid::Uuid::new_v4()), "role": "ROLE_USER",
        "parts": [{"text": text}]});
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    m
}

/// Two servers, each with its own engine, on one SQLite file's store (clones of one handle: one
/// process per file): continuations racing through both, exactly one wins every round.
#[tokio::test(flavor = "multi_thread")]
async fn racing_continuations_through_two_servers_on_one_sqlite_file_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) =
        common::task_store(&common::sqlite_url(&dir), A2aStoreOptions::default()).await;
    let a = serve(Arc::new(store.for_agent(""))).await;
    let b = serve(Arc::new(store.for_agent(""))).await;
    let client = reqwest::Client::new();
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let id = ask(&client, &a).await;
        let (ma, mb) = (user("answer", Some(&id)), user("answer", Some(&id)));
        let (ra, rb) = tokio::join!(
            rpc(&client, &a, "SendMessage", json!({"message": ma})),
            rpc(&client, &b, "SendMessage", json!({"message": mb})),
        );
        let answers = [
            (ma["messageId"].as_str().unwrap().to_string(), ra),
            (mb["messageId"].as_str().unwrap().to_string(), rb),
        ];
        let stored = rpc(&client, &b, "GetTask", json!({"id": id})).await;
        if let Err(e) = one_won(round, &answers, &stored["result"]) {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ROUNDS} rounds did not have exactly one winner: {failures:#?}",
        failures.len()
    );
}

fn task(id: &str, state: v1::TaskState, note: &str) -> v1::Task {
    v1::Task {
        id: id.into(),
        context_id: Some("c".into()),
        status: v1::TaskStatus {
            state,
            message: None,
            timestamp: Some(subagent_a2a::task_store::now_rfc3339()),
        },
        artifacts: Vec::new(),
        history: vec![v1::Message::new(
            v1::Role::User,
            note.to_string(),
            vec![v1::Part::text(note)],
        )],
        metadata: None,
    }
}

/// At the store's API, through two handles: a create refuses an existing task; of writers
/// racing from one version exactly one wins and the others get `Conflict`; the winner's write
/// is what is read, with its version.
async fn racing_versioned_writes(a: SqlTaskStore, b: SqlTaskStore) {
    for round in 0..ROUNDS {
        let id = format!("t{round}");
        let v1 = a
            .save_versioned(task(&id, v1::TaskState::InputRequired, "ask"), 0)
            .await
            .unwrap();
        assert!(matches!(
            b.save_versioned(task(&id, v1::TaskState::InputRequired, "again"), 0)
                .await,
            Err(A2aStoreError::Conflict { .. })
        ));
        let read = b.get_versioned(&id).await.unwrap().unwrap();
        assert_eq!(read.version, v1);
        let writes = (0..4).map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let t = task(&id, v1::TaskState::Working, &format!("w{i}"));
            tokio::spawn(async move { (i, store.save_versioned(t, v1).await) })
        });
        let results = futures::future::join_all(writes).await;
        let mut won = Vec::new();
        for r in results {
            match r.unwrap() {
                (i, Ok(v)) => won.push((i, v)),
                (_, Err(A2aStoreError::Conflict { .. })) => {}
                (i, Err(e)) => panic!("round {round}: writer {i}: {e}"),
            }
        }
        assert_eq!(won.len(), 1, "round {round}: {won:?}");
        let (winner, version) = won[0];
        assert!(version > v1);
        let read = a.get_versioned(&id).await.unwrap().unwrap();
        assert_eq!(read.version, version);
        assert_eq!(read.task.history[0].message_id, format!("w{winner}"));
        // A write from the superseded version is refused, and changes nothing.
        assert!(matches!(
            b.save_versioned(task(&id, v1::TaskState::Completed, "late"), v1)
                .await,
            Err(A2aStoreError::Conflict { .. })
        ));
        assert_eq!(
            a.get(&id).await.unwrap().unwrap().status.state,
            v1::TaskState::Working
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_versioned_writes_on_one_sqlite_file_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) =
        common::task_store(&common::sqlite_url(&dir), A2aStoreOptions::default()).await;
    racing_versioned_writes(store.for_agent(""), store.for_agent("")).await;
}

async fn open_postgres(url: &str, lease: Duration) -> SqlTaskStore {
    common::task_store(url, A2aStoreOptions::default().with_lease(lease))
        .await
        .1
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn racing_versioned_writes_on_postgres_one_wins() {
    let url = fresh_postgres_db("versions").await;
    // Two processes' worth of store: each its own pool, writer and owner id.
    let a = open_postgres(&url, Duration::from_secs(30)).await;
    let b = open_postgres(&url, Duration::from_secs(30)).await;
    racing_versioned_writes(a, b).await;
}

/// A store handle whose whole runtime freezes (a stalled process: no lease renewal, no work)
/// past its lease: another replica fails its task, and the stalled handle's write, once it
/// runs again, is refused.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn a_stalled_store_handle_cannot_overwrite_after_its_lease() {
    let url = fresh_postgres_db("stalled").await;
    let b = open_postgres(&url, Duration::from_secs(1)).await;
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let u = url.clone();
    let stalled = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let a = open_postgres(&u, Duration::from_secs(1)).await;
            let v = a
                .save_versioned(task("run", v1::TaskState::Working, "go"), 0)
                .await
                .unwrap();
            ready_tx.send(v).unwrap();
            // The freeze: this thread, and so A's runtime (its lease renewal too), blocks.
            go_rx.recv().unwrap();
            a.save_versioned(task("run", v1::TaskState::Completed, "late"), v)
                .await
        })
    });
    ready_rx.await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let failed = loop {
        let t = b.get("run").await.unwrap().unwrap();
        if t.status.state == v1::TaskState::Failed || tokio::time::Instant::now() > deadline {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(failed.status.state, v1::TaskState::Failed);
    go_tx.send(()).unwrap();
    let late = stalled.join().unwrap();
    assert!(
        matches!(late, Err(A2aStoreError::Conflict { .. })),
        "{late:?}"
    );
    let t = b.get("run").await.unwrap().unwrap();
    assert_eq!(t.status.state, v1::TaskState::Failed);
    let text = t.status.message.as_ref().and_then(|m| m.parts[0].as_text());
    assert_eq!(text, Some(INTERRUPTED_BY_LEASE));
}

/// Asks and waits for the answer in its run (`await_input`); tells `withdrawn` when the wait
/// ends without one. A run continuing a stored task completes.
fn waiter(withdrawn: Arc<tokio::sync::Notify>) -> impl A2aHandler {
    handler_fn(move |req, ev, _| {
        let withdrawn = withdrawn.clone();
        async move {
            if req.task.is_some() {
                ev.complete(Some(ev.agent_text("continued there"))).await?;
                return Ok(());
            }
            match ev.await_input(ev.agent_text("which one?")).await {
                Ok(_) => ev.complete(Some(ev.agent_text("answered here"))).await?,
                Err(_) => withdrawn.notify_one(),
            }
            Ok(())
        }
    })
}

/// A handler waiting in its run on replica A for the answer to its question, while the answer
/// goes to replica B (which continues the stored task): A learns it from B's event, checks the
/// task's version, and stops its run (the handler's wait ends) instead of waiting forever.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set SUBAGENTS_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"]
async fn a_run_waiting_for_an_answer_stops_when_another_replica_takes_it() {
    let url = fresh_postgres_db("waiting").await;
    let (sa, sb) = (
        open_postgres(&url, Duration::from_secs(30)).await,
        open_postgres(&url, Duration::from_secs(30)).await,
    );
    let withdrawn = Arc::new(tokio::sync::Notify::new());
    let a = serve_agent(waiter(withdrawn.clone()), Arc::new(sa.for_agent(""))).await;
    let b = serve_agent(
        waiter(Arc::new(tokio::sync::Notify::new())),
        Arc::new(sb.for_agent("")),
    )
    .await;
    let client = reqwest::Client::new();
    let id = ask(&client, &a).await;

    let done = send_user(&client, &b, "answer", Some(&id)).await;
    assert_eq!(
        state(&done["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{done}"
    );
    tokio::time::timeout(Duration::from_secs(10), withdrawn.notified())
        .await
        .expect("A's handler stopped waiting once B took the answer");
    // A serves the task as the store has it.
    let got = rpc(&client, &a, "GetTask", json!({"id": id})).await;
    assert_eq!(state(&got["result"]), "TASK_STATE_COMPLETED", "{got}");
    let late = send_user(&client, &a, "late", Some(&id)).await;
    assert_eq!(late["error"]["code"], -32004, "{late}");
}
