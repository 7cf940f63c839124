//! The agent loop.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use subagent_spi::chat::{ChatDelta, ChatMessage, ChatRequest, ToolCall};
use subagent_spi::{
    Limit, LimitScope, ModelError, ProgressKind, SubagentError, TaskContext, TaskOutcome,
    TaskStatus, Tool, ToolOutput, ToolSpec, Usage, UsageNode,
};
use tracing::Instrument as _;

use crate::cache_scope::{CallerScope, ForkStart};
use crate::stop::{Guarded, Stop, guarded};
use crate::{InMemoryTranscriptStore, RunInput, RunSpec, Transcript, TranscriptStore};
use subagent_core::BudgetExt;

/// The text that starts the marker appended to a cut tool output:
/// `[output truncated: N characters cut of M]`.
pub const TRUNCATION_MARKER_PREFIX: &str = "[output truncated:";

/// What the model is told, once per run, after a reply with neither text nor tool calls.
pub const EMPTY_REPLY_NUDGE: &str = "Your last reply was empty. Answer the task now, in plain \
     text, from what you have (the tool results above, if any).";

/// How long tools may take to wind down after the run is cancelled before they are dropped.
const TOOL_CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// How many characters of a tool result go into a
/// [`ProgressKind::ToolResult`] preview.
const PREVIEW_CHARS: usize = 200;

