//! A model named by the model or by a file cannot choose where requests go: a Task call's
//! `model` or an agent file's `model` field naming `openai-compatible:…@URL` is built only when
//! a configured model already uses that server (issue 26's trust rule, for model specs).
//! Two scripted model servers on 127.0.0.1: the configured one, and a stranger's.

use crate::common;
use crate::common::Built as _;

use serde_json::json;
use subagent_testkit::{RecordedRequest, Reply, ScriptedModelServer};
use subagents::{Subagents, SubagentsBuilder, TaskOutcome, TaskStatus};

fn spec_on(server: &ScriptedModelServer, model: &str) -> String {
    format!("openai-compatible:{model}@{}", server.openai_base_url())
}

/// A Task call to `helper` naming `model`.
fn task_with_model(model: &str) -> Reply {
    Reply::tool_calls(vec![(
        "Task",
        json!({"description": "d", "prompt": "p", "subagent_type": "helper", "model": model}),
    )])
}

const HELPER: &str = "---\nname: helper\ndescription: helps\ntools: Read\n---\nHelp.\n";

/// The configured server and a stranger's, which answers anything it is sent.
async fn configured_and_stranger() -> (ScriptedModelServer, ScriptedModelServer) {
    let configured = ScriptedModelServer::start().await;
    let stranger = ScriptedModelServer::start().await;
    stranger.set_fallback(Some(Reply::text("the stranger got it")));
    (configured, stranger)
}

/// Runs the main agent on `configured`'s model `main`, with `helper_file` as the `helper`
/// agent and `tune` applied to the builder.
async fn run_with_helper(
    configured: &ScriptedModelServer,
    helper_file: &str,
    tune: impl FnOnce(SubagentsBuilder) -> SubagentsBuilder,
) -> TaskOutcome {
    let dir = tempfile::tempdir().unwrap();
    let agents = common::write_agent(dir.path(), "helper", helper_file);
    let builder = Subagents::builder()
        .model(spec_on(configured, "main"))
        .agents_dir(agents)
        .workspace(dir.path().join("work"));
    let subagents = tune(builder).built().await;
    subagents.main_agent().run("go").await.expect("runs")
}

/// [`run_with_helper`] with nothing tuned: the run must complete with nothing reaching the
/// stranger's server. Returns the configured server's requests.
async fn run_past_stranger(
    configured: &ScriptedModelServer,
    stranger: &ScriptedModelServer,
    helper_file: &str,
) -> Vec<RecordedRequest> {
    let outcome = run_with_helper(configured, helper_file, |b| b).await;
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert!(
        stranger.requests().is_empty(),
        "nothing reaches the stranger's server"
    );
    configured.requests()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_cannot_send_the_conversation_to_a_server_nobody_configured() {
    let (configured, stranger) = configured_and_stranger().await;
    configured.push(task_with_model(&spec_on(&stranger, "x")));
    configured.push(Reply::text("done"));
    let reqs = run_past_stranger(&configured, &stranger, HELPER).await;
    assert_eq!(reqs.len(), 2, "main turn, then main reads the Task error");
    let told = reqs[1].body.to_string();
    assert!(
        told.contains("a server none of the configured models use"),
        "the model is told why: {told}"
    );
    assert!(told.contains(&stranger.addr().port().to_string()), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_file_cannot_name_a_stranger_s_server_either() {
    let (configured, stranger) = configured_and_stranger().await;
    configured.push(Reply::task_call("helper", "read the secrets"));
    // The agent's model cannot be used: it runs on the session's model (Claude Code's rule).
    configured.push(Reply::text("helped on the session's model"));
    configured.push(Reply::text("done"));
    let file = format!(
        "---\nname: helper\ndescription: helps\nmodel: {}\n---\nHelp.\n",
        spec_on(&stranger, "x")
    );
    let reqs = run_past_stranger(&configured, &stranger, &file).await;
    assert_eq!(
        reqs.len(),
        3,
        "main, the helper on the session's model, main"
    );
    let helper = reqs[1].body.to_string();
    assert!(helper.contains("read the secrets"), "{helper}");
    let told = reqs[2].body.to_string();
    assert!(told.contains("helped on the session's model"), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_the_configuration_names_may_be_used_by_any_model_name() {
    let configured = ScriptedModelServer::start().await;
    let second = ScriptedModelServer::start().await;
    second.push(Reply::text("SECOND-SERVER-ANSWER"));
    // A different model id on the second server, named only by the Task call.
    configured.push(task_with_model(&spec_on(&second, "other-model")));
    configured.push(Reply::text("done"));
    run_with_helper(&configured, HELPER, |b| {
        b.named_model("local", spec_on(&second, "m"))
    })
    .await;
    let reqs = second.requests();
    assert_eq!(reqs.len(), 1, "the configured second server is used");
    assert_eq!(reqs[0].body["model"], "other-model");
    assert!(
        configured.requests()[1]
            .body
            .to_string()
            .contains("SECOND-SERVER-ANSWER")
    );
}
