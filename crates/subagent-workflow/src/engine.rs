//! The script's side: QuickJS on a thread of its own, its limits, and its event loop.
//!
//! The engine never runs on an async worker thread: [`spawn`] starts a dedicated thread (16 MiB
//! of stack, of which the script may use [`WorkflowLimits::max_stack`]) that owns the runtime.
//! The script talks to the host only through two channels: calls go out as [`ToHost`]
//! messages, values come back as [`ToJs`] deliveries. The loop is: run every pending job, then
//! hand the script exactly one value, then run the jobs again. Because one value is handed over
//! at a time and the script has no clock or randomness, what the script does is a function of
//! the order values are handed over in; the journal records that order (`seq`) and a resume
//! hands the finished values over again in it, so the script makes the same calls at the same
//! positions.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use rquickjs::context::intrinsic;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Persistent, Promise, Runtime};
use serde_json::Value;
use sha2::{Digest, Sha256};
use subagent_spi::CancellationToken;

use crate::error::{SCRIPT_NAME, WorkflowError};
use crate::journal::CallKind;
use crate::limits::WorkflowLimits;

/// The API the script sees (agent, parallel, ask, log, console, args).
const PRELUDE: &str = include_str!("prelude.js");

/// The engine thread's stack.
const THREAD_STACK: usize = 16 * 1024 * 1024;

/// Log lines waiting for the host past which more are dropped.
const MAX_PENDING_LOGS: usize = 1_000;

/// The longest log line kept.
const MAX_LOG_CHARS: usize = 2_000;

/// A prompt, question or description longer than this is refused.
const MAX_PROMPT_BYTES: usize = 1024 * 1024;

/// What a call asks for.
#[derive(Debug, Clone)]
pub(crate) enum Request {
    Agent(AgentRequest),
    Ask { question: String },
}

/// What an `agent()` call asks for.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentRequest {
    pub(crate) name: String,
    pub(crate) prompt: String,
    pub(crate) schema: Option<Value>,
    pub(crate) model: Option<String>,
    pub(crate) description: Option<String>,
}

impl Request {
    pub(crate) fn kind(&self) -> CallKind {
        match self {
            Request::Agent(_) => CallKind::Agent,
            Request::Ask { .. } => CallKind::Ask,
        }
    }

    /// The agent's name (`ask` for a question).
    pub(crate) fn agent(&self) -> &str {
        match self {
            Request::Agent(a) => &a.name,
            Request::Ask { .. } => "ask",
        }
    }

    /// The description the script gave (empty when none).
    pub(crate) fn description(&self) -> &str {
        match self {
            Request::Agent(a) => a.description.as_deref().unwrap_or(""),
            Request::Ask { .. } => "",
        }
    }

    /// SHA-256 (hex) of the inputs: kind, agent, prompt, schema, model, description.
    pub(crate) fn hash(&self) -> String {
        let canonical = match self {
            Request::Agent(a) => serde_json::json!({
                "kind": "agent", "agent": a.name, "prompt": a.prompt, "schema": a.schema,
                "model": a.model, "description": a.description,
            }),
            Request::Ask { question } => serde_json::json!({"kind": "ask", "question": question}),
        };
        let mut h = Sha256::new();
        h.update(canonical.to_string().as_bytes());
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A call the script made, for the host to run.
#[derive(Debug)]
pub(crate) struct Issued {
    pub(crate) position: u32,
    pub(crate) request: Request,
    pub(crate) hash: String,
    /// The unfinished journal entry's child session, to continue instead of starting afresh.
    pub(crate) resume_session: Option<String>,
    /// True when the journal held this position unfinished (a run again after a crash).
    pub(crate) again: bool,
}

/// From the engine to the host.
#[derive(Debug)]
pub(crate) enum ToHost {
    Call(Box<Issued>),
    Log(String),
}

/// From the host to the engine.
#[derive(Debug)]
pub(crate) enum ToJs {
    /// A call ended: the value the script gets (`ok`), or the error it gets.
    Deliver {
        position: u32,
        ok: bool,
        value: Value,
    },
    /// The host cannot go on (the journal failed).
    Stop(WorkflowError),
}

/// A journal entry as the engine needs it on a resume.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub(crate) agent: String,
    pub(crate) hash: String,
    pub(crate) session: Option<String>,
    /// `(ok, value)` when finished.
    pub(crate) finished: Option<(bool, Value)>,
}

/// What a resume starts from: the journal's entries by position, and the finished ones in the
/// order the script got their values.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    pub(crate) known: HashMap<u32, Known>,
    pub(crate) order: Vec<u32>,
}