/// Runs agents: the model is called, the tools it asks for run (concurrently within a turn),
/// their results go back to it, and so on until it answers without tool calls or a limit,
/// the deadline or cancellation stops the run.
///
/// One runtime serves any number of concurrent runs; it holds only the transcript store.
///
/// What [`run`](Self::run) guarantees:
/// - **Fresh context**: a [`RunInput::Prompt`] starts from an empty message list; a
///   [`RunInput::Resume`] starts from the stored transcript plus the new prompt (an unknown id is
///   [`SubagentError::Resume`]).
/// - **Only the final text returns**: [`TaskOutcome::text`] is the last reply's text (or, when the
///   run was stopped, the last text the model produced, including streamed text of an interrupted
///   reply). The transcript is stored under [`TaskOutcome::session_id`] (`sess_<hex>` for a
///   new run, the same id for a resumed one) **as the run goes**: the first prompt at the start,
///   then each turn's new messages ([`TranscriptStore::append`]), so a run whose process dies
///   can be resumed from its last complete turn. The id is announced at the start with a
///   [`ProgressKind::Session`] event. Tool calls left unanswered by a stop (or by a crash, seen
///   on resume) get an error result saying why, so the transcript stays valid for providers. A
///   store that fails is reported, never fatal: see [`TranscriptStore`]'s failure policy.
/// - **Limits**: the smaller of [`Limits::max_turns`](crate::Limits::max_turns) and
///   [`TaskContext::max_turns`]; the smaller token budget; the earlier deadline. Hitting one ends
///   the run with `Ok` and [`TaskStatus::LimitReached`], `limit` set to `max_turns=N`,
///   `max_tokens=N` or `deadline`. The deadline interrupts an in-flight model call or tool.
/// - **Cancellation**: when [`TaskContext::cancel`] fires, the in-flight model call is dropped;
///   in-flight tools, which see the same cancellation, get up to 3 s to wind down (a remote
///   child sends its `CancelTask`) and are then dropped (tools must clean up on drop, as the
///   built-in `Bash` does) and the run returns `Ok`
///   with [`TaskStatus::Cancelled`] and the partial text.
/// - **Long runs compact**: before each model call the request's size is estimated against the
///   model's context window ([`Limits::context_window`](crate::Limits::context_window), else
///   the window the model's server reported ([`ChatModel::context_window`](subagent_spi::ChatModel::context_window)), else
///   [`MODEL_WINDOWS`](crate::MODEL_WINDOWS), else
///   [`DEFAULT_CONTEXT_WINDOW`](crate::DEFAULT_CONTEXT_WINDOW)); past
///   [`TRIGGER_PERCENT`](crate::TRIGGER_PERCENT) of it, old large tool outputs are trimmed,
///   then older turns summarised by the model into one message (tool calls stay paired with
///   their results; the latest turns stay verbatim), and a [`ProgressKind::Compacted`] event
///   says how much was saved. Only the requests change: the stored transcript keeps everything,
///   and a resumed session is compacted again as needed. A request that cannot fit at all ends
///   the run with the limit `context_window=N: ...`.
/// - **Stalls end**: when the model stream and the tools make no progress (a streamed piece,
///   a reply, a progress event from a tool) for
///   [`Limits::stall_timeout`](crate::Limits::stall_timeout) (default 10 minutes), the run
///   ends with [`TaskStatus::LimitReached`] and a limit starting
///   [`STALLED_LIMIT_PREFIX`](crate::STALLED_LIMIT_PREFIX) that names where: `stalled: no
///   progress for 600 s in the model call (turn 3)` or `... in tool Bash (turn 3)`, keeping
///   the partial answer. Tools get a little more (5 s per nesting level below, up to 8), so
///   the deepest stalled run reports itself first and its parent goes on.
/// - **An empty final reply is no answer**: when the model ends the run with a reply that has
///   neither text (whitespace aside) nor tool calls, it is asked once more
///   ([`EMPTY_REPLY_NUDGE`], in place of the empty reply, when a turn is left); a second empty
///   reply ends the run [`TaskStatus::Failed`] with a text starting [`NO_ANSWER_PREFIX`](crate::NO_ANSWER_PREFIX) that
///   says so (turn and stop reason), so a caller, a parent model or a script never takes
///   silence for success.
/// - **Calls named like an agent are delegation**: when the run offers `Task` and the model
///   calls a tool that does not exist but is named like an agent the run may start (case and
///   `-`, `_`, space, `.` aside), the call becomes a `Task` call to that agent with the call's
///   arguments as the prompt (its `prompt`, or its only string, or the JSON text), stored so
///   in the transcript and announced with a `Status` progress event. It runs through the
///   run's own `Task` tool, under the same permissions and hooks.
/// - **Forks**: when a reply calls `Task` with `subagent_type: "fork"`, the tool calls of that
///   turn see the run's conversation (system prompt, tools, model, limits, messages) as a
///   [`ForkSource`](subagent_spi::ForkSource) in their context, so the `Task` tool can start a
///   copy of the run whose first request repeats this run's last one byte for byte and adds a
///   placeholder result per call and the fork's task (see [`RunInput::Messages`]).
/// - **Tool failures are the model's to handle**: an unknown tool name, a tool's `Err`, or a
///   panicking tool become error tool results the model sees. Output longer than
///   [`Limits::max_tool_output_chars`](crate::Limits::max_tool_output_chars) is cut with a marker
///   (see [`truncate_output`]).
/// - **Messages sent while it runs** (Claude Code's `SendMessage`): when the context has an
///   [`Inbox`](subagent_spi::Inbox), what arrived is read before each model turn and given to
///   the model as one user message starting [`STEER_MESSAGE_PREFIX`](crate::STEER_MESSAGE_PREFIX);
///   a run whose model answers while messages wait takes one more turn for them (within its
///   limits). What is never read stays in the inbox for the host to report.
/// - **Errors**: a failing model call returns [`SubagentError::Execution`] naming the agent and
///   the turn (the turns before it stay stored).
/// - **Progress**: per turn `Turn`, `TextDelta` (streaming only), `Usage`, and
///   `ToolCall`/`ToolResult` per tool. `Started` and `Finished` are the task's lifecycle and are
///   emitted by whoever starts the task (the `Task` tool for subagents), never twice.
/// - **Usage**: tokens (incl. cache tokens) summed over turns, `turns`, `duration_ms`, and
///   `model` (as the provider named it); `children` usage nodes of tool outputs (from the `Task`
///   tool) are collected into [`TaskOutcome::children`].
///
/// A deadline needs a tokio runtime with the time driver enabled.
#[derive(Clone)]
pub struct AgentRuntime {
    store: Arc<dyn TranscriptStore>,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime").finish_non_exhaustive()
    }
}

impl Default for AgentRuntime {
    /// A runtime keeping transcripts in an [`InMemoryTranscriptStore`] of default capacity.
    fn default() -> Self {
        Self::new(Arc::new(InMemoryTranscriptStore::new()))
    }
}

impl AgentRuntime {
    /// A runtime keeping transcripts in `store`.
    pub fn new(store: Arc<dyn TranscriptStore>) -> Self {
        Self { store }
    }

