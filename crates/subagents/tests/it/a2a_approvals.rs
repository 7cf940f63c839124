//! Approvals across A2A, end to end over real HTTP on 127.0.0.1 with the scripted model
//! server: a served Markdown agent that needs an approval puts its task in `input-required`,
//! our A2A client turns that into a request on the root's approver, and the answer continues
//! the same remote task to its end.
#![cfg(feature = "server")]

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{a2a_rpc, bash_call, bash_worker, serve_a2a, texts};
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedApprover, ScriptedModelServer};
use subagents::spi::{ApprovalDecision, TaskStatus};
use subagents::{ServeOptions, Subagents};

/// Serves a `worker` agent (Bash, default mode, its own scripted model) on 127.0.0.1 and
/// returns its URL, the workspace, and the server's shutdown handle.
async fn serve_worker(
    model: &ScriptedModelServer,
    dir: &Path,
    options: ServeOptions,
) -> (String, subagents::a2a::server::A2aServer) {
    let served = bash_worker(dir, "model: worker-model\n")
        .named_model("worker-model", model.openai_model("worker-model"))
        .build()
        .await
        .expect("the served registry builds");
    serve_a2a(served, &options, "worker").await
}

/// The main side: a scripted main model with the remote worker as its only agent.
async fn main_side(
    model: &ScriptedModelServer,
    url: &str,
    approver: Option<Arc<ScriptedApprover>>,
) -> Subagents {
    let mut b = Subagents::builder()
        .model(model.openai_model("main-model"))
        .a2a_agent(url)
        .builtin_agents(false);
    if let Some(a) = approver {
        b = b.approver(a);
    }
    b.build().await.expect("the main registry builds")
}

/// An A2A request that must succeed; its result.
async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let v = a2a_rpc(url, method, params).await;
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

/// A finished run: the main agent sent the remote worker a task, the worker asked to run a
/// command, and the root's approver answered.
struct AnsweredRun {
    model: ScriptedModelServer,
    dir: tempfile::TempDir,
    url: String,
    _server: subagents::a2a::server::A2aServer,
    recorder: Arc<ScriptedApprover>,
}

