//! The check a feature that is not compiled in contributes instead of itself: asking for what
//! it would provide is [`Error::MissingFeature`], naming the feature.

use subagent_spi::async_trait;

use super::{Assembly, Contribution};
use crate::{Error, SubagentsBuilder};

/// Whether the builder asks for something.
type Asks = fn(&SubagentsBuilder) -> bool;

/// A feature that is not compiled in: what asks for it, in the order they are checked.
pub(crate) struct Missing {
    feature: &'static str,
    checks: Vec<(&'static str, Asks)>,
}

#[allow(dead_code)] // each constructor is used by the builds without its feature
impl Missing {
    /// Without `claude`: Markdown agents and models.
    pub(crate) fn claude() -> Self {
        Self {
            feature: "claude",
            checks: vec![
                ("a model for every agent", |b| b.agent_model.is_some()),
                ("Markdown agents and models", |b| {
                    !b.agent_dirs.is_empty()
                        || !b.agent_files.is_empty()
                        || b.model.is_some()
                        || b.claude_settings.is_some()
                }),
            ],
        }
    }

    /// Without `a2a`: A2A agents.
    pub(crate) fn a2a() -> Self {
        Self {
            feature: "a2a",
            checks: vec![("an A2A agent", |b| {
                !b.a2a_agents.is_empty() || !b.a2a_refs.is_empty()
            })],
        }
    }

    /// Without `mcp`: MCP agents and the MCP configuration of Markdown agents' tools.
    pub(crate) fn mcp() -> Self {
        Self {
            feature: "mcp",
            checks: vec![
                ("an MCP agent", |b| !b.mcp_agents.is_empty()),
                ("an MCP configuration", |b| b.mcp_config.is_some()),
            ],
        }
    }
}

#[async_trait]
impl Contribution for Missing {
    async fn kinds(&mut self, b: &SubagentsBuilder, _: &mut Assembly) -> Result<(), Error> {
        match self.checks.iter().find(|(_, asks)| asks(b)) {
            Some((what, _)) => Err(Error::MissingFeature {
                what: (*what).into(),
                feature: self.feature,
            }),
            None => Ok(()),
        }
    }
}
