//! One child's run, metered and settled: its `invoke_agent` span, its progress events, its
//! typed result, the usage it reported charged once (crate::charge), the budget it reached,
//! and its duration.
//!
//! [`run`] reads as its steps: [`Run::admit`] (the typed result's schema), [`Run::start`] (the
//! `Started` event), [`Run::execute`] (the kind's executor), [`Run::report`] (the span and the
//! log line), [`Run::classify`] (an error that is an ending, not a failure), the typed
//! result enforced (crate::typed), [`Run::settle`] (charge, budget reached, duration).
//! Every failing step ends the run with a `Finished { Failed }` event ([`Run::fail`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use subagent_core::{Budget, BudgetExt, ModelPrices};
use subagent_spi::{
    BudgetLimits, Limit, ProgressKind, SubagentDefinition, SubagentError, TaskCall, TaskContext,
    TaskOutcome, TaskStatus,
};
use tracing::Instrument;

use crate::routing::Target;

/// A typed result's schema, and the call to retry with (crate::typed).
type Typed = Option<(subagent_schema::OutputSchema, TaskCall)>;

/// Runs `target` for `call` in `child` (already given its meter, `crate::charge::meter`) to
/// its end. `on_session` is told the session id of an outcome that has one, before the
/// `Finished` event.
///
/// Not an `async fn`: its arguments would stay in the future's state beside the run that
/// took them (docs/PERFORMANCE.md, "dispatch": a smaller future is copied less per level).
pub(crate) fn run<'t>(
    target: &'t Target,
    call: TaskCall,
    child: TaskContext,
    on_session: impl FnOnce(&str) + Send + 't,
) -> impl Future<Output = Result<TaskOutcome, SubagentError>> + Send + 't {
    let run = Run::new(target, &call, child);
    async move {
        let typed = run.admit(&call)?;
        let started = run.start(&call);
        let result = run.execute(call).await;
        let elapsed = started.elapsed();
        let _enter = run.span.enter();
        run.report(&result, elapsed);
        let mut outcome = run.classify(result)?;
        if let Some((schema, call)) = &typed {
            let (def, executor) = (run.target.def(), run.target.executor());
            // Awaited here, not in a step of its own: the typed result would be copied into it.
            outcome = crate::typed::enforce(schema, call, executor, def, &run.child, outcome)
                .await
                .map_err(|e| run.fail(e))?;
        }
        let outcome = run.settle(outcome, elapsed);
        if let Some(s) = &outcome.session_id {
            on_session(s);
        }
        run.child.emit(ProgressKind::Finished {
            status: outcome.status,
            usage: outcome.usage.clone(),
        });
        Ok(outcome)
    }
}

/// The state the steps of one run share.
struct Run<'t> {
    target: &'t Target,
    child: TaskContext,
    span: tracing::Span,
}

impl<'t> Run<'t> {
    /// The run, with its OpenTelemetry GenAI `invoke_agent` span (exported when the host
    /// installs an OTLP layer; nearly free otherwise). Its parent is the caller's `execute_tool
    /// Task` span, so a run's trace is its delegation tree.
    fn new(target: &'t Target, call: &TaskCall, child: TaskContext) -> Self {
        let def = target.def();
        let span =
            subagent_core::telemetry::invoke_agent_span(def.name(), child.task_id().unwrap_or(""));
        if !span.is_disabled() {
            span.record("gen_ai.request.model", call.model.as_deref());
            span.record("subagents.kind", target.kind().as_str());
            span.record("subagents.depth", i64::from(child.depth()));
            span.record("subagents.background", call.is_background());
        }
        Self {
            target,
            child,
            span,
        }
    }

    /// Ends the run as failed: the `Finished { Failed }` event, and `e` back.
    fn fail(&self, e: SubagentError) -> SubagentError {
        self.child.emit(ProgressKind::Finished {
            status: TaskStatus::Failed,
            usage: Default::default(),
        });
        e
    }

