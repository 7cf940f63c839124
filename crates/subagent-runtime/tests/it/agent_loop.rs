//! Behaviour of the agent loop against an in-process scripted model.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use subagent_runtime::{AgentRuntime, Limits, RunSpec};
use subagent_spi::chat::ChatMessage;
use subagent_spi::{
    ModelError, ProgressKind, SubagentError, TaskContext, TaskOutcome, TaskStatus, ToolError,
    ToolOutput, Usage, UsageNode,
};

const GUARD: Duration = Duration::from_secs(20);

/// Runs `spec` under `ctx` on a default runtime; the run must not fail.
async fn run(spec: RunSpec, ctx: &TaskContext) -> TaskOutcome {
    AgentRuntime::default().run(spec, ctx).await.unwrap()
}

/// Asserts that the run stopped at the named limit.
#[track_caller]
fn assert_limit(out: &TaskOutcome, limit: &str) {
    assert_eq!(out.status, TaskStatus::LimitReached);
    assert_eq!(
        out.limit.as_ref().map(ToString::to_string).as_deref(),
        Some(limit)
    );
}

/// The text deltas `rec` saw, in order.
fn text_deltas(rec: &Recorder) -> impl Iterator<Item = String> {
    rec.kinds().into_iter().filter_map(|k| match k {
        ProgressKind::TextDelta { text } => Some(text),
        _ => None,
    })
}

/// A model that calls `echo` once (saying `said` with the call), then gives `replies` in turn.
fn echo_once_then(said: &str, replies: &[&str]) -> Arc<ScriptedModel> {
    let mut steps = vec![calls(said, &[("c1", "echo", json!({"text": "hi"}))])];
    steps.extend(replies.iter().map(|r| text(r)));
    ScriptedModel::new(steps)
}

fn echo() -> Arc<dyn subagent_spi::Tool> {
    tool("echo", |input| async move {
        Ok(ToolOutput::text(format!(
            "echo: {}",
            input["text"].as_str().unwrap_or("")
        )))
    })
}

#[tokio::test]
async fn multi_turn_tool_use_feeds_results_back() {
    let model = ScriptedModel::new(vec![
        calls("let me check", &[("c1", "echo", json!({"text": "hi"}))]),
        calls("", &[("c2", "echo", json!({"text": "again"}))]),
        text("all done"),
    ]);
    let rec = Arc::new(Recorder::default());
    let ctx = TaskContext::new().with_progress(rec.clone());
    let spec = RunSpec::new(model.clone(), "say hi")
        .with_system("be brief")
        .with_model_name("gpt-test")
        .with_tools(vec![echo()]);
    let out = run(spec, &ctx).await;

    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, "all done");
    assert_eq!(out.usage.turns, 3);
    assert_eq!(out.usage.input_tokens, 30);
    assert_eq!(out.usage.output_tokens, 15);
    assert_eq!(out.usage.model.as_deref(), Some("scripted-1"));
    assert!(out.session_id.as_deref().unwrap().starts_with("sess_"));
    assert!(out.limit.is_none());

    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].system.as_deref(), Some("be brief"));
    assert_eq!(reqs[0].model.as_deref(), Some("gpt-test"));
    assert_eq!(reqs[0].tools.len(), 1);
    assert_eq!(reqs[0].tools[0].name, "echo");
    assert_eq!(reqs[0].messages, vec![ChatMessage::user("say hi")]);
    // the second request carries the first reply and its tool result
    assert_eq!(reqs[1].messages.len(), 3);
    assert!(matches!(&reqs[1].messages[1],
        ChatMessage::Assistant { content, tool_calls } if content == "let me check" && tool_calls[0].id == "c1"));
    assert_eq!(
        tool_results(&reqs[1]),
        vec![("c1".to_string(), "echo: hi".to_string(), false)]
    );
    assert_eq!(reqs[2].messages.len(), 5);

    let kinds = rec.kinds();
    // Started/Finished belong to whoever starts the task (the Task tool), not to the loop:
    // the loop reporting them too printed every child twice.
    assert!(
        !kinds.iter().any(|k| matches!(
            k,
            ProgressKind::Started { .. } | ProgressKind::Finished { .. }
        )),
        "{kinds:?}"
    );
    // The session is announced first (a ledger can point at a run that never ends), then
    // the turns.
    assert!(
        matches!(kinds.first(), Some(ProgressKind::Session { session_id }) if Some(session_id.as_str()) == out.session_id.as_deref()),
        "{kinds:?}"
    );
    assert!(matches!(kinds.get(1), Some(ProgressKind::Turn { turn: 1 })));
    let turns: Vec<u32> = kinds
        .iter()
        .filter_map(|k| match k {
            ProgressKind::Turn { turn } => Some(*turn),
            _ => None,
        })
        .collect();
    assert_eq!(turns, vec![1, 2, 3]);
    assert!(kinds.iter().any(|k| matches!(k, ProgressKind::ToolCall { id, name, input } if id == "c1" && name == "echo" && input["text"] == "hi")));
    assert!(kinds.iter().any(|k| matches!(k, ProgressKind::ToolResult { id, is_error: false, preview, .. } if id == "c2" && preview == "echo: again")));
    assert_eq!(
        kinds
            .iter()
            .filter(|k| matches!(k, ProgressKind::Usage { .. }))
            .count(),
        3
    );
}

