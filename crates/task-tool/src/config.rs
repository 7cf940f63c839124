//! The Task tool's settings ([`TaskConfig`]): depth, concurrency, background and timing
//! limits, with their defaults.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use subagent_core::InboxLimits;
use subagent_core::ModelPrices;
use subagent_spi::BudgetLimits;

use crate::concurrency::DEFAULT_MAX_CONCURRENT;

/// The default nesting limit: the main agent (depth 0), its children (1) and grandchildren (2)
/// may delegate; agents at depth 3 are not offered `Task`. Claude Code's default too.
pub const DEFAULT_MAX_DEPTH: u32 = 3;

/// The highest nesting limit accepted: a bound on recursion whatever the configuration says.
pub const MAX_DEPTH_CAP: u32 = 16;

/// Limits of a [`TaskTool`](crate::TaskTool); set through the builder.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskConfig {
    /// Maximum background tasks running at once.
    pub max_background: usize,
    /// How long a finished background result stays readable.
    pub result_ttl: Duration,
    /// Maximum finished background results kept.
    pub max_retained: usize,
    /// Grace period after `TaskStop` cancels a task.
    pub stop_grace: Duration,
    /// Maximum session ids remembered for `resume` routing.
    pub max_sessions: usize,
    /// The nesting limit: a run at depth `d` may delegate only when `d < max_depth`.
    pub max_depth: u32,
    /// Children working at once over the whole tree (foreground and background); calls over
    /// it wait their turn. See [`TaskToolBuilder::max_concurrent`](crate::TaskToolBuilder::max_concurrent) for the rule.
    pub max_concurrent: usize,
    /// Budgets of their own for agents, by name (a host's configuration): they win over the
    /// agent's [`SubagentDefinition::budget`](subagent_spi::SubagentDefinition::budget). See [`TaskToolBuilder::agent_budget`](crate::TaskToolBuilder::agent_budget).
    pub agent_budgets: HashMap<String, BudgetLimits>,
    /// The prices an agent's own budget counts cost with when its caller has no budget (else
    /// the caller's budget's prices).
    pub prices: Option<Arc<ModelPrices>>,
    /// The bounds of each background task's inbox (`SendMessage`): unread messages and bytes
    /// per message. See [`TaskToolBuilder::inbox_limits`](crate::TaskToolBuilder::inbox_limits).
    pub inbox: InboxLimits,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            max_background: 16,
            result_ttl: Duration::from_secs(30 * 60),
            max_retained: 10_000,
            stop_grace: Duration::from_secs(5),
            max_sessions: 10_000,
            max_depth: DEFAULT_MAX_DEPTH,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            agent_budgets: HashMap::new(),
            prices: None,
            inbox: InboxLimits::default(),
        }
    }
}