    /// The transcript store.
    pub fn store(&self) -> &Arc<dyn TranscriptStore> {
        &self.store
    }

    /// Runs one agent to its final answer (or a limit, or cancellation); see the type's docs for
    /// the guarantees.
    pub async fn run(
        &self,
        spec: RunSpec,
        ctx: &TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        self.run_with(spec, ctx, None).await
    }

    /// [`run`](Self::run); `fork`: the run is a fork (see `fork`), which continues its
    /// caller's conversation.
    pub(crate) async fn run_with(
        &self,
        spec: RunSpec,
        ctx: &TaskContext,
        fork: Option<ForkStart>,
    ) -> Result<TaskOutcome, SubagentError> {
        let started = Instant::now();
        let RunSpec {
            system,
            input,
            mut tools,
            model,
            model_name,
            limits,
            stream,
            effort,
            output_schema,
        } = spec;
        // Typed result (crate::structured): its final tool goes first, so it wins its name. A
        // fork's comes as JSON text instead: a tool or a system prompt of its own would change
        // the prefix it shares with its caller (the schema is in its task; see `fork`).
        let by_text = fork.is_some();
        let structured =
            output_schema.map(|s| crate::structured::Structured::new(s).by_text(by_text));
        let system = match (&structured, system) {
            (Some(_), Some(s)) if !by_text => {
                Some(s + &crate::structured::Structured::instruction())
            }
            (_, s) => s,
        };
        if let Some(s) = structured.as_ref().filter(|_| !by_text) {
            tools.insert(0, s.tool());
        }
        let max_turns = ctx
            .max_turns()
            .map_or(limits.max_turns, |c| c.min(limits.max_turns));
        let max_tokens = min_opt(limits.max_tokens, ctx.max_tokens());
        let deadline = min_opt(
            min_opt(limits.deadline, ctx.deadline()),
            ctx.budget().and_then(|b| b.deadline()),
        );
        let max_output = limits.max_tool_output_chars;

        let (session_id, mut transcript, mut saved, new_session) =
            match input {
                RunInput::Prompt(prompt) => (
                    new_session_id(),
                    Transcript {
                        system,
                        messages: vec![ChatMessage::user(prompt)],
                    },
                    0,
                    true,
                ),
                RunInput::Resume { session_id, prompt } => {
                    let loaded = self.store.try_load(&session_id).await.map_err(|e| {
                        SubagentError::Resume {
                            session: session_id.clone(),
                            reason: format!("the transcript could not be read: {e}"),
                        }
                    })?;
                    let Some(mut t) = loaded else {
                        return Err(SubagentError::Resume {
                            session: session_id,
                            reason: "no transcript is stored under this id (it is unknown, or was \
                                 evicted from the transcript store)"
                                .to_string(),
                        });
                    };
                    let mut saved = t.messages.len();
                    if system.is_some() && system != t.system {
                        t.system = system;
                        saved = 0; // rewritten whole below
                    }
                    // A run that ended without finishing (a crash) may have left calls unanswered.
                    answer_dangling_calls(&mut t.messages, "the run was interrupted before it ran");
                    t.messages.push(ChatMessage::user(prompt));
                    (session_id, t, saved, false)
                }
                // A fork (see `fork`): the caller's conversation and the fork's task.
                RunInput::Messages(messages) => {
                    (new_session_id(), Transcript { system, messages }, 0, true)
                }
            };
        ctx.emit(ProgressKind::Session {
            session_id: session_id.clone(),
        });
        // The conversation the requests belong to (cache_scope), and what a fork's first one
        // repeats of its caller's.
        let (scope, mut continues) = match fork {
            Some(f) => (f.scope, Some(f.continues)),
            None => (crate::cache_scope::for_run(&session_id, ctx), None),
        };
        let mut save_failed = false;
        if saved == 0 && !new_session {
            save_failed |= !self.persist_whole(&session_id, &transcript, ctx).await;
            saved = transcript.messages.len();
        } else {
            save_failed |= !self
                .persist(&session_id, &transcript, &mut saved, ctx)
                .await;
        }

        // One spec per name (the first tool of a name wins, as in dispatch).
        let mut specs: Vec<ToolSpec> = Vec::with_capacity(tools.len());
        for t in &tools {
            if !specs.iter().any(|s| s.name == t.name()) {
                specs.push(t.spec());
            }
        }
        let mut usage = Usage::default();
        let mut children: Vec<UsageNode> = Vec::new();
        let mut last_text = String::new();
        let mut answered_by: Option<String> = None;
        let mut turn: u32 = 0;
        // Long runs compact (compact.rs); stalls end (stall.rs).
        let window = crate::window::context_window(
            limits.context_window.or_else(|| model.context_window()),
            model_name.as_deref().unwrap_or_else(|| model.model_name()),
        );
        let mut compactor =
            crate::compact::Compactor::new(window, transcript.system.as_deref(), &specs);
        let dog = crate::stall::Watchdog::new(limits.stall_timeout);
        let tool_ctx = dog
            .tool_context(ctx)
            .with_extension(CallerScope(scope.clone()));
        // Hook: a repeated read-only call makes the next turn answer (see `repeat`).
        let mut repeat = crate::repeat::RepeatGuard::default();
        // An empty reply gets one more turn, once per run (see EMPTY_REPLY_NUDGE).
        let mut nudged = false;

        let stop = loop {
            if ctx.cancel().is_cancelled() {
                break Stop::cancelled(None);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break Stop::limit(Limit::Deadline, None);
            }
            if let Some(stop) = tokens_spent(max_tokens, &usage) {
                break stop;
            }
            if turn >= max_turns {
                break Stop::limit(
                    Limit::Turns {
                        max: max_turns,
                        scope: LimitScope::Run,
                    },
                    None,
                );
            }
            if let Some(spent) = ctx.budget().and_then(|b| b.spent()) {
                break Stop::limit(spent, None);
            }
            // Issue 28 (SendMessage): messages sent to this run are read at the turn boundary.
            crate::steer::deliver(ctx, &mut transcript.messages);
            turn += 1;
            tracing::debug!(agent = %ctx.agent(), turn, messages = transcript.messages.len(), "model turn");
            ctx.emit(ProgressKind::Turn { turn });

            let summarizer = crate::compact::Summarizer {
                model: &model,
                model_name: model_name.as_deref(),
                ctx,
                deadline,
                dog: &dog,
                turn,
            };
            let messages = match compactor
                .request_messages(&transcript.messages, summarizer, &mut usage)
                .await
            {
                Ok(m) => m,
                Err(stop) => break stop,
            };
            let mut request = ChatRequest::new(messages).with_tools(repeat.tools_for_turn(&specs));
            request.model = model_name.clone();
            request.system = transcript.system.clone();
            request.effort = effort;
            request.cache_scope = Some(match continues.take() {
                Some(n) => scope.clone().with_continues(n),
                None => scope.clone(),
            });
            let streamed = Mutex::new(String::new());
            let chat_span = chat_span(&request, &model);
            let outcome = if stream {
                let on_delta = |delta: ChatDelta| {
                    dog.touch();
                    match delta {
                        ChatDelta::Text(text) => {
                            lock(&streamed).push_str(&text);
                            ctx.emit(ProgressKind::TextDelta { text });
                        }
                        // A rate limit or retry being waited out: the run's status line.
                        ChatDelta::Waiting { reason, .. } => {
                            ctx.emit(ProgressKind::Status { message: reason });
                        }
                        _ => {}
                    }
                };
                guarded(
                    dog.watch(model.chat_stream(request, &on_delta), Duration::ZERO),
                    ctx.cancel(),
                    deadline,
                )
                .instrument(chat_span.clone())
                .await
            } else {
                guarded(
                    dog.watch(model.chat(request), Duration::ZERO),
                    ctx.cancel(),
                    deadline,
                )
                .instrument(chat_span.clone())
                .await
            };
            let partial = || {
                let s = std::mem::take(&mut *lock(&streamed));
                (!s.is_empty()).then_some(s)
            };
            let outcome = match outcome {
                Guarded::Done(Ok(r)) => Guarded::Done(r),
                Guarded::Done(Err(crate::stall::Stalled)) => {
                    chat_span.record("error.type", "stalled");
                    let place = format!("the model call (turn {turn})");
                    break Stop::limit(dog.limit(&place), partial());
                }
                Guarded::Cancelled => Guarded::Cancelled,
                Guarded::Deadline => Guarded::Deadline,
            };
            record_chat(&chat_span, &outcome);
            let response = match outcome {
                Guarded::Done(Ok(r)) => r,
                Guarded::Done(Err(ModelError::Cancelled)) => break Stop::cancelled(partial()),
                Guarded::Done(Err(e)) => {
                    usage.turns = turn;
                    usage.duration_ms = elapsed_ms(started);
                    return Err(SubagentError::Execution {
                        agent: agent_name(ctx, &model),
                        message: format!("model call failed on turn {turn}: {e}"),
                        source: Some(Box::new(e)),
                    });
                }
                Guarded::Cancelled => break Stop::cancelled(partial()),
                Guarded::Deadline => break Stop::limit(Limit::Deadline, partial()),
            };

            let u = response.usage;
            compactor.observe(&u);
            crate::reply_usage::add_reply(&mut usage, &u); // saturating: the server reports it
            usage.turns = turn;
            // The subtree's budget: crossing it cancels the subtree (siblings included).
            if !response.model.is_empty() {
                answered_by = Some(response.model);
            }
            let budget_spent = ctx.budget().and_then(|b| {
                let m = answered_by
                    .as_deref()
                    .or(model_name.as_deref())
                    .unwrap_or("");
                b.charge_tokens(m, &u, 1)
            });
            // The model so far, so a live display can price the usage.
            usage.model.clone_from(&answered_by);
            ctx.emit(ProgressKind::Usage {
                usage: usage.clone(),
            });
            if !response.content.is_empty() {
                last_text.clone_from(&response.content);
            }
            let calls = crate::alias::resolve_agent_calls(response.tool_calls, &tools, ctx);
            let empty = calls.is_empty() && response.content.trim().is_empty();
            transcript.messages.push(ChatMessage::Assistant {
                content: response.content,
                tool_calls: calls.clone(),
            });
            // Typed result: a final text must be a valid value, else it goes back to the model.
            if calls.is_empty()
                && let Some(s) = &structured
            {
                // (An empty reply's text is empty; otherwise `last_text` is this reply's.)
                match s
                    .on_final_text(if empty { "" } else { &last_text }, deadline)
                    .await
                {
                    crate::structured::FinalText::Accept => break Stop::completed(),
                    crate::structured::FinalText::Retry(msg) => {
                        transcript.messages.push(ChatMessage::user(msg));
                        continue;
                    }
                    crate::structured::FinalText::GiveUp(text) => {
                        break Stop::invalid_output(text);
                    }
                }
            }
            if empty {
                // Small models often end with nothing after reading a tool result: asked once
                // more, they answer. A second empty reply is no answer.
                let room = turn < max_turns
                    && budget_spent.is_none()
                    && deadline.is_none_or(|d| Instant::now() < d)
                    && !ctx.cancel().is_cancelled();
                if !nudged && room {
                    nudged = true;
                    transcript.messages.pop();
                    transcript
                        .messages
                        .push(ChatMessage::user(EMPTY_REPLY_NUDGE));
                    continue;
                }
                break Stop::no_answer(turn, &response.stop_reason);
            }
            if calls.is_empty() {
                // A message that arrived during the last turn gets a turn of its own, when no
                // limit would stop that turn (else the answer stands and it stays unread).
                let room = turn < max_turns
                    && budget_spent.is_none()
                    && ctx.budget().and_then(|b| b.spent()).is_none()
                    && max_tokens.is_none_or(|m| usage.total_tokens() < m)
                    && deadline.is_none_or(|d| Instant::now() < d)
                    && !ctx.cancel().is_cancelled();
                if room && crate::steer::pending(ctx) {
                    continue;
                }
                break Stop::completed();
            }
            if let Some(spent) = budget_spent {
                break Stop::limit(spent, None);
            }
            if let Some(stop) = tokens_spent(max_tokens, &usage) {
                break stop;
            }

            if ctx.cancel().is_cancelled() {
                break Stop::cancelled(None);
            }
            for c in &calls {
                tracing::debug!(agent = %ctx.agent(), turn, tool = %c.name, id = %c.id, "tool call");
                ctx.emit(ProgressKind::ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    input: c.arguments.clone(),
                });
            }
            let repeated = repeat.observe(&calls, &tools, ctx);
            // A `Task` call with `subagent_type: "fork"` gets this conversation (see `fork`): the
            // messages of the last request (compacted when it was) and the reply to it.
            let fork_ctx = crate::fork::tool_context(&tool_ctx, &calls, || crate::fork::ForkRun {
                runtime: self.clone(),
                scope: scope.clone(),
                system: transcript.system.clone(),
                messages: compactor.sent_and_since(&transcript.messages),
                tools: tools.clone(),
                model: model.clone(),
                model_name: model_name.clone(),
                limits: limits.clone(),
                stream,
                effort,
            });
            let tool_ctx = fork_ctx.as_ref().unwrap_or(&tool_ctx);
            let done: Vec<AtomicBool> = calls.iter().map(|_| AtomicBool::new(false)).collect();
            let running = futures::future::join_all(calls.iter().zip(&done).map(|(c, done)| {
                let tools = &tools;
                async move {
                    let out = call_tool(tools, c, tool_ctx).await;
                    done.store(true, Ordering::Relaxed);
                    out
                }
            }));
            let results = {
                let mut running = std::pin::pin!(running);
                let grace = crate::stall::tool_grace(ctx.depth());
                let watched = dog.watch(&mut running, grace);
                match guarded(watched, ctx.cancel(), deadline).await {
                    Guarded::Done(Ok(r)) => r,
                    Guarded::Done(Err(crate::stall::Stalled)) => {
                        let stuck: Vec<&str> = calls
                            .iter()
                            .zip(&done)
                            .filter(|(_, d)| !d.load(Ordering::Relaxed))
                            .map(|(c, _)| c.name.as_str())
                            .collect();
                        let place = format!(
                            "tool{} {} (turn {turn})",
                            if stuck.len() == 1 { "" } else { "s" },
                            stuck.join(", ")
                        );
                        break Stop::limit(dog.limit(&place), None);
                    }
                    Guarded::Cancelled => {
                        // The tools saw the same cancellation: give them a moment to wind down
                        // (a remote child sends its `CancelTask`) before they are dropped.
                        let _ = tokio::time::timeout(TOOL_CANCEL_GRACE, &mut running).await;
                        break Stop::cancelled(None);
                    }
                    Guarded::Deadline => break Stop::limit(Limit::Deadline, None),
                }
            };
            for (call, out) in calls.into_iter().zip(results) {
                let mut content = truncate_output(out.content, max_output);
                if repeated {
                    content = crate::repeat::note(content);
                }
                ctx.emit(ProgressKind::ToolResult {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    is_error: out.is_error,
                    preview: preview(&content),
                });
                children.extend(out.children);
                transcript.messages.push(ChatMessage::Tool {
                    call_id: call.id,
                    name: call.name,
                    content,
                    is_error: out.is_error,
                });
            }
            save_failed |= !self
                .persist(&session_id, &transcript, &mut saved, ctx)
                .await;
            // Typed result: a valid `StructuredOutput` call ends the run.
            if let Some(s) = &structured {
                if s.accepted().is_some() {
                    break Stop::completed();
                }
                if let Some(text) = s.exhausted() {
                    break Stop::invalid_output(text);
                }
            }
        };

