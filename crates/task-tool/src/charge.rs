//! Every child's reported usage charged to its budget exactly once, whatever its kind.
//!
//! Some kinds charge the budget as they go (the Claude-style loop charges each turn, the A2A
//! client its peer's usage report); a kind written against the SPI alone (the HTTP kind, any
//! third-party kind) need not. So the child runs with a [`Budget::meter`] over its budget,
//! which counts what its subtree charged, and when it ends [`Budget::settle`] charges what its
//! outcome reports beyond that: nothing more for a kind that charged it all, the rest for one
//! that charged part, everything for one that charged nothing. A spent budget turns a
//! completed result into `limit_reached` naming the budget, the text kept, and the caller's
//! next delegation is refused.
//!
//! Each run settles its own report, whenever it ends: a child's meter credits only what the
//! child charged itself, not what the runs it started charged (they settle theirs), so a
//! background grandchild that outlives its parent takes nothing off the parent's bill. When a
//! run is handed a child's result (a foreground `Task` result, a background one read with
//! `TaskOutput` or `TaskStop`), the child's node is noted as settled ([`noted`]), and the run's
//! own settling skips it. A background run that fails, or is cut off after its stop grace, is
//! settled with the usage it announced ([`settle_announced`]), so its node is settled too.

use subagent_core::{Budget, BudgetExt};
use subagent_spi::{SubagentError, TaskContext, TaskOutcome, TaskStatus, Usage};

/// `child` with a meter over its budget, when it has one (see the module docs).
pub(crate) fn meter(child: TaskContext) -> TaskContext {
    match child.budget().map(Budget::meter) {
        Some(meter) => child.with_budget(meter),
        None => child,
    }
}

/// Charges what `outcome` reports and `child`'s run did not charge (`child` is the context
/// [`meter`] returned). When the budget is spent, a completed or `needs_input` outcome becomes
/// `limit_reached` naming it.
pub(crate) fn settle(child: &TaskContext, outcome: &mut TaskOutcome) {
    let Some(budget) = child.budget() else {
        return;
    };
    if let Some(limit) = budget.settle(&outcome.usage, &outcome.children)
        && matches!(
            outcome.status,
            TaskStatus::Completed | TaskStatus::NeedsInput
        )
    {
        outcome.status = TaskStatus::LimitReached;
        outcome.limit = Some(limit);
    }
}

/// Notes on `caller`'s meter that the run `task_id`, whose result `caller`'s run is handed,
/// settled its report itself (see the module docs).
pub(crate) fn noted(caller: &TaskContext, task_id: &str) {
    if let Some(budget) = caller.budget() {
        budget.note_settled(task_id);
    }
}

/// Charges what a background run that ended without an outcome (it failed, or was cut off)
/// announced and did not charge, on its `meter`.
pub(crate) fn settle_announced(meter: Option<&Budget>, announced: &Usage) {
    if let Some(meter) = meter {
        meter.settle(announced, &[]);
    }
}

/// Refuses a delegation from a run whose budget is spent, naming the budget.
pub(crate) fn refuse_if_spent(ctx: &TaskContext, agent: &str) -> Result<(), SubagentError> {
    match ctx.budget().and_then(Budget::spent) {
        Some(limit) => Err(SubagentError::LimitReached {
            agent: agent.to_string(),
            limit,
        }),
        None => Ok(()),
    }
}
