//! Long runs compact (their requests stay below the model's window, the transcript keeps
//! everything, resume works across a compaction) and stalls end (`limit_reached`, `stalled`,
//! where, the partial answer kept).

use crate::common;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{ScriptedModel, Step, calls, ctx_tool, slow_tool, text, tool};
use serde_json::json;
use subagent_runtime::{
    AgentRuntime, InMemoryTranscriptStore, Limits, RunSpec, SUMMARY_PREFIX, TRIMMED_MARKER_PREFIX,
    TranscriptStore,
};
use subagent_spi::chat::{
    ChatMessage, ChatRequest, ChatResponse, StopReason, TokenUsage, ToolCall,
};
use subagent_spi::{
    ChatModel, ModelError, ProgressKind, TaskContext, TaskOutcome, TaskStatus, Tool, ToolOutput,
    async_trait,
};
use subagent_testkit::ProgressRecorder;

/// The size of a request as a provider would see it: the JSON of its system prompt, messages
/// and tools, / 4 (what the scripted model server counts too).
fn request_tokens(req: &ChatRequest) -> u64 {
    let bytes = serde_json::to_string(&req.messages).unwrap().len()
        + req.system.as_deref().map_or(0, str::len)
        + serde_json::to_string(&req.tools).unwrap().len();
    (bytes as u64).div_ceil(4)
}

/// Tool calls paired with results in one request: every result answers an earlier call of the
/// request, every call is answered.
fn pairing_problem(req: &ChatRequest) -> Option<String> {
    let mut open: Vec<String> = Vec::new();
    for m in &req.messages {
        match m {
            ChatMessage::Assistant { tool_calls, .. } => {
                if let Some(id) = open.first() {
                    return Some(format!("call {id} unanswered before the next reply"));
                }
                open = tool_calls.iter().map(|c| c.id.clone()).collect();
            }
            ChatMessage::Tool { call_id, .. } => {
                let Some(i) = open.iter().position(|id| id == call_id) else {
                    return Some(format!("result {call_id} without its call"));
                };
                open.remove(i);
            }
            _ => {}
        }
    }
    open.first().map(|id| format!("call {id} unanswered"))
}