        // A run stopped because its subtree's budget was spent reports that budget.
        let stop = match ctx.budget().and_then(|b| b.spent()) {
            Some(spent)
                if stop.status == TaskStatus::Cancelled || stop.limit == Some(Limit::Deadline) =>
            {
                Stop::limit(spent, stop.partial)
            }
            _ => stop,
        };
        tracing::debug!(agent = %ctx.agent(), turns = turn, status = %stop.status, limit = ?stop.limit, "run finished");
        answer_dangling_calls(&mut transcript.messages, stop.reason);
        usage.turns = turn;
        usage.duration_ms = elapsed_ms(started);
        usage.model = answered_by
            .or(model_name)
            .or_else(|| Some(model.model_name().to_string()))
            .filter(|m| !m.is_empty());
        let stored = if save_failed {
            // Once more, whole: a passing failure heals; a lasting one drops the session id.
            self.persist_whole(&session_id, &transcript, ctx).await
        } else {
            self.persist(&session_id, &transcript, &mut saved, ctx)
                .await
        };
        let text = match stop.partial {
            Some(p) => p,
            None => last_text,
        };
        let mut outcome = TaskOutcome::with_status(text, stop.status)
            .with_usage(usage)
            .with_children(children);
        if stored {
            outcome = outcome.with_session(session_id);
        }
        outcome.limit = stop.limit;
        if outcome.status == TaskStatus::Completed
            && let Some(value) = structured.as_ref().and_then(|s| s.accepted())
        {
            outcome.text = value.to_string();
            outcome.structured = Some(value);
        }
        Ok(outcome)
    }
}

