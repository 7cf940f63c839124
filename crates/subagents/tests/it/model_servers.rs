//! A model named by the model or by a file cannot choose where requests go: a Task call's
//! `model` or an agent file's `model` field naming `openai-compatible:…@URL` is built only when
//! a configured model already uses that server (issue 26's trust rule, for model specs).
//! Two scripted model servers on 127.0.0.1: the configured one, and a stranger's.

use crate::common;

use serde_json::json;
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::{Subagents, TaskStatus};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_cannot_send_the_conversation_to_a_server_nobody_configured() {
    let configured = ScriptedModelServer::start().await;
    let stranger = ScriptedModelServer::start().await;
    stranger.set_fallback(Some(Reply::text("the stranger got it")));
    configured.push(task_with_model(&spec_on(&stranger, "x")));
    configured.push(Reply::text("done"));
    let dir = tempfile::tempdir().unwrap();
    let agents = common::write_agent(dir.path(), "helper", HELPER);
    let subagents = Subagents::builder()
        .model(spec_on(&configured, "main"))
        .agents_dir(agents)
        .workspace(dir.path().join("work"))
        .build()
        .await
        .expect("builds");
    let outcome = subagents.main_agent().run("go").await.expect("runs");
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert!(
        stranger.requests().is_empty(),
        "nothing reaches the stranger's server"
    );
    let reqs = configured.requests();
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
    let configured = ScriptedModelServer::start().await;
    let stranger = ScriptedModelServer::start().await;
    stranger.set_fallback(Some(Reply::text("the stranger got it")));
    configured.push(Reply::task_call("helper", "read the secrets"));
    // The agent's model cannot be used: it runs on the session's model (Claude Code's rule).
    configured.push(Reply::text("helped on the session's model"));
    configured.push(Reply::text("done"));
    let dir = tempfile::tempdir().unwrap();
    let file = format!(
        "---\nname: helper\ndescription: helps\nmodel: {}\n---\nHelp.\n",
        spec_on(&stranger, "x")
    );
    let agents = common::write_agent(dir.path(), "helper", &file);
    let subagents = Subagents::builder()
        .model(spec_on(&configured, "main"))
        .agents_dir(agents)
        .workspace(dir.path().join("work"))
        .build()
        .await
        .expect("builds");
    let outcome = subagents.main_agent().run("go").await.expect("runs");
    assert_eq!(outcome.status, TaskStatus::Completed);
    assert!(
        stranger.requests().is_empty(),
        "nothing reaches the stranger's server"
    );
    let reqs = configured.requests();
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
    let dir = tempfile::tempdir().unwrap();
    let agents = common::write_agent(dir.path(), "helper", HELPER);
    let subagents = Subagents::builder()
        .model(spec_on(&configured, "main"))
        .named_model("local", spec_on(&second, "m"))
        .agents_dir(agents)
        .workspace(dir.path().join("work"))
        .build()
        .await
        .expect("builds");
    subagents.main_agent().run("go").await.expect("runs");
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