/// Everything the engine thread needs.
pub(crate) struct EngineInput {
    pub(crate) script: String,
    pub(crate) args: Value,
    pub(crate) limits: WorkflowLimits,
    pub(crate) replay: Replay,
    pub(crate) cancel: CancellationToken,
    pub(crate) to_host: tokio::sync::mpsc::UnboundedSender<ToHost>,
    pub(crate) from_host: mpsc::Receiver<ToJs>,
    /// Log lines sent and not yet taken by the host.
    pub(crate) pending_logs: Arc<AtomicUsize>,
}

/// Starts the engine thread; its result arrives on the returned receiver.
pub(crate) fn spawn(
    input: EngineInput,
) -> Result<tokio::sync::oneshot::Receiver<Result<Value, WorkflowError>>, WorkflowError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("workflow-js".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let _ = tx.send(run(input));
        })
        .map_err(|e| WorkflowError::Engine(format!("cannot start the engine thread: {e}")))?;
    Ok(rx)
}

/// The engine's state shared by the host functions the script calls.
struct State {
    limits: WorkflowLimits,
    /// The first error that stops the run (a limit, a divergence, a host stop): once set, the
    /// interrupt handler stops the script whatever it catches.
    stop: RefCell<Option<WorkflowError>>,
    next_position: Cell<u32>,
    /// Calls made whose value the script has not got yet.
    outstanding: Cell<usize>,
    replay: Replay,
    /// Positions of the replay the script made in this run.
    replay_issued: RefCell<HashSet<u32>>,
    /// Still handing finished values over (log lines are not repeated meanwhile).
    replaying: Cell<bool>,
    to_host: tokio::sync::mpsc::UnboundedSender<ToHost>,
    pending_logs: Arc<AtomicUsize>,
}

