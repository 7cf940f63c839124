//! Budgets over a delegated subtree: tokens, turns and wall time, shared by every run below the
//! point where the budget was set.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use subagent_spi::chat::TokenUsage;
use subagent_spi::{
    BudgetLimits, CancellationToken, Limit, LimitScope, TaskContext, Usage, UsageNode,
};

/// The price of one model, in USD per million tokens.
///
/// Prompt tokens read from a provider's prompt cache and those written to it have rates of
/// their own where the provider publishes them (Anthropic: reads 0.1x, 5-minute writes 1.25x
/// the input rate; OpenAI: reads 0.25x to 0.5x, writes free). A price without them counts
/// such tokens at the input rate, what they would cost uncached (never a guessed discount).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelPrice {
    /// USD per million input (prompt) tokens.
    pub input_per_mtok: f64,
    /// USD per million output (completion) tokens.
    pub output_per_mtok: f64,
    /// USD per million prompt tokens read from the provider's cache (`None`: the input rate).
    pub cache_read_per_mtok: Option<f64>,
    /// USD per million prompt tokens written to the provider's cache (`None`: the input rate).
    pub cache_write_per_mtok: Option<f64>,
}

impl ModelPrice {
    /// A price: USD per million input tokens and per million output tokens (cache reads and
    /// writes at the input rate until [`with_cache`](Self::with_cache) says otherwise).
    pub fn new(input_per_mtok: f64, output_per_mtok: f64) -> Self {
        Self {
            input_per_mtok,
            output_per_mtok,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        }
    }

    /// Sets the rates of prompt tokens read from and written to the provider's cache, USD per
    /// million (builder style).
    #[must_use]
    pub fn with_cache(mut self, read_per_mtok: f64, write_per_mtok: f64) -> Self {
        self.cache_read_per_mtok = Some(read_per_mtok);
        self.cache_write_per_mtok = Some(write_per_mtok);
        self
    }

    /// The cost of `input` and `output` tokens, in USD, none of them cached.
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input_per_mtok + output as f64 * self.output_per_mtok) / 1e6
    }

    /// The cost of a run's tokens in USD, the cache counted: `input` prompt tokens not read
    /// from the cache, of which `cache_write` were written to it (at most `input` count so),
    /// `cache_read` read from it, and `output` completion tokens (as [`Usage`] counts them).
    pub fn cost_with_cache(
        &self,
        input: u64,
        output: u64,
        cache_read: u64,
        cache_write: u64,
    ) -> f64 {
        let write = cache_write.min(input);
        let read_rate = self.cache_read_per_mtok.unwrap_or(self.input_per_mtok);
        let write_rate = self.cache_write_per_mtok.unwrap_or(self.input_per_mtok);
        ((input - write) as f64 * self.input_per_mtok
            + write as f64 * write_rate
            + cache_read as f64 * read_rate
            + output as f64 * self.output_per_mtok)
            / 1e6
    }

    /// The cost of `usage` in USD, the cache counted (see
    /// [`cost_with_cache`](Self::cost_with_cache)).
    pub fn usage_cost(&self, usage: &Usage) -> f64 {
        self.cost_with_cache(
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_creation_tokens,
        )
    }

    /// What the cache saved on `usage`, in USD: its cost with every prompt token at the input
    /// rate, less [`usage_cost`](Self::usage_cost). Negative when writes cost more than reads
    /// saved (a conversation's first request writes at a premium).
    pub fn cache_savings(&self, usage: &Usage) -> f64 {
        self.cost(
            usage.input_tokens.saturating_add(usage.cache_read_tokens),
            usage.output_tokens,
        ) - self.usage_cost(usage)
    }
}

/// Per-model prices (what `[prices]` of subagents.toml holds). A model without a price is
/// never guessed: its cost is unknown, and reported so.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelPrices {
    prices: HashMap<String, ModelPrice>,
}

impl ModelPrices {
    /// No prices.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the price of `model` (its name as configured or as the provider reports it).
    #[must_use]
    pub fn with(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.prices.insert(model.into(), price);
        self
    }

    /// The price of `model`: its exact name, else the name without a `provider:` prefix, else
    /// either without a dated snapshot suffix (`claude-sonnet-4-5-20250929` and
    /// `gpt-4.1-2025-04-14` are priced as `claude-sonnet-4-5` and `gpt-4.1`: providers report
    /// the snapshot that answered, priced as its model).
    pub fn get(&self, model: &str) -> Option<ModelPrice> {
        let bare = model.rsplit_once(':').map(|(_, m)| m);
        [Some(model), bare]
            .into_iter()
            .flatten()
            .find_map(|name| self.prices.get(name).copied())
            .or_else(|| {
                [Some(model), bare]
                    .into_iter()
                    .flatten()
                    .filter_map(without_date_suffix)
                    .find_map(|name| self.prices.get(name).copied())
            })
    }

    /// The models priced, in no particular order.
    pub fn models(&self) -> impl Iterator<Item = (&str, ModelPrice)> {
        self.prices.iter().map(|(m, p)| (m.as_str(), *p))
    }

    /// True when no price is set.
    pub fn is_empty(&self) -> bool {
        self.prices.is_empty()
    }

    /// The cost of `input` and `output` tokens of `model`, none of them cached, when its price
    /// is known.
    pub fn cost(&self, model: &str, input: u64, output: u64) -> Option<f64> {
        self.get(model).map(|p| p.cost(input, output))
    }