#[tokio::test]
async fn two_tool_calls_in_one_turn_run_concurrently_and_results_keep_call_order() {
    // Each tool waits on a shared barrier of two: run one after the other, the first would wait
    // forever, so finishing at all proves the calls overlapped.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let b1 = barrier.clone();
    let slow_first = tool("first", move |_| {
        let b = b1.clone();
        async move {
            b.wait().await;
            // finish after the second one
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok(ToolOutput::text("first result"))
        }
    });
    let b2 = barrier.clone();
    let second = tool("second", move |_| {
        let b = b2.clone();
        async move {
            b.wait().await;
            Ok(ToolOutput::text("second result"))
        }
    });
    let model = ScriptedModel::new(vec![
        calls("", &[("a", "first", json!({})), ("b", "second", json!({}))]),
        text("both ran"),
    ]);
    let spec = RunSpec::new(model.clone(), "go").with_tools(vec![slow_first, second]);
    let out = tokio::time::timeout(
        GUARD,
        AgentRuntime::default().run(spec, &TaskContext::new()),
    )
    .await
    .expect("tools ran concurrently (sequential calls would deadlock on the barrier)")
    .unwrap();
    assert_eq!(out.text, "both ran");
    let reqs = model.requests();
    assert_eq!(
        tool_results(&reqs[1]),
        vec![
            ("a".to_string(), "first result".to_string(), false),
            ("b".to_string(), "second result".to_string(), false)
        ]
    );
}

fn looping_model(n: usize) -> Arc<ScriptedModel> {
    ScriptedModel::new(
        (1..=n)
            .map(|i| {
                calls(
                    &format!("working {i}"),
                    &[(&format!("c{i}"), "echo", json!({"text": "x"}))],
                )
            })
            .collect(),
    )
}

/// Runs the `loop` agent (ten turns of tool calls) under `limits` and `ctx`; its model and
/// outcome.
async fn run_looping(limits: Limits, ctx: &TaskContext) -> (Arc<ScriptedModel>, TaskOutcome) {
    let model = looping_model(10);
    let spec = RunSpec::new(model.clone(), "loop")
        .with_tools(vec![echo()])
        .with_limits(limits);
    (model, run(spec, ctx).await)
}

/// A model that streams `deltas` then hangs, a recorder of progress and a context reporting
/// to it.
fn hanging_stream(deltas: [&str; 2]) -> (Arc<ScriptedModel>, Arc<Recorder>, TaskContext) {
    let model = ScriptedModel::new(vec![Step::StreamThenHang(
        deltas.iter().map(|d| d.to_string()).collect(),
    )]);
    let rec = Arc::new(Recorder::default());
    let ctx = TaskContext::new().with_progress(rec.clone());
    (model, rec, ctx)
}