impl State {
    fn set_stop(&self, e: WorkflowError) {
        let mut stop = self.stop.borrow_mut();
        if stop.is_none() {
            *stop = Some(e);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.borrow().is_some()
    }

    /// `issue(kind, payload)` of the prelude: checks and records one call; returns its position.
    fn issue(&self, kind: &str, payload: &str) -> Result<u32, String> {
        if self.stopped() {
            return Err("the workflow is stopping".into());
        }
        let request = parse_request(kind, payload)?;
        let position = self.next_position.get();
        let max = self.limits.max_agent_calls;
        if position >= max {
            let e = WorkflowError::limit(
                format!("max_agent_calls={max}"),
                format!(
                    "call #{position} (`{}`) is one more than the run may make",
                    request.agent()
                ),
            );
            let text = e.to_string();
            self.set_stop(e);
            return Err(text);
        }
        let hash = request.hash();
        let (resume_session, again) = match self.replay.known.get(&position) {
            Some(known) if known.hash != hash => {
                let now = request.agent();
                let reason = if known.agent == now {
                    "its inputs changed (prompt, schema, model or description)".to_string()
                } else {
                    format!("the script now calls `{now}` there")
                };
                let e = WorkflowError::Diverged {
                    position,
                    agent: known.agent.clone(),
                    reason,
                };
                let text = e.to_string();
                self.set_stop(e);
                return Err(text);
            }
            Some(known) if known.finished.is_some() => {
                self.replay_issued.borrow_mut().insert(position);
                self.next_position.set(position + 1);
                self.outstanding.set(self.outstanding.get() + 1);
                return Ok(position);
            }
            Some(known) => (known.session.clone(), true),
            None => (None, false),
        };
        let issued = Issued {
            position,
            request,
            hash,
            resume_session,
            again,
        };
        if self.to_host.send(ToHost::Call(Box::new(issued))).is_err() {
            return Err("the workflow host has stopped".into());
        }
        self.next_position.set(position + 1);
        self.outstanding.set(self.outstanding.get() + 1);
        Ok(position)
    }

    fn log(&self, text: String) {
        if self.replaying.get() {
            return;
        }
        if self.pending_logs.fetch_add(1, Ordering::Relaxed) >= MAX_PENDING_LOGS {
            self.pending_logs.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        let _ = self
            .to_host
            .send(ToHost::Log(subagent_schema::cut(&text, MAX_LOG_CHARS)));
    }
}

/// The request a prelude payload describes; an error the script gets as a `TypeError`.
fn parse_request(kind: &str, payload: &str) -> Result<Request, String> {
    let v: Value = serde_json::from_str(payload).map_err(|e| format!("bad call payload: {e}"))?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let checked = |what: &str, s: String| {
        if s.len() > MAX_PROMPT_BYTES {
            Err(format!(
                "the {what} is longer than {MAX_PROMPT_BYTES} bytes"
            ))
        } else {
            Ok(s)
        }
    };
    match kind {
        "agent" => {
            let name = text("name").ok_or("agent(): no agent name")?;
            if name.chars().count() > 256 {
                return Err("agent(): the agent name is longer than 256 characters".into());
            }
            let schema = v.get("schema").cloned();
            if let Some(s) = &schema {
                // A schema from a script is the model's: the strict profile, as for Task.
                subagent_schema::OutputSchema::compile(s, subagent_schema::Profile::untrusted())
                    .map_err(|e| format!("agent(\"{name}\"): schema: {e}"))?;
            }
            Ok(Request::Agent(AgentRequest {
                prompt: checked("prompt", text("prompt").unwrap_or_default())?,
                schema,
                model: text("model"),
                description: text("description")
                    .map(|d| checked("description", d))
                    .transpose()?,
                name,
            }))
        }
        "ask" => Ok(Request::Ask {
            question: checked("question", text("question").unwrap_or_default())?,
        }),
        other => Err(format!("unknown call kind `{other}`")),
    }
}

/// Runs the script to its end on this thread.
fn run(input: EngineInput) -> Result<Value, WorkflowError> {
    let EngineInput {
        script,
        args,
        limits,
        replay,
        cancel,
        to_host,
        from_host,
        pending_logs,
    } = input;
    let engine = |e: rquickjs::Error| WorkflowError::Engine(e.to_string());
    let deadline = Instant::now() + limits.max_wall_time;
    let rt = Runtime::new().map_err(engine)?;
    rt.set_memory_limit(limits.max_memory);
    rt.set_max_stack_size(limits.max_stack);
    let state = Rc::new(State {
        limits: limits.clone(),
        stop: RefCell::new(None),
        next_position: Cell::new(0),
        outstanding: Cell::new(0),
        replaying: Cell::new(!replay.order.is_empty()),
        replay,
        replay_issued: RefCell::new(HashSet::new()),
        to_host,
        pending_logs,
    });
    {
        let state = state.clone();
        let steps = Cell::new(0u64);
        let cancel = cancel.clone();
        rt.set_interrupt_handler(Some(Box::new(move || {
            let n = steps.get() + 1;
            steps.set(n);
            if state.stopped() {
                return true;
            }
            if n > state.limits.max_steps {
                state.set_stop(WorkflowError::limit(
                    format!("max_steps={}", state.limits.max_steps),
                    "the script computed too long without waiting for an agent",
                ));
                return true;
            }
            if Instant::now() >= deadline {
                state.set_stop(wall_time(&state.limits));
                return true;
            }
            if cancel.is_cancelled() {
                state.set_stop(WorkflowError::Cancelled);
                return true;
            }
            false
        })));
    }
    // No Date, WeakRef (its results depend on the collector's timing) or performance clock.
    let ctx = Context::custom::<(
        intrinsic::Eval,
        intrinsic::RegExpCompiler,
        intrinsic::RegExp,
        intrinsic::Json,
        intrinsic::MapSet,
        intrinsic::TypedArrays,
        intrinsic::Promise,
        intrinsic::Proxy,
    )>(&rt)
    .map_err(engine)?;
    let args_json = args.to_string();
    let setup = ctx.with(
        |ctx| -> Result<
            (Persistent<Function<'static>>, Persistent<Promise<'static>>),
            WorkflowError,
        > {
            let s = state.clone();
            let issue = Function::new(
                ctx.clone(),
                move |ctx: Ctx<'_>, kind: String, payload: String| {
                    s.issue(&kind, &payload)
                        .map_err(|m| rquickjs::Exception::throw_type(&ctx, &m))
                },
            )
            .map_err(engine)?;
            let s = state.clone();
            let log =
                Function::new(ctx.clone(), move |text: String| s.log(text)).map_err(engine)?;
            let install: Function<'_> = ctx
                .eval_with_options(PRELUDE, eval_options("prelude.js"))
                .catch(&ctx)
                .map_err(|e| WorkflowError::Engine(format!("the prelude failed: {e}")))?;
            let deliver: Function<'_> = install
                .call((issue, log, args_json.as_str()))
                .catch(&ctx)
                .map_err(|e| WorkflowError::Engine(format!("the prelude failed: {e}")))?;
            // Top-level `await` and `return`: the script is the body of an async function. The
            // wrapper keeps the script's first line on line 1, so line numbers are the file's.
            let wrapped = format!("(async () => {{{script}\n}})()");
            let main: Promise<'_> = ctx
                .eval_with_options(wrapped, eval_options(SCRIPT_NAME))
                .catch(&ctx)
                .map_err(|e| caught(e, &state))?;
            Ok((
                Persistent::save(&ctx, deliver),
                Persistent::save(&ctx, main),
            ))
        },
    );
    let result = match setup {
        Ok((deliver, main)) => {
            let r = event_loop(
                &rt, &ctx, &state, &deliver, &main, &from_host, deadline, &cancel,
            );
            // Persistent values are dropped before the runtime.
            drop(deliver);
            drop(main);
            r
        }
        Err(e) => Err(state.stop.borrow_mut().take().unwrap_or(e)),
    };
    drop(ctx);
    drop(rt);
    result
}

fn eval_options(name: &str) -> rquickjs::context::EvalOptions {
    let mut o = rquickjs::context::EvalOptions::default();
    o.global = true;
    o.strict = false;
    o.backtrace_barrier = true;
    o.filename = Some(name.to_string());
    o
}

fn wall_time(limits: &WorkflowLimits) -> WorkflowError {
    WorkflowError::limit(
        format!("max_wall_time={}s", limits.max_wall_time.as_secs()),
        "the run took longer than its wall-time limit",
    )
}

/// Runs jobs and hands values over until the script's promise settles or the run stops.
#[allow(clippy::too_many_arguments)]
fn event_loop(
    rt: &Runtime,
    ctx: &Context,
    state: &State,
    deliver: &Persistent<Function<'static>>,
    main: &Persistent<Promise<'static>>,
    from_host: &mpsc::Receiver<ToJs>,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Value, WorkflowError> {
    let mut cursor = 0usize;
    loop {
        // Every job the last value (or the start) made runnable.
        loop {
            match rt.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(job) => {
                    if state.stopped() {
                        break;
                    }
                    let e = job.0.with(|ctx| describe(ctx.catch(), state));
                    return Err(e);
                }
            }
        }
        if let Some(e) = state.stop.borrow_mut().take() {
            return Err(e);
        }
        let settled = ctx.with(|ctx| -> Option<Result<Value, WorkflowError>> {
            let main = main.clone().restore(&ctx).ok()?;
            match main.state() {
                rquickjs::promise::PromiseState::Pending => None,
                rquickjs::promise::PromiseState::Resolved => {
                    let v: rquickjs::Value<'_> = main.result()?.ok()?;
                    Some(to_json(&ctx, v, state))
                }
                rquickjs::promise::PromiseState::Rejected => {
                    let e = match main.result::<rquickjs::Value<'_>>()? {
                        Err(rquickjs::Error::Exception) => describe(ctx.catch(), state),
                        Err(e) => WorkflowError::Engine(e.to_string()),
                        Ok(v) => describe(v, state),
                    };
                    Some(Err(e))
                }
            }
        });
        if let Some(r) = settled {
            return r;
        }
        // The next finished value of the journal, in the order the script first got it.
        if let Some(&position) = state.replay.order.get(cursor) {
            if !state.replay_issued.borrow().contains(&position) {
                let agent = state
                    .replay
                    .known
                    .get(&position)
                    .map(|k| k.agent.clone())
                    .unwrap_or_default();
                return Err(WorkflowError::Diverged {
                    position,
                    agent,
                    reason: "the journal holds its result, but the script did not make this call \
                             before needing it (it took another path)"
                        .into(),
                });
            }
            cursor += 1;
            if cursor == state.replay.order.len() {
                state.replaying.set(false);
            }
            let (ok, value) = state
                .replay
                .known
                .get(&position)
                .and_then(|k| k.finished.clone())
                .unwrap_or((false, Value::Null));
            hand_over(ctx, state, deliver, position, ok, &value)?;
            continue;
        }
        if state.outstanding.get() == 0 {
            return Err(WorkflowError::Script {
                message: "the script waits for a promise that no agent(), ask() or parallel() \
                          call settles"
                    .into(),
                line: None,
            });
        }
        // Wait for the host: slices, so a cancel or the deadline is seen.
        let message = loop {
            if cancel.is_cancelled() {
                return Err(WorkflowError::Cancelled);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(wall_time(&state.limits));
            }
            match from_host.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(m) => break m,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(WorkflowError::Cancelled),
            }
        };
        match message {
            ToJs::Deliver {
                position,
                ok,
                value,
            } => hand_over(ctx, state, deliver, position, ok, &value)?,
            ToJs::Stop(e) => return Err(e),
        }
    }
}