/// A model with a context window: it refuses a request over the window (as a provider does),
/// answers summary requests, calls `Read` for `turns` turns and then answers.
struct WindowModel {
    window: u64,
    turns: u32,
    calls: AtomicU32,
    summaries: AtomicU32,
    max_seen: AtomicU64,
    problems: Mutex<Vec<String>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl WindowModel {
    fn new(window: u64, turns: u32) -> Arc<Self> {
        Arc::new(Self {
            window,
            turns,
            calls: AtomicU32::new(0),
            summaries: AtomicU32::new(0),
            max_seen: AtomicU64::new(0),
            problems: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl ChatModel for WindowModel {
    fn model_name(&self) -> &str {
        "windowed"
    }

    async fn chat(&self, req: ChatRequest) -> Result<ChatResponse, ModelError> {
        let tokens = request_tokens(&req);
        self.max_seen.fetch_max(tokens, Ordering::SeqCst);
        self.requests.lock().unwrap().push(req.clone());
        if tokens > self.window {
            return Err(ModelError::Rejected {
                provider: "windowed".into(),
                message: format!(
                    "context_length_exceeded: {tokens} tokens, window {}",
                    self.window
                ),
                retryable: false,
                retry_after: None,
                source: None,
            });
        }
        if let Some(p) = pairing_problem(&req) {
            self.problems.lock().unwrap().push(p);
        }
        let usage = TokenUsage::new(10, 5);
        if req
            .system
            .as_deref()
            .is_some_and(|s| s.starts_with("You compact"))
        {
            let n = self.summaries.fetch_add(1, Ordering::SeqCst);
            return Ok(ChatResponse::new(
                format!("SUMMARY-{n}: the file was read many times; keep reading."),
                StopReason::EndTurn,
                usage,
                "windowed",
            ));
        }
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.turns {
            return Ok(
                ChatResponse::new("", StopReason::ToolUse, usage, "windowed").with_tool_calls(
                    vec![ToolCall::new(
                        format!("c{n}"),
                        "Read",
                        json!({"file_path": "big.txt", "turn": n}),
                    )],
                ),
            );
        }
        Ok(ChatResponse::new(
            format!("DONE after {n} reads"),
            StopReason::EndTurn,
            usage,
            "windowed",
        ))
    }
}

fn big_output(chars: usize) -> Arc<dyn Tool> {
    tool("Read", move |input| async move {
        let turn = input["turn"].as_u64().unwrap_or(0);
        let mut out = format!("turn {turn}: ");
        while out.len() < chars {
            out.push_str("0123456789 abcdefghij ");
        }
        out.truncate(chars);
        Ok(ToolOutput::text(out))
    })
}

/// Runs `model` on "read" with [`big_output`] of `chars` and a context window of the model's,
/// recording the progress; the run completes and no request exceeded the window.
async fn read_in_window(model: &Arc<WindowModel>, chars: usize) -> Arc<ProgressRecorder> {
    let rec = Arc::new(ProgressRecorder::new());
    let spec = RunSpec::new(model.clone(), "read")
        .with_tools(vec![big_output(chars)])
        .with_limits(Limits::default().with_context_window(model.window));
    let out = AgentRuntime::default()
        .run(spec, &TaskContext::new().with_progress(rec.clone()))
        .await
        .expect("completes");
    assert_eq!(out.status, TaskStatus::Completed, "{}", out.text);
    assert!(model.max_seen.load(Ordering::SeqCst) <= model.window);
    rec
}

fn compactions(rec: &ProgressRecorder) -> Vec<(u64, u64, u32, u32)> {
    rec.kinds()
        .into_iter()
        .filter_map(|k| match k {
            ProgressKind::Compacted {
                tokens_before,
                tokens_after,
                trimmed_outputs,
                summarized_messages,
            } => Some((
                tokens_before,
                tokens_after,
                trimmed_outputs,
                summarized_messages,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_hundred_turns_with_large_outputs_stay_within_a_small_window() {
    let store = Arc::new(InMemoryTranscriptStore::new());
    let runtime = AgentRuntime::new(store.clone());
    let model = WindowModel::new(4_000, 100);
    let rec = Arc::new(ProgressRecorder::new());
    let ctx = TaskContext::new().with_progress(rec.clone());
    let spec = RunSpec::new(model.clone(), "Read big.txt a hundred times.")
        .with_system("You read files.")
        .with_tools(vec![big_output(5_000)])
        .with_limits(
            Limits::default()
                .with_max_turns(120)
                .with_context_window(4_000),
        );
    let out = runtime.run(spec, &ctx).await.expect("the run completes");
    assert_eq!(out.status, TaskStatus::Completed, "{}", out.text);
    assert_eq!(out.text, "DONE after 100 reads");
    assert_eq!(out.usage.turns, 101);

    // No request exceeded the window; every call stayed paired with its result.
    let max = model.max_seen.load(Ordering::SeqCst);
    assert!(max <= 4_000, "largest request: {max} tokens");
    assert!(
        model.problems.lock().unwrap().is_empty(),
        "{:?}",
        model.problems.lock().unwrap()
    );

    // Trimming and summaries both happened, and were reported.
    let events = compactions(&rec);
    assert!(!events.is_empty());
    assert!(events.iter().all(|&(before, after, _, _)| after < before));
    assert!(events.iter().any(|&(_, _, trimmed, _)| trimmed > 0));
    assert!(events.iter().any(|&(_, _, _, summarized)| summarized > 0));
    assert!(model.summaries.load(Ordering::SeqCst) > 0);

    // The last request: the summary first, the latest turn verbatim.
    let reqs = model.requests.lock().unwrap().clone();
    let last = reqs.last().unwrap();
    let ChatMessage::User { content } = &last.messages[0] else {
        panic!("a summary message first: {:?}", last.messages[0]);
    };
    assert!(content.starts_with(SUMMARY_PREFIX), "{content}");
    let ChatMessage::Tool { content, .. } = last.messages.last().unwrap() else {
        panic!("the latest tool result last");
    };
    assert_eq!(content.len(), 5_000, "the latest output is sent whole");

    // The stored transcript keeps everything: 100 whole outputs.
    let t = store
        .load(out.session_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(t.messages.len(), 1 + 100 * 2 + 1);
    let whole = t
        .messages
        .iter()
        .filter(|m| matches!(m, ChatMessage::Tool { content, .. } if content.len() == 5_000))
        .count();
    assert_eq!(whole, 100);

    // Resume works across the compaction: the whole transcript is compacted again.
    let resumed = WindowModel::new(4_000, 0);
    let spec = RunSpec::resume(
        resumed.clone(),
        out.session_id.clone().unwrap(),
        "How many reads was that?",
    )
    .with_tools(vec![big_output(5_000)])
    .with_limits(Limits::default().with_context_window(4_000));
    let again = runtime
        .run(spec, &TaskContext::new())
        .await
        .expect("resumes");
    assert_eq!(again.status, TaskStatus::Completed, "{}", again.text);
    assert!(resumed.max_seen.load(Ordering::SeqCst) <= 4_000);
    let reqs = resumed.requests.lock().unwrap().clone();
    let last = reqs.last().unwrap();
    assert!(
        matches!(last.messages.last(), Some(ChatMessage::User { content }) if content.ends_with("How many reads was that?")),
        "the new prompt is sent: {:?}",
        last.messages.last()
    );
    let t = store
        .load(out.session_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(t.messages.len(), 1 + 100 * 2 + 1 + 2, "and is stored whole");
}

#[tokio::test]
async fn trimming_old_outputs_alone_is_tried_first() {
    let model = WindowModel::new(20_000, 20);
    let rec = read_in_window(&model, 5_000).await;
    let events = compactions(&rec);
    assert!(!events.is_empty());
    assert!(
        events
            .iter()
            .all(|&(_, _, trimmed, summarized)| trimmed > 0 && summarized == 0),
        "{events:?}"
    );
    assert_eq!(
        model.summaries.load(Ordering::SeqCst),
        0,
        "no summary needed"
    );
    let reqs = model.requests.lock().unwrap().clone();
    let last = reqs.last().unwrap();
    assert_eq!(last.messages.len(), 1 + 20 * 2, "every turn is still there");
    let trimmed = last
        .messages
        .iter()
        .filter(|m| matches!(m, ChatMessage::Tool { content, .. } if content.starts_with(TRIMMED_MARKER_PREFIX)))
        .count();
    assert!(trimmed >= 10, "old outputs are placeholders: {trimmed}");
    let ChatMessage::Tool { content, .. } = last.messages.last().unwrap() else {
        panic!("the latest tool result last");
    };
    assert_eq!(content.len(), 5_000, "the latest output is sent whole");
}

#[tokio::test]
async fn one_output_larger_than_the_window_is_cut_to_fit() {
    let model = WindowModel::new(4_000, 2);
    read_in_window(&model, 30_000).await;
}

#[tokio::test]
async fn a_prompt_that_cannot_fit_stops_at_the_context_window() {
    let model = WindowModel::new(256, 0);
    let spec = RunSpec::new(model.clone(), "hi")
        .with_system("x".repeat(4_000))
        .with_limits(Limits::default().with_context_window(256));
    let out = AgentRuntime::default()
        .run(spec, &TaskContext::new())
        .await
        .expect("a limit, not an error");
    assert_eq!(out.status, TaskStatus::LimitReached);
    let limit = out.limit.unwrap().to_string();
    assert!(limit.starts_with("context_window=256"), "{limit}");
    assert!(
        model.requests.lock().unwrap().is_empty(),
        "nothing was sent"
    );
}

#[tokio::test]
async fn a_run_far_below_its_window_is_not_compacted() {
    let model = WindowModel::new(1_000_000, 3);
    let rec = read_in_window(&model, 2_000).await;
    assert!(compactions(&rec).is_empty());
    assert_eq!(model.summaries.load(Ordering::SeqCst), 0);
    let reqs = model.requests.lock().unwrap().clone();
    assert_eq!(reqs.last().unwrap().messages.len(), 1 + 3 * 2);
}

// --- stalls ---

const HOUR: Duration = Duration::from_secs(3600);

fn stall_limits(secs: u64) -> Limits {
    Limits::default().with_stall_timeout(Duration::from_secs(secs))
}

/// `out` ended at the stall limit saying `limit`, with the partial answer `text`.
fn assert_stalled(out: &TaskOutcome, limit: &str, text: &str) {
    assert_eq!(out.status, TaskStatus::LimitReached);
    assert_eq!(
        out.limit.as_ref().map(ToString::to_string).as_deref(),
        Some(limit)
    );
    assert_eq!(out.text, text);
}

/// Runs `spec` with a stall time of 30 s; the run must end by itself within an hour.
async fn run_to_a_30_s_stall(spec: RunSpec) -> TaskOutcome {
    let spec = spec.with_limits(stall_limits(30));
    tokio::time::timeout(HOUR, AgentRuntime::default().run(spec, &TaskContext::new()))
        .await
        .expect("the run ends by itself")
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_stalled_model_stream_ends_the_run_with_its_partial_answer() {
    let model = ScriptedModel::new(vec![Step::StreamThenHang(vec![
        "I found ".into(),
        "half of it".into(),
    ])]);
    let spec = RunSpec::new(model, "go").streaming(true);
    let out = run_to_a_30_s_stall(spec).await;
    assert_stalled(
        &out,
        "stalled: no progress for 30 s in the model call (turn 1)",
        "I found half of it",
    );
}

#[tokio::test(start_paused = true)]
async fn a_stalled_tool_is_named() {
    let model = ScriptedModel::new(vec![calls("Looking it up.", &[("c1", "Slow", json!({}))])]);
    let spec = RunSpec::new(model, "go").with_tools(vec![slow_tool(
        "Slow",
        Arc::new(tokio::sync::Notify::new()),
    )]);
    let out = run_to_a_30_s_stall(spec).await;
    assert_stalled(
        &out,
        "stalled: no progress for 30 s in tool Slow (turn 1)",
        "Looking it up.",
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_reports_progress_is_not_stalled() {
    // Works 100 s, reporting every 20 s.
    let busy = ctx_tool("Busy", |_, ctx| async move {
        for i in 0..5 {
            tokio::time::sleep(Duration::from_secs(20)).await;
            ctx.emit(ProgressKind::Status {
                message: format!("step {i}"),
            });
        }
        Ok(ToolOutput::text("worked"))
    });
    let model = ScriptedModel::new(vec![calls("", &[("c1", "Busy", json!({}))]), text("done")]);
    let spec = RunSpec::new(model, "go").with_tools(vec![busy]);
    let out = run_to_a_30_s_stall(spec).await;
    assert_eq!(out.status, TaskStatus::Completed, "{:?}", out.limit);
    assert_eq!(out.text, "done");
}

#[tokio::test(start_paused = true)]
async fn a_parent_reads_its_stalled_childs_result_and_goes_on() {
    // Runs a child agent whose model stalls after some text, with the same stall time.
    let child_tool = ctx_tool("Child", |_, ctx| async move {
        let model = ScriptedModel::new(vec![Step::StreamThenHang(vec!["CHILD-PARTIAL".into()])]);
        let spec = RunSpec::new(model, "work")
            .streaming(true)
            .with_limits(stall_limits(30));
        let child = ctx.child("child", None);
        let out = AgentRuntime::default()
            .run(spec, &child)
            .await
            .map_err(|e| subagent_spi::ToolError::Failed {
                tool: "Child".into(),
                message: e.to_string(),
            })?;
        Ok(ToolOutput::text(format!(
            "{} ({}): {}",
            out.status,
            out.limit.map(|l| l.to_string()).unwrap_or_default(),
            out.text
        )))
    });
    let model = ScriptedModel::new(vec![
        calls("", &[("c1", "Child", json!({}))]),
        text("the child got half way; carrying on"),
    ]);
    let spec = RunSpec::new(model.clone(), "go").with_tools(vec![child_tool]);
    let out = run_to_a_30_s_stall(spec).await;
    assert_eq!(out.status, TaskStatus::Completed, "{:?}", out.limit);
    let result = &common::tool_results(&model.requests()[1])[0].1;
    assert!(
        result.starts_with("limit_reached (stalled: no progress for 30 s in the model call (turn 1)): CHILD-PARTIAL"),
        "{result}"
    );
}
