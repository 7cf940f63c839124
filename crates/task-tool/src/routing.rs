//! Routing: the registered agents and kinds, and the agent a `Task` call goes to (by
//! `resume`'s session, else by name: exact, then ignoring case).

use std::collections::HashMap;
use std::sync::Arc;

use dashmap::DashMap;
use subagent_spi::{Kind, SubagentDefinition, SubagentError, SubagentExecutor, TaskCall};

/// The agent a call goes to, with its kind and executor.
pub(crate) struct Target {
    /// The agent's index in the registry; `None` for a fork (crate::fork).
    idx: Option<usize>,
    def: Arc<dyn SubagentDefinition>,
    kind: Kind,
    executor: Arc<dyn SubagentExecutor>,
}

impl Target {
    /// A target that is no registered agent (a fork, crate::fork): its sessions are not
    /// remembered for `resume`.
    pub(crate) fn unregistered(
        def: Arc<dyn SubagentDefinition>,
        kind: Kind,
        executor: Arc<dyn SubagentExecutor>,
    ) -> Self {
        Self {
            idx: None,
            def,
            kind,
            executor,
        }
    }

    /// The agent's definition.
    pub(crate) fn def(&self) -> &Arc<dyn SubagentDefinition> {
        &self.def
    }

    /// The agent's kind.
    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The executor of its kind.
    pub(crate) fn executor(&self) -> &Arc<dyn SubagentExecutor> {
        &self.executor
    }
}

/// A kind as the registry keeps it: its name and executor.
pub(crate) struct KindEntry {
    kind: Kind,
    executor: Arc<dyn SubagentExecutor>,
}

impl KindEntry {
    pub(crate) fn new(kind: Kind, executor: Arc<dyn SubagentExecutor>) -> Self {
        Self { kind, executor }
    }

    /// The kind's name.
    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }
}

/// The registered agents and kinds, and the sessions they produced (for `resume`).
pub(crate) struct Agents {
    agents: Vec<Arc<dyn SubagentDefinition>>,
    /// For each agent, the index of its kind in `kinds`.
    agent_kind: Vec<usize>,
    /// The first `n_defaults` agents are kinds' defaults (built-ins); the rest are the user's.
    n_defaults: usize,
    kinds: Vec<KindEntry>,
    by_name: HashMap<String, usize>,
    by_lower: HashMap<String, usize>,
    /// session id -> index of the agent that produced it.
    sessions: DashMap<String, usize>,
    /// The most sessions remembered.
    max_sessions: usize,
}

impl Agents {
    /// `agents` (each with the index of its kind in `kinds`), the first `n_defaults` of them
    /// kinds' defaults; at most `max_sessions` sessions remembered.
    pub(crate) fn new(
        agents: Vec<(Arc<dyn SubagentDefinition>, usize)>,
        n_defaults: usize,
        kinds: Vec<KindEntry>,
        max_sessions: usize,
    ) -> Self {
        let (agents, agent_kind): (Vec<_>, Vec<_>) = agents.into_iter().unzip();
        let mut by_name = HashMap::new();
        let mut by_lower = HashMap::new();
        for (i, a) in agents.iter().enumerate() {
            by_name.insert(a.name().to_string(), i);
            by_lower.entry(a.name().to_lowercase()).or_insert(i);
        }
        Self {
            agents,
            agent_kind,
            n_defaults,
            kinds,
            by_name,
            by_lower,
            sessions: DashMap::new(),
            max_sessions,
        }
    }

    /// Every agent, built-ins first, in registration order.
    pub(crate) fn all(&self) -> &[Arc<dyn SubagentDefinition>] {
        &self.agents
    }

    /// The agents from references (not kinds' built-in defaults).
    pub(crate) fn user(&self) -> &[Arc<dyn SubagentDefinition>] {
        &self.agents[self.n_defaults..]
    }

    /// The agent's index by name: exact first, then ignoring case.
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.by_name
            .get(name)
            .or_else(|| self.by_lower.get(&name.to_lowercase()))
            .copied()
    }

    /// The agent at `idx`.
    pub(crate) fn get(&self, idx: usize) -> &Arc<dyn SubagentDefinition> {
        &self.agents[idx]
    }

    /// The kind of the agent at `idx`.
    pub(crate) fn kind_of(&self, idx: usize) -> &KindEntry {
        &self.kinds[self.agent_kind[idx]]
    }

    /// The executor of the agent at `idx`.
    pub(crate) fn executor_of(&self, idx: usize) -> &Arc<dyn SubagentExecutor> {
        &self.kind_of(idx).executor
    }

    /// The registered kinds, in registration order.
    pub(crate) fn kinds(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.iter().map(|k| &k.kind)
    }

    /// Picks the agent for a call: the agent that produced `resume`'s session when known,
    /// else `subagent_type` (exact, then ignoring case).
    pub(crate) fn route(&self, call: &TaskCall) -> Result<Target, SubagentError> {
        if let Some(session) = &call.resume
            && let Some(i) = self.sessions.get(session)
        {
            return Ok(self.target(*i));
        }
        match self.find(&call.subagent_type) {
            Some(i) => Ok(self.target(i)),
            None => Err(SubagentError::UnknownSubagent {
                name: call.subagent_type.clone(),
                available: self.agents.iter().map(|a| a.name().to_string()).collect(),
            }),
        }
    }

    fn target(&self, idx: usize) -> Target {
        let entry = self.kind_of(idx);
        Target {
            idx: Some(idx),
            def: self.agents[idx].clone(),
            kind: entry.kind.clone(),
            executor: entry.executor.clone(),
        }
    }

    /// True when `session` was produced by a registered agent of this registry.
    pub(crate) fn knows_session(&self, session: &str) -> bool {
        self.sessions.contains_key(session)
    }

    /// Remembers that `target` produced `session`, for `resume` (not for a fork's target).
    pub(crate) fn remember_session(&self, target: &Target, session: &str) {
        let Some(idx) = target.idx else {
            return;
        };
        let sessions = &self.sessions;
        if sessions.len() >= self.max_sessions {
            // Bounded memory: forget an arbitrary tenth. Resume of a forgotten id still
            // reaches the executor named in `subagent_type`.
            let drop_n = (self.max_sessions / 10).max(1);
            let victims: Vec<String> = sessions
                .iter()
                .take(drop_n)
                .map(|e| e.key().clone())
                .collect();
            for v in victims {
                sessions.remove(&v);
            }
        }
        sessions.insert(session.to_string(), idx);
    }
}