/// Cancels `ctx`, then joins `run` (within [`GUARD`]: `what` says what that shows), which must
/// end cancelled with the text `partial`.
async fn cancel_and_join(
    ctx: &TaskContext,
    run: tokio::task::JoinHandle<Result<TaskOutcome, SubagentError>>,
    what: &str,
    partial: &str,
) -> TaskOutcome {
    ctx.cancel().cancel();
    let out = in_time(run, what).await.unwrap().unwrap();
    assert_eq!(out.status, TaskStatus::Cancelled);
    assert_eq!(out.text, partial);
    out
}

/// Runs `spec` under `ctx`, which must stop at its deadline within [`GUARD`].
async fn run_to_deadline(spec: RunSpec, ctx: &TaskContext) -> TaskOutcome {
    let out = in_time(
        AgentRuntime::default().run(spec, ctx),
        "the deadline stopped the run",
    )
    .await
    .unwrap();
    assert_limit(&out, "deadline");
    out
}

/// Awaits `fut`, which must finish within [`GUARD`] (`what` says what it shows).
async fn in_time<F: std::future::Future>(fut: F, what: &str) -> F::Output {
    tokio::time::timeout(GUARD, fut).await.expect(what)
}

#[tokio::test]
async fn max_turns_stops_with_the_limit_named_and_partial_text() {
    let (model, out) = run_looping(Limits::default().with_max_turns(3), &TaskContext::new()).await;
    assert_limit(&out, "max_turns=3");
    assert_eq!(out.text, "working 3");
    assert_eq!(out.usage.turns, 3);
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn the_contexts_limits_win_when_smaller() {
    for (limits, ctx, limit, requests) in [
        (
            Limits::default(),
            TaskContext::new().with_max_turns(Some(2)),
            "max_turns=2",
            2,
        ),
        (
            Limits::default().with_max_tokens(1000),
            TaskContext::new().with_max_tokens(Some(10)),
            "max_tokens=10",
            1,
        ),
    ] {
        let (model, out) = run_looping(limits, &ctx).await;
        assert_eq!(
            out.limit.as_ref().map(ToString::to_string).as_deref(),
            Some(limit)
        );
        assert_eq!(model.requests().len(), requests);
    }
}

#[tokio::test]
async fn token_budget_stops_the_run() {
    // every reply costs 10 + 5 tokens: after two turns 30 >= 25
    let (model, out) =
        run_looping(Limits::default().with_max_tokens(25), &TaskContext::new()).await;
    assert_limit(&out, "max_tokens=25");
    assert_eq!(out.text, "working 2");
    assert_eq!(model.requests().len(), 2);
    assert_eq!(out.usage.total_tokens(), 30);
}

#[tokio::test]
async fn cancel_during_a_slow_tool_returns_cancelled_with_partial_text() {
    let started = Arc::new(tokio::sync::Notify::new());
    let model = ScriptedModel::new(vec![
        calls("looking around", &[("s1", "slow", json!({}))]),
        text("resumed fine"),
    ]);
    let runtime = AgentRuntime::default();
    let ctx = TaskContext::new();
    let spec =
        RunSpec::new(model.clone(), "go").with_tools(vec![slow_tool("slow", started.clone())]);
    let run = {
        let runtime = runtime.clone();
        let ctx = ctx.clone();
        tokio::spawn(async move { runtime.run(spec, &ctx).await })
    };
    in_time(started.notified(), "the slow tool started").await;
    let out = cancel_and_join(
        &ctx,
        run,
        "cancellation stopped the run promptly",
        "looking around",
    )
    .await;

    // the saved transcript answers the interrupted call, so resuming works
    let spec = RunSpec::resume(model.clone(), out.session_id.unwrap(), "continue");
    let out2 = runtime.run(spec, &TaskContext::new()).await.unwrap();
    assert_eq!(out2.text, "resumed fine");
    let last = model.requests().pop().unwrap();
    let results = tool_results(&last);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "s1");
    assert!(results[0].1.contains("cancelled"), "{}", results[0].1);
    assert!(results[0].2);
}

