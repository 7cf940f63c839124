//! Approvals through `Subagents::mcp_server`, over streamable HTTP on 127.0.0.1 with real
//! rmcp clients and the scripted model server: a client that supports elicitation is asked
//! (and its answer decides), one that does not gets a denial its model reads.
#![cfg(feature = "mcp")]

use crate::common;

use std::sync::{Arc, Mutex};

use common::{bash_call, worker_task_call};
use rmcp::model::{
    CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use subagent_testkit::Reply;
use subagent_testkit::mcp::tool_text as text;

/// A client that declares form elicitation and answers every question with `answer`.
struct Answering {
    answer: Value,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Answering {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        {
            // Recorded, asserted by the test (a panic here would leave the server waiting).
            let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
            let choices: Vec<String> = schema["properties"]["decision"]["oneOf"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["const"].as_str().map(str::to_string))
                .collect();
            self.asked
                .lock()
                .unwrap()
                .push(format!("{message}\nchoices: {}", choices.join(",")));
        }
        let mut r: ElicitResult = serde_json::from_value(json!({"action": "accept"})).unwrap();
        r.action = ElicitationAction::Accept;
        r.content = Some(self.answer.clone());
        Ok(r)
    }

    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        ClientConfig::new(caps, Implementation::new("eliciting-test-client", "1.0"))
    }
}

/// Serves the worker (see [`common::mcp_worker`]), its model scripted to call Bash with
/// `command` and then answer `answer`.
async fn serve(command: &str, answer: &str) -> common::McpWorker {
    common::mcp_worker(vec![bash_call(command), Reply::text(answer)], |s| s).await
}

/// An [`Answering`] client answering `answer`, connected to `url`, and the questions it is
/// asked.
async fn answering(
    answer: Value,
    url: &str,
) -> (
    RunningService<RoleClient, Answering>,
    Arc<Mutex<Vec<String>>>,
) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = Answering {
        answer,
        asked: asked.clone(),
    }
    .serve(StreamableHttpClientTransport::from_uri(url))
    .await
    .expect("connects");
    (client, asked)
}

async fn call_task<S: ClientHandler>(client: &RunningService<RoleClient, S>) -> CallToolResult {
    client
        .call_tool(worker_task_call())
        .await
        .expect("tools/call answered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_elicitation_is_asked_and_its_yes_runs_the_call() {
    let served = serve("touch out/asked.txt", "touched it").await;
    let (client, asked) = answering(json!({"decision": "yes"}), &served.url).await;
    let result = call_task(&client).await;
    assert!(text(&result).contains("touched it"), "{}", text(&result));
    assert!(
        served.dir.path().join("work/out/asked.txt").exists(),
        "the user said yes"
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].contains("worker wants to run Bash: touch out/asked.txt")
            && asked[0].ends_with("choices: yes,always,no"),
        "{}",
        asked[0]
    );
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_with_a_reason_from_the_client_is_what_the_model_reads() {
    let served = serve("touch out/refused.txt", "not touched").await;
    let answer = json!({"decision": "no", "reason": "not in this repository"});
    let (client, _) = answering(answer, &served.url).await;
    call_task(&client).await;
    assert!(!served.dir.path().join("work/out/refused.txt").exists());
    let results = served.model.requests()[1].tool_results();
    assert!(results[0].contains("not in this repository"), "{results:?}");
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_gets_a_denial_the_model_reads() {
    let served = serve("touch out/never.txt", "could not touch it").await;
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
            .await
            .expect("connects");
    let result = call_task(&client).await;
    assert!(
        text(&result).contains("could not touch it"),
        "{}",
        text(&result)
    );
    assert!(!served.dir.path().join("work/out/never.txt").exists());
    let results = served.model.requests()[1].tool_results();
    assert!(
        results[0].contains("not approved") && results[0].contains("does not support elicitation"),
        "{results:?}"
    );
    let _ = client.cancel().await;
}
