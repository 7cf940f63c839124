//! The MCP 2026-07-28 revision through `Subagents::mcp_server`, over streamable HTTP on
//! 127.0.0.1 with real rmcp clients and the scripted model server: a `Task` call from a client
//! that declared the tasks extension is a task it follows (`tasks/get`), answers
//! (`tasks/update`) and cancels (`tasks/cancel`); a foreground call's approval is asked of a
//! 2026-07-28 client by an `input_required` result, and of an older one by elicitation.
#![cfg(feature = "mcp")]

use crate::common;

use std::time::Duration;

use common::{bash_call, worker_task_call};
use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, InputRequiredResult, InputResponses, ProtocolVersion,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use subagent_testkit::Reply;
use subagent_testkit::mcp::poll_task;
use subagent_testkit::mcp::tool_text as text;
use subagents::mcp::McpToolServer;

/// A client declaring what `caps` says, on protocol `version`, answering nothing itself.
struct Client {
    caps: Value,
    version: ProtocolVersion,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities = serde_json::from_value(self.caps.clone()).unwrap();
        ClientConfig::new(caps, Implementation::new("tasks-test-client", "1.0"))
            .with_protocol_version(self.version.clone())
    }
}

fn tasks_client() -> Client {
    Client {
        caps: json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        version: ProtocolVersion::V_2026_07_28,
    }
}

fn eliciting_client() -> Client {
    Client {
        caps: json!({"elicitation": {"form": {}}}),
        version: ProtocolVersion::V_2026_07_28,
    }
}

/// Connects: a 2026-07-28 client by `server/discover` (stateless requests, no handshake), an
/// older one by `initialize`.
async fn connect(client: Client, url: &str) -> RunningService<RoleClient, Client> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    if client.version.has_initialize() {
        client.serve(transport).await.expect("connects")
    } else {
        let preferred_versions = vec![client.version.clone()];
        client
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover { preferred_versions },
            )
            .await
            .expect("discovers")
    }
}

/// Polls `tasks/get` until the task's status is not `working` (bounded).
async fn settle(
    client: &RunningService<RoleClient, Client>,
    id: &str,
) -> rmcp::model::DetailedTask {
    poll_task(client, id, |s| s != TaskStatus::Working).await
}

/// Asserts that the task settles waiting for input (`input_required`).
async fn assert_waits(client: &RunningService<RoleClient, Client>, id: &str) {
    assert_eq!(settle(client, id).await.status(), TaskStatus::InputRequired);
}

/// Calls the worker as a task and returns the task id the server handed out.
async fn start_task(client: &RunningService<RoleClient, Client>) -> String {
    let CallToolResponse::Task(handle) = client.call_tool_once(worker_task_call()).await.unwrap()
    else {
        panic!("expected a task handle");
    };
    handle.task.task_id
}

/// A worker whose model runs `cmd` in Bash (which asks the caller first) and then answers
/// `answer`, its server tuned by `tune`, and `client` connected to it.
async fn bash_worker_for(
    client: Client,
    (cmd, answer): (&str, &str),
    tune: impl FnOnce(McpToolServer) -> McpToolServer,
) -> (common::McpWorker, RunningService<RoleClient, Client>) {
    let worker = common::mcp_worker(vec![bash_call(cmd), Reply::text(answer)], tune).await;
    let client = connect(client, &worker.url).await;
    (worker, client)
}

/// [`bash_worker_for`] with the server's defaults.
async fn bash_worker(
    client: Client,
    cmd_answer: (&str, &str),
) -> (common::McpWorker, RunningService<RoleClient, Client>) {
    bash_worker_for(client, cmd_answer, |s| s).await
}

/// Calls the worker once; the result it answered with (`expected` says what, else it fails).
async fn completed(client: &RunningService<RoleClient, Client>, expected: &str) -> CallToolResult {
    match client.call_tool_once(worker_task_call()).await.unwrap() {
        CallToolResponse::Complete(result) => result,
        other => panic!("{expected}, got {other:?}"),
    }
}