#[tokio::test]
async fn cancel_before_start_makes_no_model_call() {
    let model = ScriptedModel::new(vec![text("never")]);
    let ctx = TaskContext::new();
    ctx.cancel().cancel();
    let out = run(RunSpec::new(model.clone(), "go"), &ctx).await;
    assert_eq!(out.status, TaskStatus::Cancelled);
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn deadline_interrupts_a_streaming_model_call_and_keeps_streamed_text() {
    let (model, rec, ctx) = hanging_stream(["partial ", "answer"]);
    let spec = RunSpec::new(model.clone(), "go")
        .streaming(true)
        .with_limits(Limits::default().with_deadline(Instant::now() + Duration::from_millis(1000)));
    let out = run_to_deadline(spec, &ctx).await;
    assert_eq!(out.text, "partial answer");
    let deltas: Vec<String> = text_deltas(&rec).collect();
    assert_eq!(deltas, vec!["partial ", "answer"]);
}

#[tokio::test]
async fn context_deadline_interrupts_a_slow_tool() {
    let started = Arc::new(tokio::sync::Notify::new());
    let model = ScriptedModel::new(vec![calls("checking", &[("s", "slow", json!({}))])]);
    let spec = RunSpec::new(model.clone(), "go").with_tools(vec![slow_tool("slow", started)]);
    let ctx = TaskContext::new().with_timeout(Duration::from_millis(1000));
    let out = run_to_deadline(spec, &ctx).await;
    assert_eq!(out.text, "checking");
}

#[tokio::test]
async fn resume_continues_a_transcript() {
    let model = echo_once_then("", &["first answer", "second answer"]);
    let runtime = AgentRuntime::default();
    let spec = RunSpec::new(model.clone(), "first question")
        .with_system("sys")
        .with_tools(vec![echo()]);
    let out = runtime.run(spec, &TaskContext::new()).await.unwrap();
    assert_eq!(out.text, "first answer");
    let session = out.session_id.unwrap();

    let spec =
        RunSpec::resume(model.clone(), session.clone(), "second question").with_tools(vec![echo()]);
    let out2 = runtime.run(spec, &TaskContext::new()).await.unwrap();
    assert_eq!(out2.text, "second answer");
    assert_eq!(out2.session_id.as_deref(), Some(session.as_str()));
    assert_eq!(out2.usage.turns, 1);

    let reqs = model.requests();
    let last = &reqs[2];
    assert_eq!(
        last.system.as_deref(),
        Some("sys"),
        "stored system prompt kept"
    );
    // user, assistant (tool call), tool result, assistant answer, new user message
    assert_eq!(last.messages.len(), 5);
    assert_eq!(last.messages[0], ChatMessage::user("first question"));
    assert_eq!(tool_results(last).len(), 1);
    assert_eq!(last.messages[3], ChatMessage::assistant("first answer"));
    assert_eq!(last.messages[4], ChatMessage::user("second question"));
}

#[tokio::test]
async fn resume_of_an_unknown_session_is_a_clear_error() {
    let model = ScriptedModel::new(vec![text("never")]);
    let err = AgentRuntime::default()
        .run(
            RunSpec::resume(model.clone(), "sess_nope", "hi"),
            &TaskContext::new(),
        )
        .await
        .unwrap_err();
    match &err {
        SubagentError::Resume { session, reason } => {
            assert_eq!(session, "sess_nope");
            assert!(reason.contains("no transcript"), "{reason}");
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().contains("sess_nope"));
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn unknown_tools_and_tool_errors_go_back_to_the_model() {
    let fails = tool("fails", |_| async {
        Err::<ToolOutput, _>(ToolError::failed("fails", "disk on fire"))
    });
    let panics = tool("panics", |_| async { panic!("tool bug") });
    let model = ScriptedModel::new(vec![
        calls(
            "",
            &[
                ("u", "nope", json!({})),
                ("f", "fails", json!({})),
                ("p", "panics", json!({})),
            ],
        ),
        text("recovered"),
    ]);
    let spec = RunSpec::new(model.clone(), "go").with_tools(vec![fails, panics]);
    let out = run(spec, &TaskContext::new()).await;
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, "recovered");
    let results = tool_results(&model.requests()[1]);
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].0, "u");
    assert!(results[0].2);
    assert!(
        results[0].1.contains("unknown tool `nope`"),
        "{}",
        results[0].1
    );
    assert!(results[0].1.contains("fails, panics"), "{}", results[0].1);
    assert!(results[1].2);
    assert!(results[1].1.contains("disk on fire"), "{}", results[1].1);
    assert!(results[2].2);
    assert!(results[2].1.contains("panicked"), "{}", results[2].1);
}

