//! Messages sent to a running agent (issue 28, `SendMessage`): read at the next turn boundary,
//! and a run about to end with messages waiting takes one more turn for them.

use crate::common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use subagent_core::Inbox;
use subagent_runtime::{AgentRuntime, Limits, RunSpec, STEER_MESSAGE_PREFIX};
use subagent_spi::chat::{ChatMessage, ChatRequest, ChatResponse};
use subagent_spi::{
    ChatModel, InboxMessage, ModelError, TaskContext, TaskOutcome, TaskStatus, ToolOutput,
    async_trait,
};

/// The user messages of a request that carry messages sent to the run.
fn steering(req: &ChatRequest) -> Vec<String> {
    req.messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { content } if content.starts_with(STEER_MESSAGE_PREFIX) => {
                Some(content.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_message_sent_during_a_tool_call_is_read_before_the_next_turn() {
    let inbox = Inbox::default();
    let sender = inbox.clone();
    // The tool stands for the time between two turns: the message arrives while it runs.
    let work = tool("work", move |_input| {
        let sender = sender.clone();
        async move {
            sender
                .send(InboxMessage::new("main", "use the v2 API"))
                .expect("queued");
            Ok(ToolOutput::text("worked"))
        }
    });
    let model = ScriptedModel::new(vec![
        calls("", &[("c1", "work", json!({}))]),
        text("done with v2"),
    ]);
    let ctx = TaskContext::new().with_messages(Arc::new(inbox.clone()));
    let spec = RunSpec::new(model.clone(), "do it").with_tools(vec![work]);
    let out = AgentRuntime::default().run(spec, &ctx).await.expect("runs");
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, "done with v2");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    assert!(steering(&reqs[0]).is_empty());
    let steer = steering(&reqs[1]);
    assert_eq!(steer.len(), 1, "{:?}", reqs[1].messages);
    assert!(
        steer[0].ends_with("[Message from main]\nuse the v2 API"),
        "{}",
        steer[0]
    );
    // After the tool result, as the last message.
    assert_eq!(tool_results(&reqs[1])[0].1, "worked");
    assert!(matches!(
        reqs[1].messages.last(),
        Some(ChatMessage::User { .. })
    ));
    assert_eq!(inbox.read(), 1);
}

/// A model that sends a message to the run while it answers its first request.
struct SendsWhileAnswering {
    inner: Arc<ScriptedModel>,
    inbox: Inbox,
}

#[async_trait]
impl ChatModel for SendsWhileAnswering {
    fn model_name(&self) -> &str {
        "sends"
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ModelError> {
        if self.inner.requests().is_empty() {
            self.inbox
                .send(InboxMessage::new("main", "one more thing"))
                .expect("queued");
        }
        self.inner.chat(request).await
    }
}

/// Runs "go" under `limits` with an inbox, on a [`SendsWhileAnswering`] model that has
/// `replies` to give; returns the outcome, the scripted model and the inbox.
async fn run_sending_while_answering(
    replies: [&str; 2],
    limits: Limits,
) -> (TaskOutcome, Arc<ScriptedModel>, Inbox) {
    let inbox = Inbox::default();
    let scripted = ScriptedModel::new(replies.into_iter().map(text).collect());
    let model = Arc::new(SendsWhileAnswering {
        inner: scripted.clone(),
        inbox: inbox.clone(),
    });
    let ctx = TaskContext::new().with_messages(Arc::new(inbox.clone()));
    let spec = RunSpec::new(model, "go").with_limits(limits);
    let out = AgentRuntime::default().run(spec, &ctx).await.expect("runs");
    (out, scripted, inbox)
}

#[tokio::test]
async fn a_run_that_answers_while_a_message_waits_takes_one_more_turn() {
    let (out, scripted, inbox) =
        run_sending_while_answering(["first answer", "second answer"], Limits::default()).await;
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, "second answer");
    let reqs = scripted.requests();
    assert_eq!(reqs.len(), 2);
    assert!(steering(&reqs[1])[0].contains("one more thing"));
    assert!(!inbox.has_unread());

    // At its last allowed turn the answer stands: the run completes, the message stays unread
    // (its host reports it).
    let (out, _, inbox) = run_sending_while_answering(
        ["first answer", "never asked"],
        Limits::default().with_max_turns(1),
    )
    .await;
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, "first answer");
    assert_eq!(inbox.unread(), 1);

    // Without an inbox (or with nothing in it) the first answer ends the run.
    let scripted = ScriptedModel::new(vec![text("only answer")]);
    let out = AgentRuntime::default()
        .run(
            RunSpec::new(scripted.clone(), "go"),
            &TaskContext::new().with_messages(Arc::new(Inbox::default())),
        )
        .await
        .expect("runs");
    assert_eq!(out.text, "only answer");
    assert_eq!(scripted.requests().len(), 1);
}