impl AgentRuntime {
    /// Appends the messages not yet stored; false (after reporting it) when the store failed.
    async fn persist(
        &self,
        id: &str,
        t: &Transcript,
        saved: &mut usize,
        ctx: &TaskContext,
    ) -> bool {
        if *saved >= t.messages.len() {
            return true;
        }
        match self
            .store
            .append(id, t.system.as_deref(), &t.messages[*saved..])
            .await
        {
            Ok(()) => {
                *saved = t.messages.len();
                true
            }
            Err(e) => {
                report_unsaved(id, &e, ctx);
                false
            }
        }
    }

    /// Writes the whole transcript; false (after reporting it) when the store failed.
    async fn persist_whole(&self, id: &str, t: &Transcript, ctx: &TaskContext) -> bool {
        match self.store.replace(id, t.clone()).await {
            Ok(()) => true,
            Err(e) => {
                report_unsaved(id, &e, ctx);
                false
            }
        }
    }
}

fn report_unsaved(id: &str, e: &crate::TranscriptStoreError, ctx: &TaskContext) {
    tracing::warn!(agent = %ctx.agent(), session = %id, error = %e, "transcript not saved");
    ctx.emit(ProgressKind::Status {
        message: format!("warning: the transcript of session {id} was not saved: {e}"),
    });
}

