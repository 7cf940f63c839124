//! The `A2A` kind: remote agents by URL or reference.

use subagent_a2a::client::{KIND, a2a_subagent_type};
use subagent_spi::{SubagentReference, async_trait};

use super::{Assembly, Contribution};
use crate::{Error, SubagentsBuilder};

/// The A2A kind, registered when the builder names an A2A agent.
pub(crate) struct A2a;

#[async_trait]
impl Contribution for A2a {
    async fn kinds(&mut self, b: &SubagentsBuilder, a: &mut Assembly) -> Result<(), Error> {
        if b.a2a_agents.is_empty() && b.a2a_refs.is_empty() {
            return Ok(());
        }
        a.kinds.push(a2a_subagent_type());
        for url in &b.a2a_agents {
            a.references.push(SubagentReference::new(url, KIND));
        }
        for r in &b.a2a_refs {
            let mut r = r.clone();
            r.kind = KIND;
            a.references.push(r);
        }
        Ok(())
    }
}