/// Settles the promise of the call at `position` with `value`.
fn hand_over(
    ctx: &Context,
    state: &State,
    deliver: &Persistent<Function<'static>>,
    position: u32,
    ok: bool,
    value: &Value,
) -> Result<(), WorkflowError> {
    state
        .outstanding
        .set(state.outstanding.get().saturating_sub(1));
    let json = value.to_string();
    ctx.with(|ctx| {
        let f = deliver
            .clone()
            .restore(&ctx)
            .map_err(|e| WorkflowError::Engine(e.to_string()))?;
        f.call::<_, ()>((position, ok, json.as_str()))
            .catch(&ctx)
            .map_err(|e| caught(e, state))
    })
}

/// The script's value as JSON (`undefined` is `null`), within the size limit.
fn to_json<'js>(
    ctx: &Ctx<'js>,
    v: rquickjs::Value<'js>,
    state: &State,
) -> Result<Value, WorkflowError> {
    let text = match ctx.json_stringify(v).catch(ctx) {
        Ok(Some(s)) => s
            .to_string()
            .map_err(|e| WorkflowError::Engine(e.to_string()))?,
        Ok(None) => return Ok(Value::Null),
        Err(e) => {
            return Err(WorkflowError::Script {
                message: format!("the script's result is not JSON: {}", caught(e, state)),
                line: None,
            });
        }
    };
    let max = state.limits.max_value_bytes;
    if text.len() > max {
        return Err(WorkflowError::limit(
            format!("max_value_bytes={max}"),
            format!("the script's result is {} bytes of JSON", text.len()),
        ));
    }
    serde_json::from_str(&text).map_err(|e| WorkflowError::Engine(e.to_string()))
}