/// Runs one requested tool call; every failure becomes an error result for the model.
async fn call_tool(tools: &[Arc<dyn Tool>], call: &ToolCall, ctx: &TaskContext) -> ToolOutput {
    let Some(tool) = tools.iter().find(|t| t.name() == call.name) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        return ToolOutput::error(format!(
            "unknown tool `{}`; available tools: {}",
            call.name,
            if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            }
        ));
    };
    // An OpenTelemetry GenAI `execute_tool` span; a `Task` call's `invoke_agent` nests in it.
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", call.name),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.tool.type = "function",
        error.type = tracing::field::Empty,
    );
    let result = AssertUnwindSafe(tool.call(call.arguments.clone(), ctx))
        .catch_unwind()
        .instrument(span.clone())
        .await;
    if !matches!(&result, Ok(Ok(out)) if !out.is_error) {
        span.record("error.type", "tool_error");
    }
    match result {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => ToolOutput::error(e.to_string()),
        Err(_) => ToolOutput::error(format!(
            "tool `{}` crashed (panicked) while handling this call",
            call.name
        )),
    }
}

/// True when prompts and answers may go into spans
/// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`); read once.
fn capture_content() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
    })
}

/// The OpenTelemetry GenAI `chat` span of one model call.
fn chat_span(request: &ChatRequest, model: &Arc<dyn subagent_spi::ChatModel>) -> tracing::Span {
    let span = tracing::info_span!(
        "chat",
        otel.name = tracing::field::Empty,
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = tracing::field::Empty,
        gen_ai.response.model = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.input.messages = tracing::field::Empty,
        gen_ai.output.messages = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let name = request
        .model
        .clone()
        .unwrap_or_else(|| model.model_name().to_string());
    span.record("otel.name", format!("chat {name}"));
    span.record("gen_ai.request.model", name);
    if capture_content() {
        span.record(
            "gen_ai.input.messages",
            serde_json::to_string(&request.messages).unwrap_or_default(),
        );
    }
    span
}

/// Records a model call's result on its `chat` span.
fn record_chat(
    span: &tracing::Span,
    outcome: &Guarded<Result<subagent_spi::ChatResponse, ModelError>>,
) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Guarded::Done(Ok(r)) => {
            subagent_core::telemetry::record_tokens(
                span,
                r.usage.input_tokens,
                r.usage.output_tokens,
            );
            if !r.model.is_empty() {
                span.record("gen_ai.response.model", r.model.as_str());
            }
            if capture_content() {
                span.record(
                    "gen_ai.output.messages",
                    serde_json::json!([{"role": "assistant", "content": r.content}]).to_string(),
                );
            }
        }
        Guarded::Done(Err(_)) => {
            span.record("error.type", "model_error");
        }
        Guarded::Cancelled => {
            span.record("error.type", "cancelled");
        }
        Guarded::Deadline => {
            span.record("error.type", "timeout");
        }
    }
}

