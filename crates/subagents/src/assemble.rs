//! The assembly behind [`SubagentsBuilder::build`](crate::SubagentsBuilder::build): each
//! feature's [`Contribution`](crate::contrib::Contribution) (its kinds, references, tools for
//! other kinds' agents, and what it keeps in [`Subagents`]), run in order.

use std::path::PathBuf;
use std::sync::Arc;

use crate::contrib::{Assembly, contributions};
use crate::{Error, Subagents, SubagentsBuilder};

pub(crate) async fn assemble(mut b: SubagentsBuilder) -> Result<Subagents, Error> {
    let root = match &b.workspace {
        Some(r) => r.clone(),
        None => std::env::current_dir().map_err(|e| Error::Workspace {
            path: PathBuf::from("."),
            source: Box::new(e),
        })?,
    };
    let mut a = Assembly::new(
        root,
        std::mem::take(&mut b.task),
        std::mem::take(&mut b.kinds),
    );
    let mut parts = contributions();
    for part in &parts {
        if let Some(tools) = part.tools(&b, &a.root) {
            a.offer_tools(tools);
        }
    }
    for part in &mut parts {
        part.kinds(&b, &mut a).await?;
    }
    a.references.extend(std::mem::take(&mut b.references));

    let prices = Arc::new(b.prices);
    let task = a
        .task
        .prices(prices.clone())
        .subagent_types(a.kinds)
        .subagent_references(a.references)
        .build()
        .await?;
    let mut agents = Subagents::assembled(task, a.root, a.skipped, b.approver.0, b.budget, prices);
    #[cfg(feature = "workflow")]
    {
        agents.workflow_limits = b.workflow_limits.clone();
    }
    for part in &mut parts {
        part.wire(&mut agents).await;
    }
    Ok(agents)
}