/// A caught JS error as a workflow error (the stop reason first, when there is one).
fn caught(e: CaughtError<'_>, state: &State) -> WorkflowError {
    match e {
        CaughtError::Exception(ex) => describe(ex.into_value(), state),
        CaughtError::Value(v) => describe(v, state),
        CaughtError::Error(e) => state
            .stop
            .borrow_mut()
            .take()
            .unwrap_or_else(|| from_text(e.to_string(), None, &state.limits)),
    }
}

/// A thrown value as a workflow error (the stop reason first, when there is one).
fn describe(v: rquickjs::Value<'_>, state: &State) -> WorkflowError {
    if let Some(stop) = state.stop.borrow_mut().take() {
        return stop;
    }
    match rquickjs::Exception::from_value(v.clone()) {
        Ok(ex) => {
            let message = ex.message().unwrap_or_default();
            let name: String = ex.get("name").unwrap_or_else(|_| "Error".to_string());
            from_text(
                format!("{name}: {message}"),
                ex.stack().as_deref(),
                &state.limits,
            )
        }
        Err(_) => from_text(value_text(&v), None, &state.limits),
    }
}

fn value_text(v: &rquickjs::Value<'_>) -> String {
    v.as_string()
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| format!("uncaught {}", v.type_name()))
}

/// The error of an exception's text and stack: out of memory and stack overflow are limits;
/// else the script's error with the first line of the script its stack names.
fn from_text(text: String, stack: Option<&str>, limits: &WorkflowLimits) -> WorkflowError {
    let lower = text.to_lowercase();
    if lower.contains("out of memory") {
        return WorkflowError::limit(
            format!("max_memory={}", limits.max_memory),
            "the script ran out of memory",
        );
    }
    if lower.contains("stack overflow") || lower.contains("call stack size") {
        return WorkflowError::limit(
            format!("max_stack={}", limits.max_stack),
            "the script recursed too deeply",
        );
    }
    let line = stack.and_then(script_line).or_else(|| script_line(&text));
    WorkflowError::Script {
        message: text,
        line,
    }
}

