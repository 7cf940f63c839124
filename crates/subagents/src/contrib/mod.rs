//! What each feature contributes to an assembly, through one mechanism: a [`Contribution`] per
//! feature (the Markdown kind, A2A, MCP, the store), collected by [`contributions`] (the one
//! place that looks at which features are compiled in) and run in order by
//! [`assemble`](crate::assemble::assemble).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use subagent_spi::{Extensions, SubagentReference, SubagentType, ToolSource, async_trait};
use task_tool::TaskToolBuilder;

use crate::{Error, SkippedAgent, Subagents, SubagentsBuilder};

#[cfg(feature = "a2a")]
mod a2a;
#[cfg(feature = "claude")]
mod claude;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(not(all(feature = "claude", feature = "a2a", feature = "mcp")))]
mod missing;
#[cfg(feature = "store")]
mod store;
#[cfg(any(feature = "claude", feature = "mcp"))]
mod untrusted;

/// The contributions of the features compiled in, in the order they run: the store first (the
/// others keep their records there), then the kinds in the order their agents are listed. A
/// feature that is not compiled in contributes a check instead: asking for what it would
/// provide is an error naming it.
pub(crate) fn contributions() -> Vec<Box<dyn Contribution>> {
    vec![
        #[cfg(feature = "store")]
        Box::new(store::Store::default()),
        #[cfg(feature = "claude")]
        Box::new(claude::Claude::default()),
        #[cfg(not(feature = "claude"))]
        Box::new(missing::Missing::claude()),
        #[cfg(feature = "a2a")]
        Box::new(a2a::A2a),
        #[cfg(not(feature = "a2a"))]
        Box::new(missing::Missing::a2a()),
        #[cfg(feature = "mcp")]
        Box::new(mcp::Mcp::default()),
        #[cfg(not(feature = "mcp"))]
        Box::new(missing::Missing::mcp()),
    ]
}

/// One feature's part of an assembly. Each step runs for every contribution, in the order of
/// [`contributions`], before the next step starts.
#[async_trait]
pub(crate) trait Contribution: Send {
    /// Tools this feature offers the agents of other kinds (the MCP servers of `.mcp.json` for
    /// Markdown agents), loaded only if such a kind asks for them in [`kinds`](Self::kinds).
    fn tools(&self, _b: &SubagentsBuilder, _root: &Path) -> Option<Box<dyn AgentTools>> {
        None
    }

    /// Opens what the feature needs, and adds its kinds and references (and the agent files it
    /// skipped) to the assembly; an error stops the build.
    async fn kinds(&mut self, b: &SubagentsBuilder, a: &mut Assembly) -> Result<(), Error>;

    /// Wires the built [`Subagents`]: what the feature keeps there (its handles, warnings).
    async fn wire(&mut self, _agents: &mut Subagents) {}
}

/// Tools offered to the agents of other kinds, loaded when a kind asks ([`Assembly::agent_tools`]).
#[async_trait]
pub(crate) trait AgentTools: Send {
    /// Loads them; a configuration that cannot be used is an error naming it.
    async fn load(self: Box<Self>) -> Result<Arc<dyn ToolSource>, Error>;
}

/// What the contributions build together.
pub(crate) struct Assembly {
    /// The workspace root.
    pub(crate) root: PathBuf,
    /// The Task tool's builder (a store sets its ledger).
    pub(crate) task: TaskToolBuilder,
    /// The kinds: the builder's, then each contribution's.
    pub(crate) kinds: Vec<SubagentType>,
    /// The agent references, in the order their agents are listed.
    pub(crate) references: Vec<SubagentReference>,
    /// Agent files that were not loaded.
    pub(crate) skipped: Vec<SkippedAgent>,
    /// Values one contribution hands another, by type (the store's transcript store, read
    /// by the Markdown kind).
    #[cfg_attr(not(feature = "claude"), allow(dead_code))]
    pub(crate) shared: Extensions,
    /// The tools offered to agents by a contribution ([`Contribution::tools`]).
    agent_tools: Option<Box<dyn AgentTools>>,
}

impl Assembly {
    /// An assembly of `kinds` into `task`, in `root`.
    pub(crate) fn new(root: PathBuf, task: TaskToolBuilder, kinds: Vec<SubagentType>) -> Self {
        Self {
            root,
            task,
            kinds,
            references: Vec::new(),
            skipped: Vec::new(),
            shared: Extensions::default(),
            agent_tools: None,
        }
    }

    /// Offers tools to the agents of the kinds that take them.
    pub(crate) fn offer_tools(&mut self, tools: Box<dyn AgentTools>) {
        self.agent_tools = Some(tools);
    }

    /// The tools offered to agents, loaded (`None` when no contribution offers any).
    #[cfg_attr(not(feature = "claude"), allow(dead_code))]
    pub(crate) async fn agent_tools(&mut self) -> Result<Option<Arc<dyn ToolSource>>, Error> {
        match self.agent_tools.take() {
            Some(tools) => tools.load().await.map(Some),
            None => Ok(None),
        }
    }
}