#[tokio::test]
async fn oversized_tool_output_is_truncated_with_a_marker() {
    let big = tool("big", |_| async { Ok(ToolOutput::text("x".repeat(100))) });
    let model = ScriptedModel::new(vec![calls("", &[("b", "big", json!({}))]), text("ok")]);
    let spec = RunSpec::new(model.clone(), "go")
        .with_tools(vec![big])
        .with_limits(Limits::default().with_max_tool_output_chars(10));
    run(spec, &TaskContext::new()).await;
    let results = tool_results(&model.requests()[1]);
    assert_eq!(
        results[0].1,
        format!(
            "{}\n[output truncated: 90 characters cut of 100]",
            "x".repeat(10)
        )
    );
}

#[tokio::test]
async fn streaming_reports_text_deltas() {
    let model = ScriptedModel::new(vec![text("hello streaming world")]);
    let rec = Arc::new(Recorder::default());
    let ctx = TaskContext::new().with_progress(rec.clone());
    let out = run(RunSpec::new(model, "go").streaming(true), &ctx).await;
    assert_eq!(out.text, "hello streaming world");
    let joined: String = text_deltas(&rec).collect();
    assert_eq!(joined, "hello streaming world");
}

#[tokio::test]
async fn a_failing_model_call_is_an_error_naming_agent_and_turn() {
    let model = ScriptedModel::new(vec![Step::Fail(ModelError::Unauthorized {
        provider: "openai".into(),
        message: "bad key".into(),
        source: None,
    })]);
    let ctx = TaskContext::new().with_agent("explorer");
    let err = AgentRuntime::default()
        .run(RunSpec::new(model, "go"), &ctx)
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("explorer"), "{msg}");
    assert!(msg.contains("turn 1"), "{msg}");
    assert!(msg.contains("bad key"), "{msg}");
}

#[tokio::test]
async fn child_usage_from_tool_outputs_is_collected() {
    let task = tool("Task", |_| async {
        Ok(
            ToolOutput::text("child said hi").with_children(vec![UsageNode::new(
                "child",
                "CLAUDE",
                TaskStatus::Completed,
                Usage::new().with_tokens(7, 0).with_turns(1),
            )]),
        )
    });
    let model = ScriptedModel::new(vec![calls("", &[("t", "Task", json!({}))]), text("ok")]);
    let out = run(
        RunSpec::new(model, "go").with_tools(vec![task]),
        &TaskContext::new(),
    )
    .await;
    assert_eq!(out.children.len(), 1);
    assert_eq!(out.children[0].agent, "child");
    assert_eq!(out.children[0].usage.input_tokens, 7);
}

