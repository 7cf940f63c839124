//! Permissions through the facade, over real HTTP with the scripted model server: one approval
//! channel through the whole delegation tree, the main agent's own tools under its mode, and
//! background children waiting for an answer.

use crate::common;
use crate::common::Built as _;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{bash_call, write_agent};
use serde_json::json;
use subagent_testkit::{Reply, ScriptedApprover, ScriptedModelServer};
use subagents::Subagents;
use subagents::claude::PermissionMode;
use subagents::spi::ApprovalDecision;

/// A coordinator that may delegate and a worker that runs commands.
fn team(dir: &Path) {
    write_agent(
        dir,
        "coordinator",
        "---\nname: coordinator\ndescription: Delegates.\ntools: Task, Read\n---\nDelegate.\n",
    );
    write_agent(
        dir,
        "worker",
        "---\nname: worker\ndescription: Runs commands.\ntools: Bash, Read\nmodel: worker-model\n---\nWork.\n",
    );
}

async fn build(
    server: &ScriptedModelServer,
    dir: &Path,
    approver: Option<Arc<ScriptedApprover>>,
) -> Subagents {
    team(dir);
    // Confined Bash cannot create files directly in the workspace root (they could be its
    // protected control files): commands create theirs in `out/`.
    std::fs::create_dir_all(dir.join("work/out")).unwrap();
    let mut b = Subagents::builder()
        .model(server.openai_model("main-model"))
        .named_model("worker-model", server.openai_model("worker-model"))
        .agents_dir(dir.join("agents"))
        .workspace(dir.join("work"));
    if let Some(a) = approver {
        b = b.approver(a);
    }
    b.built().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_requested_by_a_grandchild_reaches_the_root_with_its_path() {
    let server = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("work/out/made-by-worker.txt");
    server.push(Reply::task_call("coordinator", "please"));
    server.push(Reply::task_call("worker", "please"));
    server.push_for_model("worker-model", bash_call("touch out/made-by-worker.txt"));
    server.push_for_model("worker-model", Reply::text("touched"));
    server.push(Reply::text("the worker touched it"));
    server.push(Reply::text("done"));
    let recorder = ScriptedApprover::answering(vec![ApprovalDecision::AllowOnce]);
    let agents = build(&server, dir.path(), Some(recorder.clone())).await;
    let outcome = agents.main_agent().run("go").await.expect("runs");
    assert_eq!(outcome.text, "done");
    let seen = recorder.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].agent_path, ["main", "coordinator", "worker"]);
    assert_eq!(seen[0].tool, "Bash");
    assert_eq!(seen[0].summary, "touch out/made-by-worker.txt");
    assert_eq!(seen[0].session_rule.as_deref(), Some("Bash(touch:*)"));
    assert!(file.exists(), "approved, so the command ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_agent_asks_too_and_without_an_approver_the_model_reads_a_denial() {
    let server = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    server.push(bash_call("touch out/by-main.txt"));
    server.push(Reply::text("could not"));
    let agents = build(&server, dir.path(), None).await;
    assert_eq!(agents.permission_mode(), Some(PermissionMode::Default));
    agents.main_agent().run("go").await.expect("runs");
    assert!(!dir.path().join("work/out/by-main.txt").exists());
    let results = server.requests()[1].tool_results();
    assert!(
        results[0].contains("not approved") && results[0].contains("no approver is configured"),
        "{}",
        results[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_mode_and_rules_from_the_builder_apply_to_main_and_agents() {
    let server = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    team(dir.path());
    std::fs::create_dir_all(dir.path().join("work/.claude")).unwrap();
    std::fs::create_dir_all(dir.path().join("work/out")).unwrap();
    std::fs::write(
        dir.path().join("work/.claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(touch out/allowed.txt)"], "deny": ["Bash(rm:*)"]}}"#,
    )
    .unwrap();
    server.push(Reply::tool_calls(vec![
        ("Bash", json!({"command": "touch out/allowed.txt"})),
        ("Bash", json!({"command": "touch out/asked.txt"})),
    ]));
    server.push(Reply::text("main done"));
    let agents = Subagents::builder()
        .model(server.openai_model("m"))
        .workspace(dir.path().join("work"))
        .claude_settings(dir.path().join("work"))
        .permission_mode(PermissionMode::DontAsk)
        .built()
        .await;
    agents.main_agent().run("go").await.expect("runs");
    assert!(
        dir.path().join("work/out/allowed.txt").exists(),
        "allowed by the settings file"
    );
    assert!(
        !dir.path().join("work/out/asked.txt").exists(),
        "dontAsk denies the rest"
    );
    let results = server.requests()[1].tool_results();
    assert!(results[1].contains("dontAsk"), "{}", results[1]);

    // A settings file with an unknown mode fails the build, naming the file.
    std::fs::write(
        dir.path().join("work/.claude/settings.local.json"),
        r#"{"permissions": {"defaultMode": "yolo"}}"#,
    )
    .unwrap();
    let e = Subagents::builder()
        .workspace(dir.path().join("work"))
        .claude_settings(dir.path().join("work"))
        .build()
        .await
        .unwrap_err();
    let text = format!(
        "{e}: {}",
        std::error::Error::source(&e)
            .map(|s| s.to_string())
            .unwrap_or_default()
    );
    assert!(
        text.contains("settings.local.json") && text.contains("yolo"),
        "{text}"
    );
}

/// The task id in a "Started agent ... in the background with task id ..." result.
fn started_task_id(body: &serde_json::Value) -> String {
    let text = body.to_string();
    let at = text
        .find("task id task_")
        .expect("a started background task")
        + "task id ".len();
    text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Scripts the main agent starting `worker` in the background, waiting on it (it stops at an
/// approval question for the Bash `command`), answering `approve`, then finishing with
/// "all done"; the worker runs `command` and then says `worker_reply`.
fn script_background_question(
    server: &ScriptedModelServer,
    approve: &'static str,
    command: &str,
    worker_reply: &str,
) {
    server.push(Reply::tool_calls(vec![(
        "Task",
        json!({"description": "bg", "prompt": "touch it", "subagent_type": "worker", "run_in_background": true}),
    )]));
    server.script().push_dynamic(None, |body| {
        let id = started_task_id(body);
        Reply::tool_calls(vec![(
            "TaskOutput",
            json!({"task_id": id, "timeout_ms": 120000}),
        )])
    });
    server.script().push_dynamic(None, move |body| {
        let id = started_task_id(body);
        Reply::tool_calls(vec![(
            "TaskOutput",
            json!({"task_id": id, "approve": approve, "timeout_ms": 120000}),
        )])
    });
    server.push(Reply::text("all done"));
    server.push_for_model("worker-model", bash_call(command));
    server.push_for_model("worker-model", Reply::text(worker_reply));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_child_waiting_for_approval_shows_it_in_task_output_and_proceeds_after_the_answer()
 {
    let server = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    // Main: wait for the task (it stops at the question), then answer yes.
    script_background_question(&server, "yes", "touch out/bg.txt", "bg done");
    let recorder = ScriptedApprover::answering(vec![ApprovalDecision::AllowOnce]);
    let agents = build(&server, dir.path(), Some(recorder.clone())).await;
    let outcome = tokio::time::timeout(Duration::from_secs(120), agents.main_agent().run("go"))
        .await
        .expect("finishes")
        .expect("runs");
    assert_eq!(outcome.text, "all done");

    let main = server.requests_for("main-model");
    assert_eq!(main.len(), 4);
    let waiting = main[2].tool_results().pop().unwrap();
    assert!(
        waiting.contains("status: waiting_for_approval"),
        "{waiting}"
    );
    assert!(
        waiting.contains("touch out/bg.txt") && waiting.contains("Bash"),
        "{waiting}"
    );
    assert!(
        waiting.contains("\"approve\""),
        "says how to answer: {waiting}"
    );
    let finished = main[3].tool_results().pop().unwrap();
    assert!(finished.contains("bg done"), "{finished}");
    assert!(
        dir.path().join("work/out/bg.txt").exists(),
        "ran after the answer"
    );
    // The parent's yes was confirmed with the root's approver, carrying the child's path.
    let seen = recorder.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].agent_path, ["main", "worker"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_cannot_approve_what_its_own_approver_refuses() {
    let server = ScriptedModelServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    script_background_question(&server, "always", "touch out/refused.txt", "could not");
    // No approver: the main agent's root denies, so the model's "always" is refused too.
    let agents = build(&server, dir.path(), None).await;
    tokio::time::timeout(Duration::from_secs(120), agents.main_agent().run("go"))
        .await
        .expect("finishes")
        .expect("runs");
    assert!(!dir.path().join("work/out/refused.txt").exists());
    let worker = server.requests_for("worker-model");
    let denial = worker[1].tool_results().pop().unwrap();
    assert!(denial.contains("no approver is configured"), "{denial}");
}