    /// The cost of a run's usage (its [`model`](Usage::model) priced, the cache counted; see
    /// [`ModelPrice::usage_cost`]), when it names a model with a known price.
    pub fn usage_cost(&self, usage: &Usage) -> Option<f64> {
        self.get(usage.model.as_deref()?)
            .map(|p| p.usage_cost(usage))
    }

    /// What the cache saved on a run's usage (see [`ModelPrice::cache_savings`]), when it
    /// names a model with a known price.
    pub fn cache_savings(&self, usage: &Usage) -> Option<f64> {
        self.get(usage.model.as_deref()?)
            .map(|p| p.cache_savings(usage))
    }
}

/// `name` without a trailing snapshot date (`-YYYYMMDD` or `-YYYY-MM-DD`), when it has one.
fn without_date_suffix(name: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, tail)) = name.rsplit_once('-')
        && tail.len() == 8
        && digits(tail)
    {
        return Some(head);
    }
    // `-YYYY-MM-DD`: the last three dash-separated pieces.
    let mut parts = name.rsplitn(4, '-');
    let (d, m, y, head) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (y.len() == 4 && m.len() == 2 && d.len() == 2 && digits(y) && digits(m) && digits(d))
        .then_some(head)
}

/// The tokens a remote run with a refused or malformed usage report counts as at least, by
/// default (100,000: about one long agent run of several turns; a peer that reports properly
/// never pays it).
pub const DEFAULT_REMOTE_UNREPORTED_TOKENS: u64 = 100_000;

/// A budget shared by a run and every run below it (children, background children, remote
/// children through their executors), carried by a [`TaskContext`](subagent_spi::TaskContext) (read and set with [`BudgetExt`]).
///
/// Runs [`charge`](Self::charge) what they use; the charge goes to this budget and every budget
/// above it (a child's budget is nested in its parent's, so a child gets at most what is left).
/// A kind need not charge as it goes: what a child reports in its outcome and did not charge is
/// charged when it ends ([`meter`](Self::meter), [`settle`](Self::settle)), so every reported
/// token and turn counts once, whatever the kind, and however a run and the runs it delegated to
/// overlap in time (a background grandchild may outlive its parent).
/// When a limit is crossed the budget is **spent**: it records which limit (e.g.
/// `budget_tokens=1000`) and cancels the token it was given, which cancels the whole subtree.
/// Runs stopped that way report [`TaskStatus::LimitReached`](subagent_spi::TaskStatus) naming the
/// budget ([`spent`](Self::spent)) and keep their partial results.
///
/// Cheap to clone (an `Arc` inside); lock-free.
#[derive(Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

struct Inner {
    limits: BudgetLimits,
    tokens: AtomicU64,
    turns: AtomicU32,
    /// Cost so far, in millionths of a USD.
    micro_usd: AtomicU64,
    prices: Option<Arc<ModelPrices>>,
    /// The first model whose price was unknown when a cost limit was set.
    unpriced: OnceLock<String>,
    started: Instant,
    spent: OnceLock<Limit>,
    cancel: CancellationToken,
    parent: Option<Budget>,
    /// The agent whose own budget this is (per-agent budgets), named in the spent reason.
    owner: Option<String>,
    /// A [`Budget::meter`]: no limits of its own, it counts what one run's subtree charged and
    /// is otherwise its parent (limits, owner, `spend`).
    meter: bool,
    /// On a meter: what was charged through it and not through the meter of a run below (the
    /// run's own charges, what [`Budget::settle`] credits).
    own_tokens: AtomicU64,
    own_turns: AtomicU32,
    /// The prompt tokens read from and written to a provider's cache charged here (on a meter:
    /// its own, as `own_tokens`), which [`Budget::settle`] credits like tokens.
    cache_read: AtomicU64,
    cache_write: AtomicU64,
    /// On a meter: the task ids of the runs below whose usage was charged by their own meter
    /// ([`Budget::note_settled`]); [`Budget::settle`] skips their nodes. One entry per child
    /// result the run was handed (as many as the nodes of its report), freed with the meter.
    settled: Mutex<HashSet<String>>,
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("limits", &self.inner.limits)
            .field("tokens", &self.tokens_used())
            .field("turns", &self.turns_used())
            .field("spent", &self.inner.spent.get())
            .field("nested", &self.inner.parent.is_some())
            .field("owner", &self.inner.owner)
            .field("meter", &self.inner.meter)
            .finish()
    }
}