    /// The typed result's schema (crate::typed), with the call to retry with.
    fn admit(&self, call: &TaskCall) -> Result<Typed, SubagentError> {
        let profile = subagent_schema::Profile::host();
        match crate::typed::compile(call, self.target.def().name(), profile) {
            Ok(schema) => Ok(schema.map(|s| (s, call.clone()))),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The `Started` event; the clock the duration is read on.
    fn start(&self, call: &TaskCall) -> Instant {
        let started = Instant::now();
        if !self.child.progress().discards_events() {
            self.child.emit(ProgressKind::Started {
                description: call.description.clone(),
            });
        }
        started
    }

    /// The kind's executor running the call, in the run's span. Not an `async fn`: the call
    /// moves straight into the executor's future, not into a wrapper's state as well.
    fn execute(
        &self,
        call: TaskCall,
    ) -> impl Future<Output = Result<TaskOutcome, SubagentError>> + Send + '_ {
        let (def, executor) = (self.target.def(), self.target.executor());
        executor
            .execute(call, def.clone(), self.child.clone())
            .instrument(self.span.clone())
    }

    /// The span's status and usage fields, and the log line of the run's end.
    fn report(&self, result: &Result<TaskOutcome, SubagentError>, elapsed: Duration) {
        if !self.span.is_disabled() {
            subagent_core::telemetry::record_run_end(&self.span, result);
        }
        match result {
            Ok(o) => {
                tracing::info!(status = %o.status, duration_ms = elapsed.as_millis() as u64, "subagent task finished");
            }
            Err(e) => {
                tracing::info!(error = %e, duration_ms = elapsed.as_millis() as u64, "subagent task failed");
            }
        }
    }

    /// The outcome, or the error that ends the run as failed. A cancelled child is an outcome
    /// (`cancelled`), and so is one stopped by the spent budget of its subtree
    /// (`limit_reached`): it reached it.
    fn classify(
        &self,
        result: Result<TaskOutcome, SubagentError>,
    ) -> Result<TaskOutcome, SubagentError> {
        match result {
            Ok(o) => Ok(o),
            Err(SubagentError::Cancelled { .. }) => Ok(TaskOutcome::with_status(
                String::new(),
                TaskStatus::Cancelled,
            )),
            Err(_) if self.child.cancel().is_cancelled() && budget_spent(&self.child).is_some() => {
                Ok(TaskOutcome::with_status(
                    String::new(),
                    TaskStatus::LimitReached,
                ))
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// What it reported and did not charge, charged now (crate::charge); the budget it
    /// reached; its duration when the kind reported none.
    fn settle(&self, mut outcome: TaskOutcome, elapsed: Duration) -> TaskOutcome {
        crate::charge::settle(&self.child, &mut outcome);
        // Any kind (a remote one too) cancelled because the subtree's budget is spent reports
        // the budget it reached, with its partial result.
        if matches!(
            outcome.status,
            TaskStatus::Cancelled | TaskStatus::LimitReached
        ) && outcome.limit.is_none()
            && let Some(spent) = budget_spent(&self.child)
        {
            outcome.status = TaskStatus::LimitReached;
            outcome.limit = Some(spent);
        }
        if outcome.usage.duration_ms == 0 {
            outcome.usage.duration_ms = elapsed.as_millis() as u64;
        }
        outcome
    }
}

/// `child` with the agent's own budget `limits`, nested in `caller`'s so it gets at most what
/// is left there, cancelling only its subtree when spent and naming the agent; counted with
/// `prices` when neither budget has prices.
pub(crate) fn with_agent_budget(
    child: TaskContext,
    def: &dyn SubagentDefinition,
    limits: BudgetLimits,
    prices: Option<&Arc<ModelPrices>>,
    caller: &TaskContext,
) -> TaskContext {
    let cancel = child.cancel().clone();
    let mut budget = match caller.budget() {
        Some(up) => up.nested(limits, cancel),
        None => Budget::new(limits, cancel),
    };
    if budget.prices().is_none()
        && let Some(p) = prices
    {
        budget = budget.with_prices(p.clone());
    }
    child.with_budget(budget.with_owner(def.name()))
}

/// The limit the budget of `ctx`'s subtree was spent on, if it was.
fn budget_spent(ctx: &TaskContext) -> Option<Limit> {
    ctx.budget().and_then(|b| b.spent())
}