/// Cuts `text` to at most `max_chars` characters and appends
/// `\n[output truncated: N characters cut of M]` when anything was cut.
pub fn truncate_output(text: String, max_chars: usize) -> String {
    if text.len() <= max_chars {
        return text; // byte length bounds the character count
    }
    let Some((cut_at, _)) = text.char_indices().nth(max_chars) else {
        return text;
    };
    let total = max_chars + text[cut_at..].chars().count();
    let mut out = String::with_capacity(cut_at + 64);
    out.push_str(&text[..cut_at]);
    out.push_str(&format!(
        "\n{TRUNCATION_MARKER_PREFIX} {} characters cut of {total}]",
        total - max_chars
    ));
    out
}

/// Gives every tool call of the last assistant message that has no result an error result, so
/// the transcript stays acceptable to providers when it is resumed.
fn answer_dangling_calls(messages: &mut Vec<ChatMessage>, reason: &str) {
    let Some(pos) = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::Assistant { .. }))
    else {
        return;
    };
    let ChatMessage::Assistant { tool_calls, .. } = &messages[pos] else {
        return;
    };
    let missing: Vec<(String, String)> = tool_calls
        .iter()
        .filter(|c| {
            !messages[pos + 1..]
                .iter()
                .any(|m| matches!(m, ChatMessage::Tool { call_id, .. } if *call_id == c.id))
        })
        .map(|c| (c.id.clone(), c.name.clone()))
        .collect();
    for (call_id, name) in missing {
        messages.push(ChatMessage::Tool {
            call_id,
            name,
            content: format!("not run: {reason}"),
            is_error: true,
        });
    }
}

