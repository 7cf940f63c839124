//! Concurrent messages continuing one `input-required` task, over real HTTP: every request is
//! answered within a bound, exactly one continues the task, the others are refused at once;
//! also when they race through two servers sharing one store (as replicas do).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use subagent_a2a::server::{
    A2aServer, InMemoryTaskStore, StoreError, TaskFilter, TaskPage, TaskStore, VersionedTask,
};
use subagent_a2a::types::v1;
use subagent_spi::async_trait;

use crate::common;

use common::msg;

/// How many continuations race.
const RACERS: usize = 200;

async fn rpc(client: &reqwest::Client, url: &str, params: Value) -> Result<Value, String> {
    let resp = client
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}))
        .send()
        .await
        .map_err(|e| format!("request failed: {e} ({:?})", std::error::Error::source(&e)))?;
    resp.json().await.map_err(|e| format!("body failed: {e}"))
}

/// The in-memory store, taking a little time per read and write as a database does (other
/// requests run meanwhile).
struct SlowStore(InMemoryTaskStore);

#[async_trait]
impl TaskStore for SlowStore {
    async fn save(&self, task: v1::Task) -> Result<(), StoreError> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.0.save(task).await
    }
    async fn get(&self, task_id: &str) -> Result<Option<v1::Task>, StoreError> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.0.get(task_id).await
    }
    async fn get_versioned(&self, task_id: &str) -> Result<Option<VersionedTask>, StoreError> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.0.get_versioned(task_id).await
    }
    async fn save_versioned(&self, task: v1::Task, expected: u64) -> Result<u64, StoreError> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.0.save_versioned(task, expected).await
    }
    async fn list(
        &self,
        filter: &TaskFilter,
        offset: usize,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        self.0.list(filter, offset, limit).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_continuations_of_an_input_required_task_are_all_answered_once() {
    let mount = common::agent_at("/echo", "echo", Arc::default())
        .with_store(Arc::new(SlowStore(InMemoryTaskStore::default())) as Arc<dyn TaskStore>);
    let s = common::serve(A2aServer::builder().mount(mount)).await;
    let url = s.url("/echo");
    // A client timeout bounds every answer: a hung request fails the test.
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let r = rpc(&client, &url, json!({"message": msg("ask")}))
        .await
        .expect("ask answered");
    assert_eq!(
        r["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let id = r["result"]["task"]["id"].as_str().unwrap().to_string();

    let calls = (0..RACERS).map(|i| {
        let (client, url, id) = (client.clone(), url.clone(), id.clone());
        tokio::spawn(async move {
            let mut m = msg(&format!("answer {i}"));
            m["taskId"] = json!(id);
            rpc(&client, &url, json!({"message": m}))
                .await
                .map_err(|e| format!("answer {i}: {e}"))
        })
    });
    let answers = futures::future::join_all(calls).await;
    let mut continued = 0;
    let mut refused = 0;
    let mut failures = Vec::new();
    for a in answers {
        match a.expect("task joined") {
            Ok(v) if v["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" => {
                continued += 1
            }
            Ok(v) if v["error"]["code"] == -32004 => refused += 1,
            Ok(v) => failures.push(v.to_string()),
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} unanswered or odd ({continued} continued, {refused} refused): {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert_eq!(
        continued, 1,
        "exactly one continuation wins ({refused} refused)"
    );
    assert_eq!(refused, RACERS - 1);

    // The task holds the history of exactly one continuation.
    let t: Value = rpc_get(&client, &url, &id).await;
    assert_eq!(answers_in(&t), 1, "{t}");
}

/// How many messages of a `GetTask` answer's history are continuations' answers.
fn answers_in(t: &Value) -> usize {
    t["result"]["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter(|m| {
            m["parts"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("answer"))
        })
        .count()
}

async fn rpc_get(client: &reqwest::Client, url: &str, id: &str) -> Value {
    common::json_of(
        client
            .post(url)
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}})),
    )
    .await
}

/// Two servers (two engines, as two replicas would have) on one in-memory store: messages
/// continuing one `input-required` task through both race, and exactly one continues it
/// every round (the store's compare-and-set on the task's version decides); the other is
/// refused at once with UnsupportedOperation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_continuations_through_two_servers_on_one_store_one_wins() {
    const ROUNDS: usize = 30;
    let store: Arc<dyn TaskStore> = Arc::new(SlowStore(InMemoryTaskStore::default()));
    let a = common::serve(
        A2aServer::builder()
            .mount(common::agent_at("/echo", "echo", Arc::default()).with_store(store.clone())),
    )
    .await;
    let b = common::serve(
        A2aServer::builder()
            .mount(common::agent_at("/echo", "echo", Arc::default()).with_store(store)),
    )
    .await;
    let (ua, ub) = (a.url("/echo"), b.url("/echo"));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mut doubles = 0;
    for round in 0..ROUNDS {
        let r = rpc(&client, &ua, json!({"message": msg("ask")}))
            .await
            .expect("ask answered");
        let id = r["result"]["task"]["id"].as_str().unwrap().to_string();
        let answer = |text: &str| {
            let mut m = msg(text);
            m["taskId"] = json!(id);
            json!({"message": m})
        };
        let (ra, rb) = tokio::join!(
            rpc(&client, &ua, answer(&format!("answer a{round}"))),
            rpc(&client, &ub, answer(&format!("answer b{round}"))),
        );
        let mut continued = 0;
        let answers = [ra.expect("answered"), rb.expect("answered")];
        for r in &answers {
            if r["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" {
                continued += 1;
            } else {
                assert_eq!(r["error"]["code"], -32004, "round {round}: {r}");
            }
        }
        assert!(
            continued >= 1,
            "round {round}: nobody continued the task: {answers:?}"
        );
        if continued > 1 {
            doubles += 1;
            continue;
        }
        let t = rpc_get(&client, &ub, &id).await;
        assert_eq!(answers_in(&t), 1, "round {round}: {t}");
    }
    assert_eq!(
        doubles, 0,
        "{doubles} of {ROUNDS} rounds continued the task twice"
    );
}
