//! `subagent_type: "fork"` in the dispatch: the caller's conversation comes from the context
//! (a `ForkSource` the agent loop puts there); it belongs to that run only, and forks are
//! children like any other (depth + 1, the nesting limit, background runs).

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{FnKind, assert_error, assert_has, fn_ref};
use serde_json::json;
use subagent_spi::*;
use task_tool::TaskTool;

/// Stands for a run's conversation: records the calls it runs and where.
#[derive(Default)]
struct Conversation {
    seen: Mutex<Vec<(String, u32, String)>>,
}

#[async_trait]
impl SubagentExecutor for Conversation {
    async fn execute(
        &self,
        call: TaskCall,
        def: Arc<dyn SubagentDefinition>,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        self.seen.lock().expect("lock").push((
            def.name().to_string(),
            ctx.depth(),
            call.prompt.clone(),
        ));
        let mut o = TaskOutcome::completed(format!("forked: {}", call.prompt));
        o.usage.turns = 1;
        Ok(o)
    }
}

async fn task() -> TaskTool {
    TaskTool::builder()
        .subagent_type(
            FnKind::new()
                .agent("echo", |c, _| async move {
                    Ok(TaskOutcome::completed(c.prompt))
                })
                .into_type(),
        )
        .subagent_reference(fn_ref("echo"))
        .build()
        .await
        .expect("builds")
}

fn fork_input(prompt: &str) -> serde_json::Value {
    json!({"description": "d", "prompt": prompt, "subagent_type": "fork"})
}

/// `ctx` with its own conversation offered for forks.
fn with_conversation(ctx: TaskContext) -> (TaskContext, Arc<Conversation>) {
    let conversation = Arc::new(Conversation::default());
    let source = ForkSource::new(conversation.clone(), &ctx);
    (ctx.with_extension(source), conversation)
}

#[tokio::test]
async fn a_fork_runs_the_callers_conversation_one_level_down() {
    let task = task().await;
    let (ctx, conversation) = with_conversation(TaskContext::new().with_task_id("main"));
    let out = task.call_tool(fork_input("count"), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert_has(&out, "forked: count");
    assert_eq!(
        *conversation.seen.lock().expect("lock"),
        [("fork".to_string(), 1, "count".to_string())]
    );
    assert_eq!(out.children[0].agent, "fork");
    assert_eq!(out.children[0].kind, "FORK");
    // `Fork` is the same call; a registered agent is still reached by its name.
    assert!(!task.call_tool(fork_input("x"), &ctx).await.is_error);
    let out = task
        .call_tool(
            json!({"description": "d", "prompt": "hi", "subagent_type": "echo"}),
            &ctx,
        )
        .await;
    assert_eq!(out.content.lines().next(), Some("hi"));
}

#[tokio::test]
async fn without_the_callers_conversation_a_fork_is_a_clear_error() {
    let task = task().await;
    let out = task
        .call_tool(fork_input("count"), &TaskContext::new())
        .await;
    assert_error(&out, "conversation is not known here");
}

#[tokio::test]
async fn a_child_cannot_fork_the_conversation_it_inherited() {
    let task = task().await;
    let (ctx, conversation) = with_conversation(TaskContext::new().with_task_id("main"));
    // A child context copies the extensions, but the conversation is its parent's.
    let child = ctx.child("remote", Some("task_1".into()));
    let out = task.call_tool(fork_input("count"), &child).await;
    assert!(out.is_error);
    assert!(out.content.contains("conversation is not known here"));
    assert!(conversation.seen.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn forks_stop_at_the_nesting_limit() {
    let task = task().await;
    let max = task.config().max_depth;
    let deep = TaskContext::new().with_depth(max).with_task_id("deep");
    let (ctx, conversation) = with_conversation(deep);
    let out = task.call_tool(fork_input("deeper"), &ctx).await;
    assert_error(&out, &format!("max_depth={max}"));
    assert!(conversation.seen.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_fork_is_not_resumed() {
    let task = task().await;
    let (ctx, conversation) = with_conversation(TaskContext::new());
    let mut input = fork_input("again");
    input["resume"] = json!("sess_unknown");
    let out = task.call_tool(input, &ctx).await;
    assert_error(&out, "a fork cannot be resumed");
    assert!(conversation.seen.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_fork_runs_in_the_background_when_asked() {
    let task = task().await;
    let (ctx, conversation) = with_conversation(TaskContext::new());
    let call = TaskCall::new("fork", "d", "later").in_background(true);
    let Ok(task_tool::Dispatch::Background { agent, task_id }) = task.dispatch(call, &ctx).await
    else {
        panic!("a background fork starts");
    };
    assert_eq!(agent, "fork");
    let snap = task
        .output(&task_id, Some(Duration::from_secs(10)))
        .await
        .expect("known task");
    let task_tool::BackgroundState::Finished(outcome) = &snap.state else {
        panic!("finished: {snap:?}");
    };
    assert_eq!(outcome.text, "forked: later");
    assert_eq!(snap.kind, "FORK");
    assert_eq!(conversation.seen.lock().expect("lock").len(), 1);
}