impl Budget {
    /// A budget with `limits` that cancels `cancel` (the subtree's token) when spent.
    pub fn new(limits: BudgetLimits, cancel: CancellationToken) -> Self {
        Self {
            inner: Arc::new(Inner {
                limits,
                tokens: AtomicU64::new(0),
                turns: AtomicU32::new(0),
                micro_usd: AtomicU64::new(0),
                prices: None,
                unpriced: OnceLock::new(),
                started: Instant::now(),
                spent: OnceLock::new(),
                cancel,
                parent: None,
                owner: None,
                meter: false,
                own_tokens: AtomicU64::new(0),
                own_turns: AtomicU32::new(0),
                cache_read: AtomicU64::new(0),
                cache_write: AtomicU64::new(0),
                settled: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// A budget nested in this one (for a subtree with limits of its own): charges reach both,
    /// and either being spent stops the subtree. `cancel` is the subtree's token. The nested
    /// budget counts cost with this one's prices unless [`with_prices`](Self::with_prices)
    /// sets others.
    pub fn nested(&self, limits: BudgetLimits, cancel: CancellationToken) -> Self {
        let mut b = Self::new(limits, cancel);
        if let Some(inner) = Arc::get_mut(&mut b.inner) {
            inner.parent = Some(self.clone());
            inner.prices = self.inner.prices.clone();
        }
        b
    }

    /// Names the agent this budget belongs to (a per-agent budget, set before the budget is
    /// shared): the limit it is spent on then says so, e.g.
    /// `budget_tokens=5000 (agent reviewer)`.
    #[must_use]
    pub fn with_owner(mut self, agent: impl Into<String>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.owner = Some(agent.into());
        }
        self
    }

    /// The agent this budget belongs to, for a per-agent budget.
    pub fn owner(&self) -> Option<&str> {
        match (&self.inner.parent, self.inner.meter) {
            (Some(p), true) => p.owner(),
            _ => self.inner.owner.as_deref(),
        }
    }

    /// The prices cost is counted with, when set.
    pub fn prices(&self) -> Option<&Arc<ModelPrices>> {
        self.inner.prices.as_ref()
    }

    /// Sets the prices the cost limit is counted with (before the budget is shared).
    #[must_use]
    pub fn with_prices(mut self, prices: Arc<ModelPrices>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.prices = Some(prices);
        }
        self
    }

    /// Cost charged so far in USD (models with a known price only).
    pub fn usd_used(&self) -> f64 {
        self.inner.micro_usd.load(Ordering::Acquire) as f64 / 1e6
    }

    /// A model whose tokens were charged without a known price (so the cost limit could not
    /// count them), here or in a budget above.
    pub fn unpriced_model(&self) -> Option<String> {
        self.inner
            .unpriced
            .get()
            .cloned()
            .or_else(|| self.inner.parent.as_ref().and_then(Budget::unpriced_model))
    }

    /// The tokens a remote run with a refused or malformed usage report counts as at least:
    /// this budget's [`BudgetLimits::remote_unreported_tokens`](subagent_spi::BudgetLimits::remote_unreported_tokens), else the nearest enclosing
    /// budget's, else [`DEFAULT_REMOTE_UNREPORTED_TOKENS`].
    pub fn remote_unreported_tokens(&self) -> u64 {
        self.inner
            .limits
            .remote_unreported_tokens
            .or_else(|| {
                self.inner
                    .parent
                    .as_ref()
                    .map(Budget::remote_unreported_tokens)
            })
            .unwrap_or(DEFAULT_REMOTE_UNREPORTED_TOKENS)
    }

    /// The limits.
    pub fn limits(&self) -> &BudgetLimits {
        match (&self.inner.parent, self.inner.meter) {
            (Some(p), true) => p.limits(),
            _ => &self.inner.limits,
        }
    }

    /// Tokens charged so far.
    pub fn tokens_used(&self) -> u64 {
        self.inner.tokens.load(Ordering::Acquire)
    }

    /// Turns charged so far.
    pub fn turns_used(&self) -> u32 {
        self.inner.turns.load(Ordering::Acquire)
    }

    /// Tokens left before this budget or one above it is spent (`None`: unlimited).
    pub fn remaining_tokens(&self) -> Option<u64> {
        let own = self
            .inner
            .limits
            .tokens
            .map(|l| l.saturating_sub(self.tokens_used()));
        let up = self
            .inner
            .parent
            .as_ref()
            .and_then(Budget::remaining_tokens);
        match (own, up) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Charges one model turn of `model` to this budget and every one above it: its tokens,
    /// and its cost when the model's price is known. Returns the name of the limit that is
    /// spent, as [`charge`](Self::charge) does.
    pub fn charge_turn(&self, model: &str, input: u64, output: u64) -> Option<Limit> {
        self.charge_usage(model, input, output, 1)
    }

    /// Charges `turns` model turns of `model` with `input` and `output` tokens in all (e.g. a
    /// remote child's reported usage, when its result arrives) to this budget and every one
    /// above it, as [`charge_turn`](Self::charge_turn) does for one turn.
    pub fn charge_usage(&self, model: &str, input: u64, output: u64, turns: u32) -> Option<Limit> {
        self.charge_tokens(model, &TokenUsage::new(input, output), turns)
    }

    /// Charges `turns` model turns of `model` whose tokens are `usage` to this budget and
    /// every one above it, as [`charge_usage`](Self::charge_usage) does, with the provider's
    /// cache counted: the token limit counts `input_tokens + output_tokens` (what was written
    /// to the cache is part of the input; what was read from it is not counted), the cost
    /// prices cache reads and writes at the model's cache rates
    /// ([`ModelPrice::cost_with_cache`]).
    pub fn charge_tokens(&self, model: &str, usage: &TokenUsage, turns: u32) -> Option<Limit> {
        self.charge_usage_via(model, &Charge::of(usage, turns), false)
    }

    /// [`charge_tokens`](Self::charge_tokens); `metered`: the charge came through the meter of
    /// a run below (so it is not this meter's own).
    fn charge_usage_via(&self, model: &str, c: &Charge, metered: bool) -> Option<Limit> {
        let up = self.charge_up(metered, |p, below| p.charge_usage_via(model, c, below));
        if let Some(max) = self.inner.limits.usd {
            match self
                .inner
                .prices
                .as_ref()
                .and_then(|p| p.get(model))
                .map(|p| p.cost_with_cache(c.input, c.output, c.cache_read, c.cache_write))
            {
                Some(cost) => {
                    // `as` saturates (a NaN is 0): absurd counts cannot wrap the total.
                    let micro = (cost * 1e6).round() as u64;
                    let total = saturating_add(&self.inner.micro_usd, micro);
                    if total as f64 / 1e6 > max {
                        self.spend(Limit::CostUsd {
                            max,
                            scope: self.scope(),
                        });
                    }
                }
                None => {
                    let _ = self.inner.unpriced.set(model.to_string());
                }
            }
        }
        if !self.inner.meter || !metered {
            saturating_add(&self.inner.cache_read, c.cache_read);
            saturating_add(&self.inner.cache_write, c.cache_write);
        }
        self.charge_own(c.input.saturating_add(c.output), c.turns, metered)
            .or(up)
    }

    /// Charges turns and tokens to this budget and every one above it. Returns the name of
    /// the limit that is spent (this charge crossed it, or it was spent before), e.g.
    /// `budget_tokens=1000`.
    pub fn charge(&self, tokens: u64, turns: u32) -> Option<Limit> {
        self.charge_via(tokens, turns, false)
    }

    /// [`charge`](Self::charge); `metered` as in [`charge_usage_via`](Self::charge_usage_via).
    fn charge_via(&self, tokens: u64, turns: u32, metered: bool) -> Option<Limit> {
        let up = self.charge_up(metered, |p, below| p.charge_via(tokens, turns, below));
        self.charge_own(tokens, turns, metered).or(up)
    }

    /// Passes a charge to the budget above, when there is one: `charge` gets it and whether
    /// the charge comes through the meter of a run below it (`metered` here, or this budget
    /// is a meter).
    fn charge_up(
        &self,
        metered: bool,
        charge: impl FnOnce(&Budget, bool) -> Option<Limit>,
    ) -> Option<Limit> {
        let below = metered || self.inner.meter;
        self.inner.parent.as_ref().and_then(|p| charge(p, below))
    }

    fn charge_own(&self, tokens: u64, turns: u32, metered: bool) -> Option<Limit> {
        if self.inner.meter && !metered {
            saturating_add(&self.inner.own_tokens, tokens);
            saturating_add_u32(&self.inner.own_turns, turns);
        }
        // Saturating, in the counters too: a reported u64::MAX must not wrap them to little.
        let t = saturating_add(&self.inner.tokens, tokens);
        let n = saturating_add_u32(&self.inner.turns, turns);
        let limits = &self.inner.limits;
        if let Some(max) = limits.tokens
            && t > max
        {
            self.spend(Limit::Tokens {
                max,
                scope: self.scope(),
            });
        }
        if let Some(max) = limits.turns
            && n > max
        {
            self.spend(Limit::Turns {
                max,
                scope: self.scope(),
            });
        }
        self.spent()
    }

    /// Whose limits these are: the owning agent's for a per-agent budget.
    fn scope(&self) -> LimitScope {
        match &self.inner.owner {
            Some(agent) => LimitScope::Agent(agent.clone()),
            None => LimitScope::Budget,
        }
    }

    /// Marks the budget spent (the first reason wins) and cancels the subtree. On a
    /// [`meter`](Self::meter), spends the budget it meters.
    pub fn spend(&self, limit: Limit) {
        if let (Some(p), true) = (&self.inner.parent, self.inner.meter) {
            return p.spend(limit);
        }
        let _ = self.inner.spent.set(limit);
        self.inner.cancel.cancel();
    }

    /// The limit this budget (or one above it) was spent on, if it is; a passed wall-time
    /// limit is noticed here.
    pub fn spent(&self) -> Option<Limit> {
        if let Some(s) = self.inner.spent.get() {
            return Some(s.clone());
        }
        if let Some(max) = self.inner.limits.time
            && self.inner.started.elapsed() >= max
        {
            self.spend(Limit::Time {
                max,
                scope: self.scope(),
            });
            return self.inner.spent.get().cloned();
        }
        self.inner.parent.as_ref().and_then(Budget::spent)
    }

    /// When the wall-time limit of this budget or one above it runs out.
    pub fn deadline(&self) -> Option<Instant> {
        let own = self.inner.limits.time.map(|t| self.inner.started + t);
        let up = self.inner.parent.as_ref().and_then(Budget::deadline);
        match (own, up) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl Budget {
    /// A meter over this budget for one run's subtree (give it to that run's context with
    /// [`BudgetExt::with_budget`]): every charge made through it reaches this budget as
    /// before, and it counts them, so [`tokens_used`](Self::tokens_used) and
    /// [`turns_used`](Self::turns_used) of the meter are what that subtree charged. It has no
    /// limits of its own: [`limits`](Self::limits), [`owner`](Self::owner),
    /// [`spent`](Self::spent) and [`spend`](Self::spend) are this budget's. After the run,
    /// [`settle`](Self::settle) charges what it reported and did not charge.
    ///
    /// A meter also counts apart the run's **own** charges: those not made through the meter
    /// of a run it delegated to (a meter nested in it, directly or through budgets between).
    /// The runs it delegated to settle their own reports with their own meters, whenever they
    /// end, so a run is never credited with what its children charged.
    pub fn meter(&self) -> Self {
        let mut b = self.nested(BudgetLimits::new(), self.inner.cancel.clone());
        if let Some(inner) = Arc::get_mut(&mut b.inner) {
            inner.meter = true;
        }
        b
    }

    /// Notes that the usage node of the run with task id `task_id` (a child's result this
    /// meter's run was handed: a `Task` result, a background task read with `TaskOutput`) was
    /// charged by that run's own [`meter`](Self::meter), settled when it ended:
    /// [`settle`](Self::settle) skips that node (and the nodes below it), so it is neither
    /// charged again nor credited against this run's own charges. Noted on the nearest meter
    /// (this budget, else the closest one above); with no meter above, nothing is kept.
    ///
    /// Bounded: one entry per child result the run was handed, freed with the meter.
    pub fn note_settled(&self, task_id: &str) {
        let mut at = self;
        while !at.inner.meter {
            match &at.inner.parent {
                Some(p) => at = p,
                None => return,
            }
        }
        at.inner
            .settled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(task_id.to_string());
    }

    /// Charges the part of a finished run's reported usage (`usage`, its own, and `children`,
    /// the usage trees of the runs it delegated to, as in its `TaskOutcome`) that was not
    /// charged through this budget while it ran: call it on the run's [`meter`](Self::meter).
    /// So every run's reported usage is charged exactly once, whether its kind charged as it
    /// went (all of it, some, or none).
    ///
    /// The nodes of runs settled by their own meter ([`note_settled`](Self::note_settled);
    /// each task id once) are skipped with the nodes below them. What the run charged itself
    /// (on a meter, its own charges, not those of the runs it delegated to through their own
    /// meters; on another budget, [`tokens_used`](Self::tokens_used) and
    /// [`turns_used`](Self::turns_used)) is credited against the rest of the report node by
    /// node (the run's own usage first, then its children depth first; input tokens before
    /// output tokens); the rest of each node is charged as [`charge_usage`](Self::charge_usage)
    /// charges it, priced with the node's model. Counts saturate: a report of `u64::MAX` tokens
    /// spends a token limit, it does not wrap. Settling twice charges nothing the second time.
    ///
    /// Returns the limit that is spent when anything was charged (this charge crossed it, or
    /// it was spent before), `None` when nothing was left to charge.
    pub fn settle(&self, usage: &Usage, children: &[UsageNode]) -> Option<Limit> {
        let (mut tokens, mut turns) = if self.inner.meter {
            (
                self.inner.own_tokens.load(Ordering::Acquire),
                self.inner.own_turns.load(Ordering::Acquire),
            )
        } else {
            (self.tokens_used(), self.turns_used())
        };
        let mut read = self.inner.cache_read.load(Ordering::Acquire);
        let mut write = self.inner.cache_write.load(Ordering::Acquire);
        // Held while settling (charging never takes it): a run's children are noted before it
        // ends, not while it is settled.
        let settled = self
            .inner
            .settled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Each noted task id skips one node: a second node claiming it is charged.
        let mut skipped: HashSet<&str> = HashSet::new();
        let mut spent = None;
        let mut pending: Vec<&UsageNode> = children.iter().rev().collect();
        let mut next = Some(usage);
        while let Some(u) = next {
            let input = u.input_tokens.min(tokens);
            tokens -= input;
            let output = u.output_tokens.min(tokens);
            tokens -= output;
            let n = u.turns.min(turns);
            turns -= n;
            let r = u.cache_read_tokens.min(read);
            read -= r;
            let w = u.cache_creation_tokens.min(write);
            write -= w;
            let rest = Charge {
                input: u.input_tokens - input,
                output: u.output_tokens - output,
                cache_read: u.cache_read_tokens - r,
                cache_write: u.cache_creation_tokens - w,
                turns: u.turns - n,
            };
            if rest.input > 0 || rest.output > 0 || rest.cache_read > 0 || rest.turns > 0 {
                let model = u.model.as_deref().unwrap_or("");
                spent = self.charge_usage_via(model, &rest, false).or(spent);
            }
            next = None;
            while let Some(node) = pending.pop() {
                if let Some(id) = node.task_id.as_deref()
                    && settled.contains(id)
                    && skipped.insert(id)
                {
                    continue;
                }
                pending.extend(node.children.iter().rev());
                next = Some(&node.usage);
                break;
            }
        }
        spent
    }
}

/// What one charge counts: tokens (those written to a provider's cache are part of `input`,
/// those read from it apart) and turns.
struct Charge {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    turns: u32,
}

impl Charge {
    fn of(usage: &TokenUsage, turns: u32) -> Self {
        Self {
            input: usage.input_tokens,
            output: usage.output_tokens,
            cache_read: usage.cache_read_tokens,
            cache_write: usage.cache_creation_tokens,
            turns,
        }
    }
}

/// Adds `n` to `counter`, saturating at `u64::MAX`; returns the new value.
fn saturating_add(counter: &AtomicU64, n: u64) -> u64 {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            Some(v.saturating_add(n))
        })
        .map_or(u64::MAX, |v| v.saturating_add(n))
}

/// Adds `n` to `counter`, saturating at `u32::MAX`; returns the new value.
fn saturating_add_u32(counter: &AtomicU32, n: u32) -> u32 {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            Some(v.saturating_add(n))
        })
        .map_or(u32::MAX, |v| v.saturating_add(n))
}

/// The [`Budget`] a [`TaskContext`] carries, as one of its
/// [`extensions`](TaskContext::extensions): copied into every child context, so a run and every
/// run below it charge the same budget (a child's own budget is [`Budget::nested`] in it).
pub trait BudgetExt: Sized {
    /// The budget of the subtree this run belongs to: runs charge their model turns to it and
    /// stop, reporting `limit_reached` naming it, once it is spent.
    fn budget(&self) -> Option<&Budget>;

