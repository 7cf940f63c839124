//! Registration: resolve references with the types that accept them.

use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use subagent_core::ModelPrices;
use subagent_spi::{
    BudgetLimits, SubagentDefinition, SubagentError, SubagentReference, SubagentType,
};

use super::TaskTool;
use crate::config::{MAX_DEPTH_CAP, TaskConfig};
use crate::routing::KindEntry;

/// Why one reference could not be registered.
///
/// `reason` is the message; [`error`](Self::error) (also the [`source`](Error::source)) is the
/// resolver's own [`SubagentError`] when there is one (none for a resolve that timed out), so a
/// caller can match on it or walk its sources (an HTTP failure behind a remote card, say).
#[derive(Debug, Clone)]
pub struct ReferenceFailure {
    /// The reference's URI.
    pub uri: String,
    /// The reference's kind.
    pub kind: String,
    /// What went wrong.
    pub reason: String,
    error: Option<Arc<SubagentError>>,
}

impl ReferenceFailure {
    /// A failure with a message and no error behind it.
    pub fn new(uri: impl Into<String>, kind: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            kind: kind.into(),
            reason: reason.into(),
            error: None,
        }
    }

    /// A failure caused by `error`; the reason is its message.
    pub fn from_error(
        uri: impl Into<String>,
        kind: impl Into<String>,
        error: SubagentError,
    ) -> Self {
        Self {
            reason: error.to_string(),
            error: Some(Arc::new(error)),
            ..Self::new(uri, kind, "")
        }
    }

    /// The resolver's error, when the failure has one.
    pub fn error(&self) -> Option<&SubagentError> {
        self.error.as_deref()
    }
}

/// Equal when the URI, kind and reason are (the errors behind them are not compared).
impl PartialEq for ReferenceFailure {
    fn eq(&self, other: &Self) -> bool {
        self.uri == other.uri && self.kind == other.kind && self.reason == other.reason
    }
}

impl Eq for ReferenceFailure {}

impl fmt::Display for ReferenceFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.uri, self.kind, self.reason)
    }
}

impl Error for ReferenceFailure {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.error.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

/// Registration failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// One or more references could not be resolved; every one is listed.
    #[error("{} subagent reference(s) could not be registered:\n{}", .failures.len(), list(.failures))]
    Unresolvable {
        /// Every failure, in reference order.
        failures: Vec<ReferenceFailure>,
    },
    /// Two user references resolved to the same agent name.
    #[error("two subagents are named `{name}`: {first_uri} and {second_uri}; rename one of them")]
    DuplicateName {
        /// The clashing name.
        name: String,
        /// The first reference's URI.
        first_uri: String,
        /// The second reference's URI.
        second_uri: String,
    },
    /// Two subagent types registered the same kind.
    #[error("two subagent types are registered for kind `{kind}`")]
    DuplicateKind {
        /// The kind.
        kind: String,
    },
    /// A setting is out of range.
    #[error("invalid Task tool setting: {0}")]
    Config(String),
}

