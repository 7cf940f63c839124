//! The limits a budget over a delegated subtree may set: what a definition declares
//! ([`SubagentDefinition::budget`](crate::SubagentDefinition::budget)) and a host configures.
//! The accounting (charging runs, prices, spending) is policy and lives outside the contract
//! (`subagent-core`'s `Budget`).

use std::time::Duration;

use derive_setters::Setters;

/// The limits of a budget; `None` means unlimited.
#[derive(Debug, Clone, Default, PartialEq, Setters)]
#[setters(prefix = "with_", strip_option)]
#[non_exhaustive]
pub struct BudgetLimits {
    /// Tokens (input + output) over the whole subtree.
    pub tokens: Option<u64>,
    /// Model turns over the whole subtree.
    pub turns: Option<u32>,
    /// Wall time from when the budget was set.
    pub time: Option<Duration>,
    /// Cost in USD over the whole subtree, counted with the host's model prices; tokens of a
    /// model without a price do not count.
    pub usd: Option<f64>,
    /// Not a limit: the tokens a remote run is counted as at least when its usage report is
    /// refused or partly malformed (the largest plausible cost of one remote run), so a peer
    /// cannot zero its spend by breaking its report. `None`: the enclosing budget's setting,
    /// else the host's default (100,000 in the stock crates).
    pub remote_unreported_tokens: Option<u64>,
}

impl BudgetLimits {
    /// No limit at all.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when no limit is set.
    pub fn is_unlimited(&self) -> bool {
        self.tokens.is_none() && self.turns.is_none() && self.time.is_none() && self.usd.is_none()
    }
}