#[tokio::test]
async fn max_turns_zero_makes_no_call() {
    let model = ScriptedModel::new(vec![text("never")]);
    let spec = RunSpec::new(model.clone(), "go").with_limits(Limits::default().with_max_turns(0));
    let out = run(spec, &TaskContext::new()).await;
    assert_limit(&out, "max_turns=0");
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn cancel_during_a_streaming_model_call_keeps_the_streamed_text() {
    let (model, rec, ctx) = hanging_stream(["half an ", "answer"]);
    let spec = RunSpec::new(model.clone(), "go").streaming(true);
    let run = {
        let ctx = ctx.clone();
        tokio::spawn(async move { AgentRuntime::default().run(spec, &ctx).await })
    };
    // wait until both deltas arrived, then cancel
    for _ in 0..400 {
        let n = rec
            .kinds()
            .iter()
            .filter(|k| matches!(k, ProgressKind::TextDelta { .. }))
            .count();
        if n == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel_and_join(
        &ctx,
        run,
        "cancellation interrupted the model call",
        "half an answer",
    )
    .await;
}

#[test]
fn the_run_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let runtime = AgentRuntime::default();
    let ctx = TaskContext::new();
    let model = ScriptedModel::new(vec![]);
    let fut = runtime.run(RunSpec::new(model, "x"), &ctx);
    assert_send(&fut);
}

#[tokio::test]
async fn duplicate_tool_names_are_sent_once_and_the_first_wins() {
    let first = tool("dup", |_| async { Ok(ToolOutput::text("from the first")) });
    let second = tool("dup", |_| async { Ok(ToolOutput::text("from the second")) });
    let model = ScriptedModel::new(vec![calls("", &[("d", "dup", json!({}))]), text("ok")]);
    run(
        RunSpec::new(model.clone(), "go").with_tools(vec![first, second]),
        &TaskContext::new(),
    )
    .await;
    let reqs = model.requests();
    assert_eq!(reqs[0].tools.len(), 1);
    assert_eq!(tool_results(&reqs[1])[0].1, "from the first");
}

/// A transcript left with an unanswered tool call (the process died mid-call) resumes: the
/// call gets an error result before the new prompt.
#[tokio::test]
async fn resume_answers_calls_a_crash_left_open() {
    use subagent_runtime::{InMemoryTranscriptStore, Transcript, TranscriptStore};
    let store = Arc::new(InMemoryTranscriptStore::new());
    store
        .save(
            "sess_crashed",
            Transcript {
                system: None,
                messages: vec![
                    ChatMessage::user("start"),
                    ChatMessage::Assistant {
                        content: String::new(),
                        tool_calls: vec![subagent_spi::chat::ToolCall::new(
                            "c1",
                            "echo",
                            json!({}),
                        )],
                    },
                ],
            },
        )
        .await;
    let model = ScriptedModel::new(vec![text("resumed")]);
    let out = AgentRuntime::new(store.clone())
        .run(
            RunSpec::resume(model.clone(), "sess_crashed", "go on"),
            &TaskContext::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "resumed");
    let sent = &model.requests()[0].messages;
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert!(
        matches!(&sent[2], ChatMessage::Tool { call_id, is_error: true, .. } if call_id == "c1")
    );
    assert_eq!(sent[3], ChatMessage::user("go on"));
    assert_eq!(store.load("sess_crashed").await.unwrap().messages.len(), 5);
}

/// A model that ends with an empty reply twice (asked once more after the first) gave no
/// answer: the run fails and says so, even when an earlier turn had text.
#[tokio::test]
async fn an_empty_final_reply_is_no_answer() {
    let model = echo_once_then("let me check", &[" \n", ""]);
    let spec = RunSpec::new(model, "say hi").with_tools(vec![echo()]);
    let out = run(spec, &TaskContext::new()).await;
    assert_eq!(out.status, TaskStatus::Failed);
    assert!(
        out.text.starts_with(subagent_runtime::NO_ANSWER_PREFIX),
        "{}",
        out.text
    );
    assert!(out.text.contains("turn 3"), "{}", out.text);
    assert!(out.session_id.is_some(), "the transcript is kept");
}

/// An empty reply is replaced by one request to answer; a model that then answers completes
/// the run (what small local models need after reading a tool result).
#[tokio::test]
async fn an_empty_reply_is_asked_once_more() {
    let model = echo_once_then("", &["", "hi"]);
    let spec = RunSpec::new(model.clone(), "say hi").with_tools(vec![echo()]);
    let out = run(spec, &TaskContext::new()).await;
    assert_eq!(out.status, TaskStatus::Completed, "{}", out.text);
    assert_eq!(out.text, "hi");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    let last = reqs[2].messages.last().expect("a message");
    assert_eq!(
        *last,
        ChatMessage::user(subagent_runtime::EMPTY_REPLY_NUDGE),
        "the empty reply is not sent back; the request to answer is"
    );
}

/// The delegation handle of a host with the agents `code-reviewer` and `calc`.
#[derive(Debug)]
struct TwoAgents;

impl subagent_spi::Delegation for TwoAgents {
    fn max_depth(&self) -> u32 {
        3
    }
    fn tools(&self) -> Vec<Arc<dyn subagent_spi::Tool>> {
        Vec::new()
    }
    fn agent_names(&self) -> Vec<String> {
        vec!["code-reviewer".into(), "calc".into()]
    }
}

/// A call of a tool named like an agent runs the run's own `Task` tool for that agent, with the
/// arguments as the prompt, and is said in the progress; real tools and unknown names are left
/// as they are, and without `Task` nothing is rewritten.
#[tokio::test]
async fn a_call_named_like_an_agent_runs_task_for_it() {
    let task = tool("Task", |input| async move {
        Ok(ToolOutput::text(format!(
            "ran {} on {}",
            input["subagent_type"].as_str().unwrap_or("?"),
            input["prompt"].as_str().unwrap_or("?")
        )))
    });
    let model = ScriptedModel::new(vec![
        calls(
            "",
            &[
                ("c1", "Code_Reviewer", json!({"prompt": "check src/"})),
                ("c2", "CALC", json!({"expression": "17 * 23"})),
                ("c3", "echo", json!({"text": "hi"})),
                ("c4", "nobody", json!({})),
            ],
        ),
        text("done"),
    ]);
    let rec = Arc::new(Recorder::default());
    let ctx = TaskContext::new()
        .with_progress(rec.clone())
        .with_delegation(Arc::new(TwoAgents));
    let spec = RunSpec::new(model.clone(), "go").with_tools(vec![echo(), task.clone()]);
    let out = run(spec, &ctx).await;
    assert_eq!(out.text, "done");
    let results = tool_results(&model.requests()[1]);
    assert_eq!(
        results[0],
        ("c1".into(), "ran code-reviewer on check src/".into(), false)
    );
    assert_eq!(
        results[1],
        ("c2".into(), "ran calc on 17 * 23".into(), false)
    );
    assert_eq!(results[2], ("c3".into(), "echo: hi".into(), false));
    assert!(results[3].1.contains("unknown tool `nobody`") && results[3].2);
    let notes: Vec<String> = rec
        .kinds()
        .into_iter()
        .filter_map(|k| match k {
            ProgressKind::Status { message } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("`code-reviewer`") && notes[0].contains("`Code_Reviewer`"));

    // No `Task` offered: the agent's name is an unknown tool like any other.
    let model = ScriptedModel::new(vec![
        calls("", &[("c1", "calc", json!({"expression": "1"}))]),
        text("done"),
    ]);
    let ctx = TaskContext::new().with_delegation(Arc::new(TwoAgents));
    run(
        RunSpec::new(model.clone(), "go").with_tools(vec![echo()]),
        &ctx,
    )
    .await;
    let results = tool_results(&model.requests()[1]);
    assert!(results[0].1.contains("unknown tool `calc`"), "{results:?}");
}

/// A model server reporting absurd usage (`u64::MAX` tokens after a first small turn) cannot
/// make the run's counts wrap (or panic): they saturate, and the token budget ends spent.
#[tokio::test]
async fn absurd_reported_usage_saturates_and_spends_the_budget() {
    use subagent_core::{Budget, BudgetExt};
    use subagent_spi::BudgetLimits;

    let model = ScriptedModel::new(vec![
        with_usage(
            calls("", &[("c1", "echo", json!({"text": "a"}))]),
            usage(10, 5),
        ),
        with_usage(
            calls("", &[("c2", "echo", json!({"text": "b"}))]),
            usage(u64::MAX, u64::MAX).with_cache(u64::MAX, u64::MAX),
        ),
        text("never reached"),
    ]);
    let ctx = TaskContext::new();
    let budget = Budget::new(BudgetLimits::new().with_tokens(1_000), ctx.cancel().clone());
    let ctx = ctx.with_budget(budget.clone());
    let spec = RunSpec::new(model.clone(), "go").with_tools(vec![echo()]);
    let out = tokio::time::timeout(GUARD, run(spec, &ctx))
        .await
        .expect("the run ends");
    assert_eq!(out.status, TaskStatus::LimitReached, "{out:?}");
    assert_eq!(out.usage.input_tokens, u64::MAX);
    assert_eq!(out.usage.output_tokens, u64::MAX);
    assert_eq!(out.usage.cache_read_tokens, u64::MAX);
    assert_eq!(out.usage.cache_creation_tokens, u64::MAX);
    assert_eq!(budget.tokens_used(), u64::MAX);
    assert!(budget.spent().is_some(), "the budget is spent, not wrapped");
    assert_eq!(model.requests().len(), 2);
}