/// The first `workflow.js:LINE` in `s`.
fn script_line(s: &str) -> Option<u32> {
    let marker = format!("{SCRIPT_NAME}:");
    let at = s.find(&marker)? + marker.len();
    let digits: String = s[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_covers_every_input() {
        let base = AgentRequest {
            name: "a".into(),
            prompt: "p".into(),
            ..AgentRequest::default()
        };
        let h = Request::Agent(base.clone()).hash();
        assert_eq!(h.len(), 64);
        let changed = [
            AgentRequest {
                name: "b".into(),
                ..base.clone()
            },
            AgentRequest {
                prompt: "q".into(),
                ..base.clone()
            },
            AgentRequest {
                schema: Some(serde_json::json!({"type": "object"})),
                ..base.clone()
            },
            AgentRequest {
                model: Some("m".into()),
                ..base.clone()
            },
            AgentRequest {
                description: Some("d".into()),
                ..base.clone()
            },
        ]
        .map(Request::Agent);
        for c in changed {
            assert_ne!(c.hash(), h, "{c:?}");
        }
    }

    #[test]
    fn lines_come_from_the_stack() {
        assert_eq!(
            script_line("    at <anonymous> (workflow.js:12:5)\n"),
            Some(12)
        );
        assert_eq!(script_line("nothing"), None);
    }
}
