//! Messages sent to a running A2A child (issue 28, `SendMessage`), against our own server: they
//! answer the remote task's next `input-required` on the same task; without one they stay
//! unread for the host to report.

use std::sync::Arc;

use subagent_a2a::A2aExecutor;
use subagent_a2a::server::A2aServer;
use subagent_core::Inbox;
use subagent_spi::{
    InboxMessage, SubagentDefinition, SubagentExecutor, SubagentReference, TaskCall, TaskContext,
    TaskOutcome, TaskStatus,
};

use crate::common;

async fn definition(url: String) -> Arc<dyn SubagentDefinition> {
    let reference = SubagentReference::new(url, subagent_a2a::client::KIND);
    let def = subagent_a2a::client::A2aResolver::new()
        .resolve_a2a(&reference)
        .await
        .expect("resolves");
    Arc::new(def)
}

/// A server with the test agent at `/echo`.
async fn serve_echo() -> common::Srv {
    common::serve(A2aServer::builder().mount(common::agent_at("/echo", "echo", Arc::default())))
        .await
}

/// Runs `prompt` on `def` with `exec` and `ctx` (the run must not fail).
async fn run(
    exec: &A2aExecutor,
    def: &Arc<dyn SubagentDefinition>,
    prompt: &str,
    ctx: TaskContext,
) -> TaskOutcome {
    exec.execute(TaskCall::new("echo", "d", prompt), def.clone(), ctx)
        .await
        .expect("runs")
}

/// An inbox with `text` waiting in it from `main`, and a task context reading it.
fn inbox_holding(text: &str) -> (Inbox, TaskContext) {
    let inbox = Inbox::default();
    inbox.send(InboxMessage::new("main", text)).expect("queued");
    let ctx = TaskContext::new().with_messages(Arc::new(inbox.clone()));
    (inbox, ctx)
}

#[tokio::test]
async fn a_waiting_message_answers_the_remote_tasks_question_on_the_same_task() {
    let s = serve_echo().await;
    let def = definition(s.url("/echo")).await;
    let exec = A2aExecutor::new();
    assert!(
        exec.message_delivery(def.as_ref())
            .is_some_and(|d| d.contains("when it next asks for input")),
    );

    // Without a message, `ask` ends the run as needs_input (nobody answers).
    let out = run(&exec, &def, "ask", TaskContext::new()).await;
    assert_eq!(out.status, TaskStatus::NeedsInput, "{}", out.text);

    // With one waiting, it is the follow-up on the same task, which then completes with it.
    let (inbox, ctx) = inbox_holding("use version two");
    let out = run(&exec, &def, "ask", ctx).await;
    assert_eq!(out.status, TaskStatus::Completed, "{}", out.text);
    assert_eq!(out.text, "echo: use version two");
    assert_eq!(inbox.read(), 1);

    // A task that never asks for input leaves the message unread (the host reports it).
    let (inbox, ctx) = inbox_holding("too late");
    let out = run(&exec, &def, "plain work", ctx).await;
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(inbox.close(), [InboxMessage::new("main", "too late")]);
}

/// An approver that, asked the remote task's question, has a message sent to the run (as a
/// `SendMessage` arriving while a background task's question waits in `TaskOutput`) and then
/// never answers itself.
struct SendsInsteadOfAnswering {
    inbox: Inbox,
    asked: std::sync::atomic::AtomicUsize,
}

#[subagent_spi::async_trait]
impl subagent_spi::Approver for SendsInsteadOfAnswering {
    async fn request(
        &self,
        _request: subagent_spi::ApprovalRequest,
    ) -> subagent_spi::ApprovalDecision {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inbox
            .send(InboxMessage::new("main", "take route B"))
            .expect("queued");
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_message_sent_while_the_approver_is_asked_answers_the_question() {
    let s = serve_echo().await;
    let def = definition(s.url("/echo")).await;
    let inbox = Inbox::default();
    let approver = Arc::new(SendsInsteadOfAnswering {
        inbox: inbox.clone(),
        asked: Default::default(),
    });
    let ctx = TaskContext::new()
        .with_messages(Arc::new(inbox.clone()))
        .with_approver(approver.clone());
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        A2aExecutor::new().execute(TaskCall::new("echo", "d", "ask"), def, ctx),
    )
    .await
    .expect("the message answered the question; the run did not wait for the approver")
    .expect("runs");
    assert_eq!(out.status, TaskStatus::Completed, "{}", out.text);
    assert_eq!(out.text, "echo: take route B");
    assert_eq!(approver.asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(inbox.read(), 1);
}
