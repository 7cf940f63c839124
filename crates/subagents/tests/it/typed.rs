//! Typed results through the facade (`run_typed::<T>()`), over real HTTP with the scripted
//! model server: a local agent two deep (coordinator → leaf, each asked for a typed result),
//! and a remote coordinator served by our own A2A server on 127.0.0.1.

use crate::common;
use crate::common::Built as _;

use serde_json::json;
use subagent_testkit::{Reply, ScriptedModelServer};
use subagents::{TaskStatus, TypedRunError};

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Report {
    answer: u32,
    source: String,
}

/// Asks `agent` of `agents` "What is the answer?" for a typed [`Report`], which must be 42 from
/// `source`.
async fn expect_answer_42(agents: &subagents::Subagents, agent: &str, source: &str) {
    let report: Report = agents
        .run_typed(agent, "What is the answer?")
        .await
        .expect("a typed result");
    assert_eq!(
        report,
        Report {
            answer: 42,
            source: source.into()
        }
    );
}

fn structured(value: serde_json::Value) -> Reply {
    Reply::tool_calls(vec![("StructuredOutput", value)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_typed_two_deep_returns_the_value_and_feeds_errors_back() {
    let server = ScriptedModelServer::start().await;
    // The coordinator asks the leaf for a typed result of its own.
    server.push(Reply::tool_calls(vec![(
        "Task",
        json!({"description": "look up", "prompt": "the number", "subagent_type": "leaf",
               "output_schema": {"type": "object", "properties": {"n": {"type": "integer"}},
                                 "required": ["n"]}}),
    )]));
    // The leaf: wrong once, then right.
    server.push(structured(json!({"n": "forty-two"})));
    server.push(structured(json!({"n": 42})));
    // The coordinator: wrong once (missing field), then right.
    server.push(structured(json!({"answer": 42})));
    server.push(structured(json!({"answer": 42, "source": "leaf"})));
    let agents = common::team_builder(&server).built().await;

    expect_answer_42(&agents, "coordinator", "leaf").await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    // The leaf was offered the final tool with the coordinator's schema, and told why its first
    // value was refused.
    assert!(
        reqs[1]
            .tool_names()
            .contains(&"StructuredOutput".to_string())
    );
    let leaf_errors = common::last_message(&reqs[2].body);
    assert!(leaf_errors.contains("/n"), "{leaf_errors}");
    // The coordinator received the leaf's value as JSON.
    let to_coordinator = common::last_message(&reqs[3].body);
    assert!(to_coordinator.contains(r#"{\"n\":42}"#), "{to_coordinator}");
    // Its own first value lacked `source`: the error says so.
    let errors = common::last_message(&reqs[4].body);
    assert!(errors.contains("source"), "{errors}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_typed_fails_clearly_after_the_retries() {
    let server = ScriptedModelServer::start().await;
    for _ in 0..3 {
        server.push(structured(json!({"answer": "many"})));
    }
    let agents = common::team_builder(&server).built().await;
    let err = agents
        .run_typed::<Report>("leaf", "What is the answer?")
        .await
        .unwrap_err();
    match &err {
        TypedRunError::NoResult {
            agent,
            status,
            text,
        } => {
            assert_eq!(agent, "leaf");
            assert_eq!(*status, TaskStatus::Failed);
            assert!(text.starts_with("invalid output:"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        server.requests().len(),
        3,
        "2 retries, then no more model calls"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_files_output_schema_is_the_default() {
    let dir = tempfile::tempdir().expect("tmp");
    let agents_dir = common::write_agent(
        dir.path(),
        "counter",
        "---\nname: counter\ndescription: counts\noutputSchema:\n  type: object\n  properties:\n    count: {type: integer}\n  required: [count]\n---\nCount things.\n",
    );
    let server = ScriptedModelServer::start().await;
    server.push(Reply::text("```json\n{\"count\": 7}\n```"));
    let agents = subagents::Subagents::builder()
        .model(server.openai_model("m"))
        .agents_dir(agents_dir)
        .workspace(dir.path().join("work"))
        .built()
        .await;
    let call = subagents::TaskCall::new("counter", "count", "how many?");
    let outcome = match agents
        .dispatch(call, &subagents::TaskContext::new())
        .await
        .expect("runs")
    {
        subagents::Dispatch::Foreground { outcome, .. } => outcome,
        other => panic!("{other:?}"),
    };
    assert_eq!(outcome.status, TaskStatus::Completed, "{}", outcome.text);
    assert_eq!(outcome.structured, Some(json!({"count": 7})));
    assert_eq!(outcome.text, r#"{"count":7}"#);
    assert!(
        server.requests()[0]
            .tool_names()
            .contains(&"StructuredOutput".to_string())
    );
}

#[cfg(feature = "server")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_typed_over_a2a_sends_the_schema_and_reads_the_data_part() {
    // The remote side: our A2A server serving the team's coordinator, which delegates to its
    // leaf and ends with its final tool (it received the schema as a data part).
    let remote_model = ScriptedModelServer::start().await;
    remote_model.push(Reply::tool_calls(vec![common::task("leaf", "LEAF")]));
    remote_model.push(Reply::text("42, from the leaf"));
    remote_model.push(structured(json!({"answer": 42, "source": "remote leaf"})));
    let remote = common::team_builder(&remote_model).built().await;
    let (url, _server) =
        common::serve_a2a(remote, &subagents::ServeOptions::new(), "coordinator").await;

    let model = ScriptedModelServer::start().await;
    let agents = subagents::Subagents::builder()
        .model(model.openai_model("m"))
        .a2a_reference(common::remote_reference(&url, "remote-coordinator"))
        .workspace(tempfile::tempdir().expect("tmp").keep())
        .built()
        .await;
    expect_answer_42(&agents, "remote-coordinator", "remote leaf").await;
    let reqs = remote_model.requests();
    assert_eq!(reqs.len(), 3);
    let offered: Vec<_> = reqs[0].tools().to_vec();
    let final_tool = offered
        .iter()
        .find(|t| t["function"]["name"] == "StructuredOutput")
        .expect("the remote coordinator is offered the final tool");
    assert_eq!(
        final_tool["function"]["parameters"]["required"],
        json!(["answer", "source"])
    );
    // The schema part is not part of the remote prompt.
    assert!(!common::last_message(&reqs[0].body).contains("output_schema"));
}
