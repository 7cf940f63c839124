//! A served agent's conversation survives a restart of `subagents serve` on a SQLite store:
//! after a SIGKILL and a new process on the same file, a message in the same A2A `contextId`
//! resumes the agent session the first message left (the model sees the earlier turn).

use crate::common;

use common::{spawn_serve, write_agent};
use serde_json::{Value, json};
use subagent_testkit::Reply;

/// `SendMessage` (A2A 1.0 JSON-RPC) to `url` with `text`, in `context` when given; returns
/// the task of the reply.
async fn send(url: &str, text: &str, context: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": format!("m-{text}"),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(c) = context {
        message["contextId"] = json!(c);
    }
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": message},
    });
    let reply = common::a2a_post(url, &body).await;
    let task = reply["result"]["task"].clone();
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "the task completes: {reply}"
    );
    task
}

/// The texts of the user and assistant messages of a model request (OpenAI chat format).
fn conversation(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| matches!(m["role"].as_str(), Some("user" | "assistant")))
        .map(|m| m["content"].to_string())
        .collect()
}

#[test]
fn a_context_resumes_its_agent_session_after_a_restart_on_sqlite() {
    let (rt, model) = common::scripted();
    model.push(Reply::text("the first answer"));
    model.push(Reply::text("the second answer"));
    let home = tempfile::tempdir().expect("home");
    let root = home.path();
    let agents = write_agent(
        root,
        "helper",
        "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    );
    let store = format!("sqlite:{}", root.join("served.db").display());
    let serve = |rt: &tokio::runtime::Runtime| {
        spawn_serve(rt, root, |cmd| {
            cmd.args(["--store", &store])
                .args(["--model", &model.openai_model("m")])
                .arg("--agents")
                .arg(&agents);
        })
    };

    let first = serve(&rt);
    let url = format!("{}/helper", first.base);
    let task = rt.block_on(send(&url, "the first question", None));
    let context = task["contextId"].as_str().expect("contextId").to_owned();
    drop(first); // SIGKILL, then wait

    let second = serve(&rt);
    let url = format!("{}/helper", second.base);
    let task = rt.block_on(send(&url, "a follow-up", Some(&context)));
    assert_eq!(task["contextId"], context.as_str());

    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "one model request per message");
    let seen = conversation(&reqs[1].body);
    let text = seen.join("\n");
    assert!(
        text.contains("the first question")
            && text.contains("the first answer")
            && text.contains("a follow-up"),
        "the follow-up resumes the session of the first message: {seen:?}"
    );
    assert!(
        seen.len() >= 3,
        "the earlier turn comes before the follow-up: {seen:?}"
    );
    drop(second);
}