/// The main agent delegates to the served worker, whose model asks to run `command` and then
/// says `worker_reply`; the root's approver answers `decision`. The main agent's run must end
/// with its final text, "done".
async fn answered_run(
    command: &str,
    worker_reply: &str,
    decision: ApprovalDecision,
) -> AnsweredRun {
    let model = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (url, server) = serve_worker(&model, dir.path(), ServeOptions::new()).await;
    model.push(Reply::task_call("worker", "touch the file"));
    model.push_for_model("worker-model", bash_call(command));
    model.push_for_model("worker-model", Reply::text(worker_reply));
    model.push(Reply::text("done"));
    let recorder = ScriptedApprover::answering([decision]);
    let main = main_side(&model, &url, Some(recorder.clone())).await;
    let outcome = main.main_agent().run("go").await.expect("runs");
    assert_eq!(outcome.text, "done");
    AnsweredRun {
        model,
        dir,
        url,
        _server: server,
        recorder,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_child_in_input_required_is_answered_by_the_root_and_the_same_task_completes() {
    let run = answered_run(
        "touch out/made-remotely.txt",
        "touched it",
        ApprovalDecision::AllowOnce,
    )
    .await;
    assert!(
        run.dir.path().join("work/out/made-remotely.txt").exists(),
        "approved from the root, so the remote command ran"
    );

    // The root's approver saw the remote tool call, with the path through the A2A child.
    let seen = run.recorder.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].agent_path, ["main", "worker"]);
    assert_eq!(seen[0].tool, "Bash");
    assert_eq!(seen[0].summary, "touch out/made-remotely.txt");
    assert!(
        seen[0].reason.contains("remote A2A agent `worker`"),
        "{}",
        seen[0].reason
    );

    // One remote task: the one that asked, answered and completed.
    let list = rpc(&run.url, "ListTasks", json!({})).await;
    let tasks = list["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{list}");
    let task = &tasks[0];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(seen[0].task_id.as_deref(), task["id"].as_str());
    let history = task["history"].as_array().unwrap();
    let answer = history
        .iter()
        .find(|m| m["role"] == "ROLE_USER" && texts(m) == "yes")
        .expect("the answer is in the task's history");
    assert_eq!(answer["taskId"], task["id"]);
    assert_eq!(answer["contextId"], task["contextId"]);

    // The main model read the worker's final text.
    let main_requests = run.model.requests_for("main-model");
    let results = main_requests.last().unwrap().tool_results();
    assert!(results[0].contains("touched it"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_denial_reaches_the_remote_model_and_the_task_still_completes() {
    let run = answered_run(
        "touch out/denied.txt",
        "could not touch it",
        ApprovalDecision::deny("not on a Friday"),
    )
    .await;
    assert!(!run.dir.path().join("work/out/denied.txt").exists());
    let worker_requests = run.model.requests_for("worker-model");
    let results = worker_requests[1].tool_results();
    assert!(
        results[0].contains("not approved") && results[0].contains("not on a Friday"),
        "the remote model reads the root's reason: {results:?}"
    );
    let list = rpc(&run.url, "ListTasks", json!({})).await;
    assert_eq!(list["tasks"][0]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_anyone_to_answer_the_child_needs_input_and_the_session_resumes_the_same_task() {
    let model = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (url, _server) = serve_worker(&model, dir.path(), ServeOptions::new()).await;
    model.push_for_model("worker-model", bash_call("touch out/later.txt"));
    model.push_for_model("worker-model", Reply::text("touched later"));
    // No approver: the root denies everything, so nobody can answer the remote question.
    let main = main_side(&model, &url, None).await;
    let call = subagents::spi::TaskCall::new("worker", "touch", "touch the file");
    let ctx = subagents::spi::TaskContext::new();
    let first = match main.dispatch(call, &ctx).await.expect("dispatches") {
        subagents::Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("{other:?}"),
    };
    assert_eq!(first.status, TaskStatus::NeedsInput, "{first:?}");
    assert!(
        first
            .text
            .contains("Approval needed: worker wants to run Bash: touch out/later.txt"),
        "{}",
        first.text
    );
    let session = first.session_id.clone().expect("resumable");
    // The caller answers by resuming: the same remote task goes on.
    let mut call = subagents::spi::TaskCall::new("worker", "answer", "yes");
    call.resume = Some(session);
    let second = match main.dispatch(call, &ctx).await.expect("dispatches") {
        subagents::Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("{other:?}"),
    };
    assert_eq!(second.status, TaskStatus::Completed, "{second:?}");
    assert_eq!(second.text, "touched later");
    assert!(dir.path().join("work/out/later.txt").exists());
    let list = rpc(&url, "ListTasks", json!({})).await;
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1, "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_server_asks_over_http_understands_always_and_no_and_denies_after_its_timeout() {
    let model = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (url, _server) = serve_worker(
        &model,
        dir.path(),
        ServeOptions::new().approval_timeout(Duration::from_secs(2)),
    )
    .await;
    let send = |text: &str, task: Option<&str>| {
        let mut message = json!({
            "messageId": uuid(),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        });
        if let Some(t) = task {
            message["taskId"] = json!(t);
        }
        json!({"message": message})
    };
    // 1. Ask: the task waits with the question (text and metadata).
    model.push_for_model("worker-model", bash_call("touch out/a.txt"));
    let r = rpc(&url, "SendMessage", send("touch files", None)).await;
    let task = &r["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    let question = texts(&task["status"]["message"]);
    assert!(
        question.starts_with("Approval needed: worker wants to run Bash: touch out/a.txt")
            && question.contains("`always`"),
        "{question}"
    );
    let meta = &task["status"]["message"]["metadata"]["subagents/approval"];
    assert_eq!(meta["tool"], "Bash");
    assert_eq!(meta["answers"], json!(["yes", "no", "always"]));
    let id = task["id"].as_str().unwrap().to_string();

    // 2. "ALWAYS" (any case): this call and the next `touch` run without asking again; then
    //    an `rm` asks, and "No: keep it" is read by the model.
    model.push_for_model("worker-model", bash_call("touch out/b.txt"));
    model.push_for_model("worker-model", bash_call("rm a.txt"));
    let r = rpc(&url, "SendMessage", send("ALWAYS", Some(&id))).await;
    assert_eq!(r["task"]["id"], id.as_str());
    assert_eq!(
        r["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{r}"
    );
    assert!(texts(&r["task"]["status"]["message"]).contains("rm a.txt"));
    assert!(
        dir.path().join("work/out/a.txt").exists() && dir.path().join("work/out/b.txt").exists()
    );

    model.push_for_model("worker-model", bash_call("touch out/c.txt"));
    model.push_for_model("worker-model", bash_call("rm b.txt"));
    let r = rpc(&url, "SendMessage", send("No: keep it", Some(&id))).await;
    assert!(dir.path().join("work/out/a.txt").exists(), "denied");
    assert_eq!(
        r["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{r}"
    );
    assert!(
        texts(&r["task"]["status"]["message"]).contains("rm b.txt"),
        "{r}"
    );

    // 3. No answer: after the approval timeout the call is denied and the task goes on.
    model.push_for_model("worker-model", Reply::text("finished"));
    let mut state = String::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let t = rpc(&url, "GetTask", json!({"id": id})).await;
        state = t["status"]["state"].as_str().unwrap_or("").to_string();
        if state == "TASK_STATE_COMPLETED" {
            break;
        }
    }
    assert_eq!(state, "TASK_STATE_COMPLETED");
    assert!(
        dir.path().join("work/out/b.txt").exists(),
        "not answered, so denied"
    );
    let worker = model.requests_for("worker-model");
    let all: Vec<String> = worker.iter().flat_map(|r| r.tool_results()).collect();
    assert!(all.iter().any(|r| r.contains("keep it")), "{all:?}");
    assert!(
        all.iter().any(|r| r.contains("did not answer within 2 s")),
        "{all:?}"
    );
    assert!(
        dir.path().join("work/out/c.txt").exists(),
        "`always` covered touch"
    );
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("m-{}", N.fetch_add(1, Ordering::Relaxed))
}