fn lock(m: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The run's stop when `usage` has reached the token limit `max_tokens`.
fn tokens_spent(max_tokens: Option<u64>, usage: &Usage) -> Option<Stop> {
    let max = max_tokens.filter(|&max| usage.total_tokens() >= max)?;
    Some(Stop::limit(
        Limit::Tokens {
            max,
            scope: LimitScope::Run,
        },
        None,
    ))
}

fn min_opt<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn agent_name(ctx: &TaskContext, model: &Arc<dyn subagent_spi::ChatModel>) -> String {
    if ctx.agent().is_empty() {
        format!("(agent on model {})", model.model_name())
    } else {
        ctx.agent().to_string()
    }
}

fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// A fresh, unguessable session id: `sess_` and a random v4 UUID in hex.
fn new_session_id() -> String {
    format!("sess_{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate_output("abc".into(), 3), "abc");
        let out = truncate_output("äöüäöü".into(), 2);
        assert_eq!(out, "äö\n[output truncated: 4 characters cut of 6]");
        // multi-byte text whose byte length exceeds the cap but whose char count does not
        assert_eq!(truncate_output("ää".into(), 3), "ää");
    }

    #[test]
    fn session_ids_differ() {
        let a = new_session_id();
        let b = new_session_id();
        assert_ne!(a, b);
        assert!(a.starts_with("sess_") && a.len() == 37);
    }

    #[test]
    fn dangling_calls_get_results() {
        let mut msgs = vec![
            ChatMessage::user("hi"),
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall::new("a", "x", serde_json::json!({})),
                    ToolCall::new("b", "y", serde_json::json!({})),
                ],
            },
            ChatMessage::Tool {
                call_id: "a".into(),
                name: "x".into(),
                content: "ok".into(),
                is_error: false,
            },
        ];
        answer_dangling_calls(&mut msgs, "stopped");
        assert_eq!(msgs.len(), 4);
        assert!(
            matches!(&msgs[3], ChatMessage::Tool { call_id, is_error: true, .. } if call_id == "b")
        );
    }
}
