//! A Task tool over `FN` agents that count their calls, and a workflow runner over it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use subagent_spi::{SubagentError, TaskContext, TaskOutcome, Usage};
use subagent_testkit::{FnKind, fn_ref};
use subagent_workflow::{MemoryJournal, WorkflowLimits, WorkflowOutcome, Workflows};
use tokio::sync::Notify;

/// How many times each agent ran, by the prompt it got.
#[derive(Debug, Default, Clone)]
pub(crate) struct Calls(Arc<Mutex<HashMap<String, usize>>>);

impl Calls {
    pub(crate) fn record(&self, prompt: &str) {
        *self
            .0
            .lock()
            .unwrap()
            .entry(prompt.to_string())
            .or_default() += 1;
    }

    pub(crate) fn of(&self, prompt: &str) -> usize {
        self.0.lock().unwrap().get(prompt).copied().unwrap_or(0)
    }

    pub(crate) fn total(&self) -> usize {
        self.0.lock().unwrap().values().sum()
    }
}

/// The agents: `echo` (answers `echo:PROMPT`, 10 tokens), `json` (answers its prompt, for typed
/// calls), `fail` (an execution error), `gate` (waits until the gate opens, then echoes),
/// `slow` (waits `ms` from its prompt, then echoes).
pub(crate) struct World {
    pub(crate) calls: Calls,
    pub(crate) gate: Arc<Notify>,
    pub(crate) peak: Arc<AtomicUsize>,
    pub(crate) workflows: Workflows,
    pub(crate) journal: Arc<MemoryJournal>,
}

impl World {
    /// Runs `script` with no arguments at the top level; its outcome (a failed script included:
    /// see [`WorkflowOutcome::error`]). Panics when the script cannot start.
    pub(crate) async fn run(&self, script: &str) -> WorkflowOutcome {
        self.workflows
            .run(script, serde_json::json!({}), &TaskContext::new())
            .await
            .expect("the script starts")
    }

    pub(crate) async fn new(limits: WorkflowLimits) -> Self {
        Self::with_cap(limits, 20).await
    }

    pub(crate) async fn with_cap(limits: WorkflowLimits, max_concurrent: usize) -> Self {
        let calls = Calls::default();
        let gate = Arc::new(Notify::new());
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (c1, c2, c3, c4) = (calls.clone(), calls.clone(), calls.clone(), calls.clone());
        let g = gate.clone();
        let (r, p) = (running.clone(), peak.clone());
        let kind = FnKind::new()
            .agent("echo", move |call, _ctx| {
                let c = c1.clone();
                async move {
                    c.record(&call.prompt);
                    Ok(TaskOutcome::completed(format!("echo:{}", call.prompt))
                        .with_usage(Usage::new().with_tokens(6, 4).with_turns(1)))
                }
            })
            .agent("json", move |call, _ctx| {
                let c = c2.clone();
                async move {
                    c.record(&call.prompt);
                    Ok(TaskOutcome::completed(call.prompt))
                }
            })
            .agent("fail", |call, _ctx| async move {
                Err::<TaskOutcome, _>(SubagentError::execution("fail", format!("refused {}", call.prompt)))
            })
            .agent("gate", move |call, ctx: TaskContext| {
                let (c, g) = (c3.clone(), g.clone());
                async move {
                    tokio::select! {
                        () = g.notified() => {}
                        () = ctx.cancel().cancelled() => return Ok(TaskOutcome::with_status("", subagent_spi::TaskStatus::Cancelled)),
                    }
                    c.record(&call.prompt);
                    Ok(TaskOutcome::completed(format!("gate:{}", call.prompt)))
                }
            })
            .agent("slow", move |call, _ctx| {
                let (c, r, p) = (c4.clone(), r.clone(), p.clone());
                async move {
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    p.fetch_max(now, Ordering::SeqCst);
                    let ms: u64 = call.prompt.split(':').next_back().and_then(|s| s.parse().ok()).unwrap_or(1);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    r.fetch_sub(1, Ordering::SeqCst);
                    c.record(&call.prompt);
                    Ok(TaskOutcome::completed(format!("slow:{}", call.prompt)))
                }
            })
            .into_type();
        let task = task_tool::TaskTool::builder()
            .subagent_type(kind)
            .subagent_reference(fn_ref("echo"))
            .subagent_reference(fn_ref("json"))
            .subagent_reference(fn_ref("fail"))
            .subagent_reference(fn_ref("gate"))
            .subagent_reference(fn_ref("slow"))
            .max_concurrent(max_concurrent)
            .build()
            .await
            .expect("task tool");
        let journal = Arc::new(MemoryJournal::new());
        let workflows = Workflows::new(Arc::new(task), journal.clone()).with_limits(limits);
        Self {
            calls,
            gate,
            peak,
            workflows,
            journal,
        }
    }
}