fn list(failures: &[ReferenceFailure]) -> String {
    failures
        .iter()
        .map(|f| format!("  - {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Builds a [`TaskTool`]. Obtain one with [`TaskTool::builder`].
#[must_use]
pub struct TaskToolBuilder {
    types: Vec<SubagentType>,
    references: Vec<SubagentReference>,
    skip_unresolvable: bool,
    resolve_timeout: Duration,
    config: TaskConfig,
    ledger: Option<Arc<dyn crate::TaskLedger>>,
}

impl Default for TaskToolBuilder {
    fn default() -> Self {
        Self {
            types: Vec::new(),
            references: Vec::new(),
            skip_unresolvable: false,
            resolve_timeout: Duration::from_secs(30),
            config: TaskConfig::default(),
            ledger: None,
        }
    }
}

impl fmt::Debug for TaskToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskToolBuilder")
            .field("types", &self.types)
            .field("references", &self.references)
            .field("skip_unresolvable", &self.skip_unresolvable)
            .field("resolve_timeout", &self.resolve_timeout)
            .field("config", &self.config)
            .field("ledger", &self.ledger.is_some())
            .finish()
    }
}

impl TaskToolBuilder {
    /// Changes one setting of the tool's configuration.
    fn configured(mut self, set: impl FnOnce(&mut TaskConfig)) -> Self {
        set(&mut self.config);
        self
    }

    /// Records background tasks in `ledger` (see [`TaskLedger`](crate::TaskLedger)), so their
    /// results are readable after a restart. Default: none, background tasks live in memory.
    pub fn ledger(mut self, ledger: Arc<dyn crate::TaskLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Registers one subagent kind.
    pub fn subagent_type(mut self, t: SubagentType) -> Self {
        self.types.push(t);
        self
    }

    /// Registers several subagent kinds.
    pub fn subagent_types(mut self, types: impl IntoIterator<Item = SubagentType>) -> Self {
        self.types.extend(types);
        self
    }

    /// Adds one agent reference.
    pub fn subagent_reference(mut self, r: SubagentReference) -> Self {
        self.references.push(r);
        self
    }

    /// Adds several agent references.
    pub fn subagent_references(
        mut self,
        refs: impl IntoIterator<Item = SubagentReference>,
    ) -> Self {
        self.references.extend(refs);
        self
    }

    /// When true, references that fail to resolve are skipped with a `tracing` warning instead
    /// of failing [`build`](Self::build). Default false.
    pub fn skip_unresolvable(mut self, yes: bool) -> Self {
        self.skip_unresolvable = yes;
        self
    }

    /// Time allowed to resolve each reference (default 30 s).
    pub fn resolve_timeout(mut self, timeout: Duration) -> Self {
        self.resolve_timeout = timeout;
        self
    }

    /// The bounds of each background task's inbox, which `SendMessage` fills (default 16
    /// unread messages of at most 16 KiB each): a send over either is refused, naming the
    /// limit.
    pub fn inbox_limits(self, limits: impl Into<subagent_core::InboxLimits>) -> Self {
        self.configured(|c| c.inbox = limits.into())
    }

    /// Maximum background tasks running at once (default 16). Calls over it are refused with
    /// a message the model can read.
    pub fn max_background(self, n: usize) -> Self {
        self.configured(|c| c.max_background = n)
    }

    /// How long a finished background result stays readable (default 30 minutes).
    pub fn result_ttl(self, ttl: Duration) -> Self {
        self.configured(|c| c.result_ttl = ttl)
    }

    /// Maximum finished background results kept (oldest evicted first; default 10,000).
    pub fn max_retained(self, n: usize) -> Self {
        self.configured(|c| c.max_retained = n)
    }

    /// How long `TaskStop` waits for an executor to wind down after cancelling it before the
    /// task is marked cancelled regardless (default 5 s).
    pub fn stop_grace(self, grace: Duration) -> Self {
        self.configured(|c| c.stop_grace = grace)
    }

    /// The nesting limit (default [`DEFAULT_MAX_DEPTH`](crate::DEFAULT_MAX_DEPTH), 3): a run at
    /// depth `d` is offered delegation only when `d < max_depth`; the main agent is depth 0, so
    /// `max_depth(1)` lets the main agent delegate and no child delegate further. Values above
    /// [`MAX_DEPTH_CAP`] are refused by [`build`](Self::build).
    pub fn max_depth(self, depth: u32) -> Self {
        self.configured(|c| c.max_depth = depth)
    }

    /// Children working at once over the whole tree (default
    /// [`DEFAULT_MAX_CONCURRENT`](crate::DEFAULT_MAX_CONCURRENT), 20), foreground and
    /// background, at every depth. A foreground `Task` call over the cap waits its turn; a
    /// background one starts `queued` (so `TaskOutput` says) and runs when a place frees up.
    ///
    /// The rule for nesting: the main agent takes no place; a run that waits for its own
    /// children (a foreground `Task`, a blocking `TaskOutput`, `TaskStop`) gives its place
    /// back for the wait and takes one again, waiting its turn, before it continues. The cap
    /// thus counts runs doing work of their own, and a tree never deadlocks on it. 0 is
    /// refused by [`build`](Self::build).
    pub fn max_concurrent(self, n: usize) -> Self {
        self.configured(|c| c.max_concurrent = n)
    }

    /// Gives the agent named `agent` a budget of its own (over its whole subtree, background
    /// and remote children included), winning over its definition's
    /// ([`SubagentDefinition::budget`](subagent_spi::SubagentDefinition::budget), a Markdown
    /// agent's `budget` frontmatter). Each run of the agent gets at most these limits and at
    /// most what is left of its caller's budget; when spent, only its subtree is cancelled and
    /// its outcome is `limit_reached` naming the budget and the agent
    /// (`budget_tokens=5000 (agent reviewer)`).
    pub fn agent_budget(self, agent: impl Into<String>, limits: BudgetLimits) -> Self {
        self.configured(|c| {
            c.agent_budgets.insert(agent.into(), limits);
        })
    }

    /// The prices agents' own budgets count cost with when their caller has no budget (see
    /// [`agent_budget`](Self::agent_budget)).
    pub fn prices(self, prices: Arc<ModelPrices>) -> Self {
        self.configured(|c| c.prices = Some(prices))
    }

    /// Maximum number of session ids remembered for `resume` routing (default 10,000).
    pub fn max_sessions(self, n: usize) -> Self {
        self.configured(|c| c.max_sessions = n)
    }

    /// Resolves every reference and builds the tool.
    ///
    /// References are resolved concurrently, each with the first registered type whose
    /// resolver accepts it, each within the resolve timeout. A user reference overrides a
    /// type-contributed default of the same name (case-insensitive); two user references with
    /// the same name are an error naming both URIs.
    pub async fn build(self) -> Result<TaskTool, BuildError> {
        if self.config.max_background == 0 {
            return Err(BuildError::Config(
                "max_background must be at least 1".into(),
            ));
        }
        if self.config.max_concurrent == 0
            || self.config.max_concurrent > tokio::sync::Semaphore::MAX_PERMITS
        {
            return Err(BuildError::Config(format!(
                "max_concurrent must be between 1 and {}, not {}",
                tokio::sync::Semaphore::MAX_PERMITS,
                self.config.max_concurrent
            )));
        }
        if self.config.max_depth > MAX_DEPTH_CAP {
            return Err(BuildError::Config(format!(
                "max_depth {} is above the cap of {MAX_DEPTH_CAP}",
                self.config.max_depth
            )));
        }
        let mut kinds: Vec<KindEntry> = Vec::with_capacity(self.types.len());
        for t in &self.types {
            if kinds.iter().any(|k| k.kind() == t.kind()) {
                return Err(BuildError::DuplicateKind {
                    kind: t.kind().to_string(),
                });
            }
            kinds.push(KindEntry::new(t.kind().clone(), t.executor().clone()));
        }
        let registered: Vec<String> = self.types.iter().map(|t| t.kind().to_string()).collect();

        // Defaults first (built-in agents), then user references. A type's defaults are
        // resolved by that type, whatever kind they name.
        let defaults: Vec<(SubagentReference, usize)> = self
            .types
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.default_references().iter().map(move |r| (r.clone(), i)))
            .collect();
        let n_defaults = defaults.len();
        let all: Vec<(SubagentReference, Option<usize>)> = defaults
            .into_iter()
            .map(|(r, i)| (r, Some(i)))
            .chain(self.references.into_iter().map(|r| (r, None)))
            .collect();

        let types = &self.types;
        let timeout = self.resolve_timeout;
        let results = futures::future::join_all(all.iter().map(|(r, owner)| {
            let registered = &registered;
            async move {
                let found = match owner {
                    Some(i) => Some(*i),
                    None => types.iter().position(|t| t.accepts(r)),
                };
                let Some(ti) = found else {
                    return Err(ReferenceFailure::from_error(
                        &r.uri,
                        r.kind.to_string(),
                        SubagentError::NoResolver {
                            kind: r.kind.to_string(),
                            uri: r.uri.clone(),
                            registered: registered.clone(),
                        },
                    ));
                };
                match tokio::time::timeout(timeout, types[ti].resolver().resolve(r)).await {
                    Ok(Ok(def)) => Ok((def, ti)),
                    Ok(Err(e)) => Err(ReferenceFailure::from_error(&r.uri, r.kind.to_string(), e)),
                    Err(_) => Err(ReferenceFailure::new(
                        &r.uri,
                        r.kind.to_string(),
                        format!("resolving took longer than {} ms", timeout.as_millis()),
                    )),
                }
            }
        }))
        .await;

        let mut failures = Vec::new();
        let mut defaults_ok: Vec<(Arc<dyn SubagentDefinition>, usize)> = Vec::new();
        let mut users_ok: Vec<(Arc<dyn SubagentDefinition>, usize)> = Vec::new();
        for (i, res) in results.into_iter().enumerate() {
            match res {
                Ok(def) if i < n_defaults => defaults_ok.push(def),
                Ok(def) => users_ok.push(def),
                Err(failure) => failures.push(failure),
            }
        }
        if !failures.is_empty() {
            if self.skip_unresolvable {
                for f in &failures {
                    tracing::warn!(uri = %f.uri, kind = %f.kind, reason = %f.reason, "skipping subagent reference that failed to resolve");
                }
            } else {
                return Err(BuildError::Unresolvable { failures });
            }
        }

        // Duplicate user names are an error; user names override defaults.
        let mut seen: HashMap<String, String> = HashMap::new();
        for (d, _) in &users_ok {
            let key = d.name().to_lowercase();
            if let Some(first) = seen.insert(key, d.reference().uri.clone()) {
                return Err(BuildError::DuplicateName {
                    name: d.name().to_string(),
                    first_uri: first,
                    second_uri: d.reference().uri.clone(),
                });
            }
        }
        let mut agents: Vec<(Arc<dyn SubagentDefinition>, usize)> = Vec::new();
        let mut default_names: HashMap<String, ()> = HashMap::new();
        for (d, ti) in defaults_ok {
            let key = d.name().to_lowercase();
            if seen.contains_key(&key) {
                tracing::debug!(agent = d.name(), "user agent overrides a built-in agent");
                continue;
            }
            // Two defaults with one name: the first type wins.
            if default_names.insert(key, ()).is_none() {
                agents.push((d, ti));
            }
        }
        let n_defaults = agents.len();
        agents.extend(users_ok);
        Ok(TaskTool::from_parts(
            agents,
            n_defaults,
            kinds,
            self.config,
            self.ledger,
        ))
    }
}