    /// Sets the budget this run and every run below it charge (replacing the one inherited).
    #[must_use]
    fn with_budget(self, budget: Budget) -> Self;
}

impl BudgetExt for TaskContext {
    fn budget(&self) -> Option<&Budget> {
        self.extensions().get::<Budget>()
    }

    fn with_budget(self, budget: Budget) -> Self {
        self.with_extension(budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root budget of `limits`, with a cancellation token of its own.
    fn budget(limits: BudgetLimits) -> Budget {
        Budget::new(limits, CancellationToken::new())
    }

    /// The tokens and turns `b` counts.
    fn used(b: &Budget) -> (u64, u32) {
        (b.tokens_used(), b.turns_used())
    }

    #[test]
    fn a_context_carries_its_budget_to_its_children() {
        let b = budget(BudgetLimits::new().with_turns(1));
        let ctx = TaskContext::new().with_budget(b.clone());
        let child = ctx.child("c", None);
        child.budget().expect("inherited").charge(0, 2);
        assert_eq!(
            b.spent().map(|l| l.to_string()).as_deref(),
            Some("budget_turns=1"),
            "the same budget"
        );
        assert!(TaskContext::new().budget().is_none());
    }

    #[test]
    fn crossing_the_token_limit_spends_the_budget_and_cancels_the_subtree() {
        let cancel = CancellationToken::new();
        let b = Budget::new(BudgetLimits::new().with_tokens(100), cancel.clone());
        assert_eq!(b.charge(60, 1), None);
        assert_eq!(b.remaining_tokens(), Some(40));
        assert_eq!(
            b.charge(60, 1).map(|l| l.to_string()).as_deref(),
            Some("budget_tokens=100")
        );
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn a_nested_budget_gets_at_most_what_is_left_and_charges_its_parent() {
        let root_cancel = CancellationToken::new();
        let root = Budget::new(BudgetLimits::new().with_tokens(100), root_cancel.clone());
        root.charge(70, 1);
        let child_cancel = root_cancel.child_token();
        let child = root.nested(BudgetLimits::new().with_tokens(50), child_cancel.clone());
        assert_eq!(child.remaining_tokens(), Some(30));
        assert_eq!(
            child.charge(40, 1).map(|l| l.to_string()).as_deref(),
            Some("budget_tokens=100")
        );
        assert!(root_cancel.is_cancelled() && child_cancel.is_cancelled());
        // A child's own limit cancels only its subtree.
        let other = CancellationToken::new();
        let root2 = Budget::new(BudgetLimits::new(), other.clone());
        let sub = other.child_token();
        let c2 = root2.nested(BudgetLimits::new().with_turns(1), sub.clone());
        assert_eq!(
            c2.charge(1, 2).map(|l| l.to_string()).as_deref(),
            Some("budget_turns=1")
        );
        assert!(sub.is_cancelled() && !other.is_cancelled());
    }

    #[test]
    fn cost_counts_priced_models_and_reports_unpriced_ones() {
        let prices = Arc::new(ModelPrices::new().with("gpt-x", ModelPrice::new(2.0, 8.0)));
        let cancel = CancellationToken::new();
        let b = Budget::new(BudgetLimits::new().with_usd(0.01), cancel.clone()).with_prices(prices);
        // 1000 in + 500 out = 0.002 + 0.004 USD.
        assert_eq!(b.charge_turn("openai:gpt-x", 1000, 500), None);
        assert!((b.usd_used() - 0.006).abs() < 1e-9);
        assert_eq!(
            b.charge_turn("mystery", 1_000_000, 0),
            None,
            "never guessed"
        );
        assert_eq!(b.unpriced_model().as_deref(), Some("mystery"));
        assert_eq!(
            b.charge_turn("gpt-x", 1000, 500)
                .map(|l| l.to_string())
                .as_deref(),
            Some("budget_usd=0.01")
        );
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn cache_reads_and_writes_cost_their_rates_and_settle_once() {
        let price = ModelPrice::new(3.0, 15.0).with_cache(0.3, 3.75);
        // 10,000 prompt tokens not read from cache (8,000 of them written), 90,000 read.
        let turn = TokenUsage::new(10_000, 1_000).with_cache(90_000, 8_000);
        let cost = price.cost_with_cache(10_000, 1_000, 90_000, 8_000);
        let want = (2_000.0 * 3.0 + 8_000.0 * 3.75 + 90_000.0 * 0.3 + 1_000.0 * 15.0) / 1e6;
        assert!((cost - want).abs() < 1e-12, "{cost}");
        // Without cache rates, cached tokens cost the input rate: never a guessed discount.
        let plain = ModelPrice::new(3.0, 15.0);
        assert!(
            (plain.cost_with_cache(10_000, 1_000, 90_000, 8_000) - plain.cost(100_000, 1_000))
                .abs()
                < 1e-12
        );
        // Writes are part of the input: more writes than input count as the input.
        assert_eq!(price.cost_with_cache(0, 0, 0, 500), 0.0);
        let usage = Usage::new()
            .with_tokens(10_000, 1_000)
            .with_cache_tokens(90_000, 8_000)
            .with_model("m");
        let saved = price.cache_savings(&usage);
        assert!(
            (saved - (plain.cost(100_000, 1_000) - want)).abs() < 1e-12,
            "{saved}"
        );

        // A budget counts the cost with the cache, the tokens as input + output.
        let prices = Arc::new(ModelPrices::new().with("m", price));
        let root = budget(BudgetLimits::new().with_usd(10.0)).with_prices(prices);
        let meter = root.meter();
        assert_eq!(meter.charge_tokens("m", &turn, 1), None);
        assert!((root.usd_used() - want).abs() < 1e-6);
        assert_eq!(root.tokens_used(), 11_000);
        // Settling the run's report charges nothing more: the cache was charged as it went.
        assert_eq!(meter.settle(&usage.clone().with_turns(1), &[]), None);
        assert!((root.usd_used() - want).abs() < 1e-6);
        // A report that was not charged is, at the cache rates.
        let fresh = root.meter();
        fresh.settle(&usage.with_turns(1), &[]);
        assert!((root.usd_used() - 2.0 * want).abs() < 1e-6);
    }

    #[test]
    fn dated_snapshots_are_priced_as_their_model_and_nothing_else_is_guessed() {
        let prices = ModelPrices::new()
            .with("claude-sonnet-4-5", ModelPrice::new(3.0, 15.0))
            .with("gpt-4.1", ModelPrice::new(2.0, 8.0))
            .with("gpt-4.1-mini", ModelPrice::new(0.4, 1.6));
        let p = |m: &str| prices.get(m).map(|p| p.input_per_mtok);
        assert_eq!(p("claude-sonnet-4-5-20250929"), Some(3.0));
        assert_eq!(p("anthropic:claude-sonnet-4-5-20250929"), Some(3.0));
        assert_eq!(p("gpt-4.1-2025-04-14"), Some(2.0));
        assert_eq!(
            p("gpt-4.1-mini-2025-04-14"),
            Some(0.4),
            "not the bigger model"
        );
        assert_eq!(p("gpt-4.1-mini"), Some(0.4));
        assert_eq!(p("gpt-4.1-turbo"), None, "another model is never guessed");
        assert_eq!(p("claude-sonnet-4-5-2025"), None);
        assert_eq!(p("gpt-4.1-25-04-14"), None);
    }

    #[test]
    fn a_per_agent_budget_names_its_agent_and_inherits_prices() {
        let prices = Arc::new(ModelPrices::new().with("gpt-x", ModelPrice::new(2.0, 8.0)));
        let root_cancel = CancellationToken::new();
        let root = Budget::new(
            BudgetLimits::new().with_tokens(1_000_000),
            root_cancel.clone(),
        )
        .with_prices(prices);
        let sub = root_cancel.child_token();
        let own = root
            .nested(BudgetLimits::new().with_usd(0.001), sub.clone())
            .with_owner("reviewer");
        assert_eq!(own.owner(), Some("reviewer"));
        assert!(own.prices().is_some(), "prices come from the parent");
        // A remote child's reported usage: 3 turns, 100 in + 200 out = 0.0018 USD.
        assert_eq!(
            own.charge_usage("gpt-x", 100, 200, 3)
                .map(|l| l.to_string())
                .as_deref(),
            Some("budget_usd=0.001 (agent reviewer)")
        );
        assert!(sub.is_cancelled() && !root_cancel.is_cancelled());
        assert_eq!(
            own.spent(),
            Some(Limit::CostUsd {
                max: 0.001,
                scope: LimitScope::Agent("reviewer".into())
            }),
            "named by the enum"
        );
        assert_eq!(used(&root), (300, 3));
        // Absurd numbers saturate instead of overflowing.
        let b = budget(BudgetLimits::new().with_tokens(10));
        assert!(b.charge_usage("m", u64::MAX, u64::MAX, u32::MAX).is_some());
        assert!(b.charge_usage("m", u64::MAX, 1, u32::MAX).is_some());
    }

    fn node(model: &str, input: u64, output: u64, turns: u32) -> UsageNode {
        let usage = Usage::new()
            .with_tokens(input, output)
            .with_turns(turns)
            .with_model(model);
        UsageNode::new("a", "K", subagent_spi::TaskStatus::Completed, usage)
    }

    #[test]
    fn a_meter_counts_its_subtree_and_is_its_budget_otherwise() {
        let cancel = CancellationToken::new();
        let root = Budget::new(
            BudgetLimits::new().with_tokens(100).with_turns(10),
            cancel.clone(),
        );
        root.charge(5, 1); // a sibling's
        let meter = root.meter();
        assert_eq!(meter.limits(), root.limits(), "the budget's limits");
        assert_eq!(meter.remaining_tokens(), Some(95));
        assert_eq!(meter.charge(30, 2), None);
        assert_eq!(used(&meter), (30, 2));
        assert_eq!(used(&root), (35, 3));
        // Spending through the meter spends the budget, and cancels the budget's tree.
        meter.spend(Limit::other("stop"));
        assert_eq!(root.spent().map(|l| l.to_string()).as_deref(), Some("stop"));
        assert!(cancel.is_cancelled());
        let owned = budget(BudgetLimits::new()).with_owner("rev");
        assert_eq!(owned.meter().owner(), Some("rev"));
    }

    #[test]
    fn settling_charges_what_a_run_reported_and_did_not_charge_once() {
        let root = budget(BudgetLimits::new().with_tokens(10_000));
        // A kind that charges nothing: all of its report, its children's too.
        let meter = root.meter();
        let own = Usage::new().with_tokens(100, 50).with_turns(2);
        let kids = [node("m", 10, 5, 1).with_children(vec![node("m", 1, 1, 1)])];
        assert_eq!(meter.settle(&own, &kids), None);
        assert_eq!(used(&root), (167, 4));
        assert_eq!(
            meter.settle(&own, &kids),
            None,
            "nothing left the second time"
        );
        assert_eq!(used(&root), (167, 4));
        // A kind that charged all of it as it went: nothing more.
        let meter = root.meter();
        meter.charge_turn("m", 100, 50);
        meter.charge_turn("m", 0, 0);
        assert_eq!(meter.settle(&own, &[]), None);
        assert_eq!(used(&root), (317, 6));
        // A kind that charged part of it: the rest.
        let meter = root.meter();
        meter.charge(120, 1);
        meter.settle(&own, &[]);
        assert_eq!(used(&root), (467, 8));
        // A report that crosses the limit spends the budget and says so.
        let meter = root.meter();
        assert_eq!(
            meter
                .settle(&Usage::new().with_tokens(10_000, 0), &[])
                .map(|l| l.to_string())
                .as_deref(),
            Some("budget_tokens=10000")
        );
    }

    #[test]
    fn a_run_is_credited_with_its_own_charges_not_those_of_the_runs_it_delegated_to() {
        // C (a kind that charges nothing) starts G (one that charges as it goes, under a
        // budget of its own) and ends first: what G charged so far is G's, not C's.
        let root = budget(BudgetLimits::new().with_tokens(1_000_000));
        let c = root.meter();
        let g_own = c.nested(
            BudgetLimits::new().with_tokens(100_000),
            CancellationToken::new(),
        );
        let g = g_own.meter();
        g.charge_turn("m", 4000, 1000);
        assert_eq!(c.tokens_used(), 5000, "the meter still counts its subtree");
        let c_report = Usage::new().with_tokens(300, 200).with_turns(1);
        assert_eq!(c.settle(&c_report, &[]), None);
        assert_eq!(used(&root), (5500, 2));
        // G goes on, then ends reporting what it charged: nothing more.
        g.charge_turn("m", 7, 3);
        let g_report = Usage::new().with_tokens(4007, 1003).with_turns(2);
        assert_eq!(g.settle(&g_report, &[]), None);
        assert_eq!(used(&root), (5510, 3));
        assert_eq!(g_own.tokens_used(), 5010);
        // Settling C again charges nothing more.
        assert_eq!(c.settle(&c_report, &[]), None);
        assert_eq!(used(&root), (5510, 3));
    }

    #[test]
    fn a_node_its_own_meter_settled_is_skipped_once_with_its_children() {
        let root = budget(BudgetLimits::new().with_tokens(1_000_000));
        let c = root.meter();
        // G ran under C and settled its report (with a grandchild's) on its own meter.
        let g = c.meter();
        let g_node = node("m", 5000, 0, 1)
            .with_task_id("task_g")
            .with_children(vec![node("m", 40, 0, 1)]);
        assert_eq!(g.settle(&g_node.usage, &g_node.children), None);
        assert_eq!(used(&root), (5040, 2));
        // Noted through a budget between (C's context may nest one): it reaches C's meter.
        c.nested(BudgetLimits::new(), CancellationToken::new())
            .note_settled("task_g");
        let own = Usage::new().with_tokens(100, 0).with_turns(1);
        // A second node claiming G's task id is charged; so is a node of an id never noted.
        let kids = [
            g_node,
            node("m", 7, 0, 0).with_task_id("task_g"),
            node("m", 3, 0, 0).with_task_id("task_x"),
        ];
        assert_eq!(c.settle(&own, &kids), None);
        assert_eq!(used(&root), (5150, 3));
        assert_eq!(c.settle(&own, &kids), None, "settling twice");
        assert_eq!(used(&root), (5150, 3));
        // With no meter above, nothing is kept (nor charged).
        root.note_settled("task_g");
        assert_eq!(root.tokens_used(), 5150);
    }

    #[test]
    fn settling_prices_each_node_with_its_model() {
        let prices = Arc::new(
            ModelPrices::new()
                .with("cheap", ModelPrice::new(1.0, 1.0))
                .with("dear", ModelPrice::new(100.0, 100.0)),
        );
        let root = budget(BudgetLimits::new().with_usd(1.0)).with_prices(prices);
        let own = Usage::new().with_tokens(1000, 0).with_model("cheap");
        // 1000 cheap tokens: 0.001 USD; 9000 dear ones: 0.9 USD.
        let kids = [node("dear", 9000, 0, 1)];
        assert_eq!(root.meter().settle(&own, &kids), None);
        assert!(
            (root.usd_used() - 0.901).abs() < 1e-9,
            "{}",
            root.usd_used()
        );
        assert_eq!(
            root.meter()
                .settle(&Usage::new().with_tokens(1000, 0).with_model("dear"), &[])
                .map(|l| l.to_string())
                .as_deref(),
            Some("budget_usd=1")
        );
    }

    #[test]
    fn absurd_reports_saturate_the_counters_without_a_panic() {
        let root = budget(BudgetLimits::new().with_tokens(10).with_usd(1.0)).with_prices(Arc::new(
            ModelPrices::new().with("m", ModelPrice::new(1e9, 1e9)),
        ));
        root.charge(5, 1);
        let max = Usage::new()
            .with_tokens(u64::MAX, u64::MAX)
            .with_turns(u32::MAX)
            .with_model("m");
        let kids = vec![node("m", u64::MAX, u64::MAX, u32::MAX); 3];
        assert!(root.meter().settle(&max, &kids).is_some());
        assert_eq!(root.tokens_used(), u64::MAX, "saturated, not wrapped");
        assert_eq!(root.turns_used(), u32::MAX);
        assert!(root.usd_used() > 1.0);
        assert!(root.charge(u64::MAX, u32::MAX).is_some());
        assert_eq!(root.tokens_used(), u64::MAX);
    }
}