/// Calls the worker once; the question the server asked instead of answering.
async fn asked(client: &RunningService<RoleClient, Client>) -> InputRequiredResult {
    match client.call_tool_once(worker_task_call()).await.unwrap() {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// The answer `decision` to the question shown under `key`.
fn accept(key: &str, decision: &str) -> InputResponses {
    let mut r = InputResponses::new();
    r.insert(
        key.into(),
        json!({"action": "accept", "content": {"decision": decision}}),
    );
    r
}

/// The one key of a question's `inputRequests`: random (`approval_` and 32 hex digits).
fn only_key<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let keys: Vec<&String> = keys.collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let key = keys[0].clone();
    let random = key.strip_prefix("approval_").unwrap_or_default();
    assert!(
        random.len() == 32 && random.chars().all(|c| c.is_ascii_hexdigit()),
        "an unguessable key: {key}"
    );
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_from_a_tasks_client_is_a_task_followed_to_its_result() {
    let worker = common::mcp_worker(vec![Reply::text("the answer is 42")], |s| s).await;
    let client = connect(tasks_client(), &worker.url).await;
    let handle = match client
        .call_tool_once(worker_task_call())
        .await
        .expect("answers")
    {
        CallToolResponse::Task(t) => t,
        other => panic!("expected a task handle, got {other:?}"),
    };
    assert_eq!(handle.task.status, TaskStatus::Working);
    assert!(
        handle.task.task_id.starts_with("task_"),
        "{}",
        handle.task.task_id
    );
    assert_eq!(handle.task.poll_interval_ms, Some(1000));
    assert!(handle.task.ttl_ms.is_some_and(|t| t > 0));
    let done = settle(&client, &handle.task.task_id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("expected completed, got {done:?}");
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result.clone())).unwrap();
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert!(
        text(&result).contains("the answer is 42"),
        "{}",
        text(&result)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_client_of_the_older_era_gets_tasks_too() {
    let worker = common::mcp_worker(vec![Reply::text("older era")], |s| s).await;
    let client = connect(
        Client {
            caps: json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
            version: ProtocolVersion::V_2025_11_25,
        },
        &worker.url,
    )
    .await;
    let done = settle(&client, &start_task(&client).await).await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_for_approval_is_input_required_and_tasks_update_answers_it() {
    let (worker, client) = bash_worker(tasks_client(), ("touch out/task.txt", "touched it")).await;
    let id = start_task(&client).await;
    let waiting = settle(&client, &id).await;
    let TaskPayload::InputRequired { input_requests } = &waiting.payload else {
        panic!("expected input_required, got {waiting:?}");
    };
    // One question, under a random key.
    let key = only_key(input_requests.keys());
    let asked = serde_json::to_value(&input_requests[&key]).unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert!(
        asked["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("touch out/task.txt")),
        "{asked}"
    );
    assert!(
        !worker.dir.path().join("work/out/task.txt").exists(),
        "not before the answer"
    );
    // A key it did not ask is ignored; the right one answers.
    let mut wrong = InputResponses::new();
    wrong.insert(
        "approval_9".into(),
        json!({"action": "accept", "content": {"decision": "yes"}}),
    );
    client
        .update_task(UpdateTaskParams::new(&id, wrong))
        .await
        .expect("acked");
    assert_waits(&client, &id).await;
    client
        .update_task(UpdateTaskParams::new(&id, accept(&key, "yes")))
        .await
        .expect("acked");
    let done = poll_task(&client, &id, |s| {
        !matches!(s, TaskStatus::Working | TaskStatus::InputRequired)
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    assert!(
        worker.dir.path().join("work/out/task.txt").exists(),
        "the client said yes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_cancels_a_task() {
    let (worker, client) =
        bash_worker(tasks_client(), ("touch out/never.txt", "unreachable")).await;
    let id = start_task(&client).await;
    assert_waits(&client, &id).await;
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .expect("acked");
    let status = poll_task(&client, &id, |s| s.is_terminal()).await.status();
    assert_eq!(status, TaskStatus::Cancelled);
    assert!(!worker.dir.path().join("work/out/never.txt").exists());
    // An id never handed out is refused.
    let err = client
        .get_task(GetTaskParams::new("task_0000"))
        .await
        .expect_err("unknown task");
    assert!(err.to_string().contains("unknown task"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_extension_gets_the_plain_answer() {
    let worker = common::mcp_worker(vec![Reply::text("plain answer")], |s| s).await;
    let client = connect(
        Client {
            caps: json!({}),
            version: ProtocolVersion::V_2026_07_28,
        },
        &worker.url,
    )
    .await;
    let result = completed(&client, "expected a plain result").await;
    assert!(text(&result).contains("plain answer"), "{}", text(&result));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_limit_refuses_a_task_beyond_it() {
    let worker =
        common::mcp_worker(vec![bash_call("touch out/a.txt")], |s| s.with_max_tasks(1)).await;
    let client = connect(tasks_client(), &worker.url).await;
    let CallToolResponse::Task(first) = client.call_tool_once(worker_task_call()).await.unwrap()
    else {
        panic!("expected a task handle");
    };
    assert_waits(&client, &first.task.task_id).await;
    let refused = completed(&client, "expected a refusal").await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("its limit"), "{}", text(&refused));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_is_asked_by_input_required_and_its_retry_runs_the_call() {
    let (worker, client) =
        bash_worker(eliciting_client(), ("touch out/mrtr.txt", "touched it")).await;
    let asked = asked(&client).await;
    let requests = asked.input_requests.clone().expect("inputRequests");
    let key = only_key(requests.keys());
    let form = serde_json::to_value(&requests[&key]).unwrap();
    assert_eq!(form["method"], "elicitation/create", "{form}");
    let state = asked.request_state.clone().expect("requestState");
    assert!(!worker.dir.path().join("work/out/mrtr.txt").exists());

    // An altered requestState names nothing: -32602, and the call still waits.
    let err = client
        .call_tool_once(
            worker_task_call()
                .with_input_responses(accept(&key, "yes"))
                .with_request_state(format!("{state}-TAMPERED")),
        )
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("requestState"), "{err}");

    let CallToolResponse::Complete(result) = client
        .call_tool_once(
            worker_task_call()
                .with_input_responses(accept(&key, "yes"))
                .with_request_state(state.clone()),
        )
        .await
        .unwrap()
    else {
        panic!("expected the final result");
    };
    assert!(text(&result).contains("touched it"), "{}", text(&result));
    assert!(
        worker.dir.path().join("work/out/mrtr.txt").exists(),
        "the client said yes"
    );
    // The state is spent.
    assert!(
        client
            .call_tool_once(
                worker_task_call()
                    .with_input_responses(accept(&key, "yes"))
                    .with_request_state(state)
            )
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_client_does_not_come_back_is_denied_and_forgotten() {
    let (worker, client) =
        bash_worker_for(eliciting_client(), ("touch out/late.txt", "gave up"), |s| {
            s.with_elicitation_timeout(Duration::from_millis(200))
        })
        .await;
    let asked = asked(&client).await;
    let key = only_key(asked.input_requests.as_ref().expect("inputRequests").keys());
    let state = asked.request_state.expect("requestState");
    // Well past the answer timeout (200 ms), the call has been denied and forgotten.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let err = client
        .call_tool_once(
            worker_task_call()
                .with_input_responses(accept(&key, "yes"))
                .with_request_state(state),
        )
        .await
        .expect_err("the call is gone");
    assert!(err.to_string().contains("requestState"), "{err}");
    assert!(!worker.dir.path().join("work/out/late.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_question_is_parked_beyond_the_waiting_limit() {
    let (worker, client) = bash_worker_for(
        eliciting_client(),
        ("touch out/over.txt", "was denied"),
        |s| s.with_max_waiting_calls(0),
    )
    .await;
    let result = completed(&client, "expected the call to go on, denied").await;
    assert!(text(&result).contains("was denied"), "{}", text(&result));
    assert!(!worker.dir.path().join("work/out/over.txt").exists());
}

/// A tasks client (2025-11-25: a session, whose standalone stream carries the server's
/// notifications) that keeps every `notifications/tasks` it gets.
#[derive(Clone, Default)]
struct Listening {
    seen: std::sync::Arc<std::sync::Mutex<Vec<rmcp::model::DetailedTask>>>,
    changed: std::sync::Arc<tokio::sync::Notify>,
}

impl ClientHandler for Listening {
    fn get_info(&self) -> ClientConfig {
        tasks_client_of(ProtocolVersion::V_2025_11_25).get_info()
    }

    async fn on_task_status(
        &self,
        params: rmcp::model::TaskStatusNotificationParams,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().push(params.task);
        self.changed.notify_one();
    }
}

fn tasks_client_of(version: ProtocolVersion) -> Client {
    Client {
        caps: json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        version,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_client_is_told_of_its_task_by_notifications_without_polling() {
    // The run waits for its approval first: working, then input_required, then (answered
    // no) completed.
    let worker = common::mcp_worker(
        vec![
            // Slow enough that the task is seen working first.
            bash_call("touch out/denied.txt").with_delay(Duration::from_millis(500)),
            Reply::text("finished without it"),
        ],
        |s| s,
    )
    .await;
    let listening = Listening::default();
    let client = listening
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(worker.url.clone()))
        .await
        .expect("connects");
    let CallToolResponse::Task(handle) = client.call_tool_once(worker_task_call()).await.unwrap()
    else {
        panic!("expected a task handle");
    };
    let id = handle.task.task_id.clone();
    // Never `tasks/get`: wait for the notifications alone (bounded).
    let statuses = |l: &Listening| -> Vec<TaskStatus> {
        l.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|t| t.task.task_id == id)
            .map(|t| t.status())
            .collect()
    };
    tokio::time::timeout(Duration::from_secs(30), async {
        while !statuses(&listening).contains(&TaskStatus::InputRequired) {
            listening.changed.notified().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no input_required notification: {:?}", statuses(&listening)));
    // Answered through `tasks/update` (the key the notification showed).
    let keys: Vec<String> = listening
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|t| match &t.payload {
            TaskPayload::InputRequired { input_requests } => {
                Some(input_requests.keys().cloned().collect::<Vec<_>>())
            }
            _ => None,
        })
        .flatten()
        .collect();
    let key = only_key(keys.iter());
    client
        .update_task(UpdateTaskParams::new(&id, accept(&key, "no")))
        .await
        .expect("tasks/update acked");
    tokio::time::timeout(Duration::from_secs(30), async {
        while !statuses(&listening).contains(&TaskStatus::Completed) {
            listening.changed.notified().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no completed notification: {:?}", statuses(&listening)));
    // Each change once, in order (the working between the answer and the end may be too
    // short to be seen).
    let seen = statuses(&listening);
    let mut once = seen.clone();
    once.dedup();
    assert_eq!(once, seen, "no status twice in a row");
    assert_eq!(seen.first(), Some(&TaskStatus::Working), "{seen:?}");
    assert_eq!(seen.get(1), Some(&TaskStatus::InputRequired), "{seen:?}");
    assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{seen:?}");
    assert!(seen.len() <= 4, "{seen:?}");
    let all = listening.seen.lock().unwrap().clone();
    let done = all.last().unwrap();
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("expected the result inlined: {done:?}");
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result.clone())).unwrap();
    assert!(
        text(&result).contains("finished without it"),
        "{}",
        text(&result)
    );
    assert!(!worker.dir.path().join("work/out/denied.txt").exists());
}
