//! What a third-party binary adds to the command ([`crate::Cli`]): kinds, references and any
//! other builder setting, applied wherever the command assembles its agents (`run`, `task`,
//! `tasks resume`, `serve`, `mcp`, and the listing of `agents list`).
//!
//! The extension of the running command is scoped to it (a tokio task-local set by
//! [`crate::Cli::run`] around the command), so the commands keep their signatures and one
//! hook in [`crate::setup::Setup::builder`] covers them all.

use std::sync::Arc;

use subagents::spi::{SubagentReference, SubagentType};
use subagents::{Subagents, SubagentsBuilder};

use crate::error::CliError;

/// A change to the facade's builder.
pub(crate) type Configure = Arc<dyn Fn(SubagentsBuilder) -> SubagentsBuilder + Send + Sync>;

/// Kinds, references and builder settings added to every assembly of the command.
#[derive(Clone, Default)]
pub(crate) struct Extension {
    pub(crate) kinds: Vec<SubagentType>,
    pub(crate) references: Vec<SubagentReference>,
    pub(crate) configure: Vec<Configure>,
}

impl std::fmt::Debug for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extension")
            .field("kinds", &self.kinds)
            .field("references", &self.references)
            .field("configure", &self.configure.len())
            .finish()
    }
}

impl Extension {
    /// True when nothing is added (the stock `subagents` command).
    pub(crate) fn is_empty(&self) -> bool {
        self.kinds.is_empty() && self.references.is_empty() && self.configure.is_empty()
    }

    /// `b` with the kinds, then the references, then each `configure` applied.
    fn apply(&self, mut b: SubagentsBuilder) -> SubagentsBuilder {
        for kind in &self.kinds {
            b = b.kind(kind.clone());
        }
        b = b.references(self.references.iter().cloned());
        for f in &self.configure {
            b = f(b);
        }
        b
    }
}

tokio::task_local! {
    /// The extension of the command running in this task.
    static CURRENT: Arc<Extension>;
}

/// Runs `f` with `extension` as the command's extension.
pub(crate) async fn scope<F: std::future::Future>(extension: Arc<Extension>, f: F) -> F::Output {
    CURRENT.scope(extension, f).await
}

/// The hook of every assembly: `b` with the running command's extension applied (unchanged
/// outside a command or without one).
pub(crate) fn apply(b: SubagentsBuilder) -> SubagentsBuilder {
    match CURRENT.try_with(Arc::clone) {
        Ok(e) => e.apply(b),
        Err(_) => b,
    }
}

/// One agent the extension adds, for `agents list`.
pub(crate) struct ListedAgent {
    /// Its reference's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Its description.
    pub description: String,
}

/// The agents of the extension's kinds (their references and their kinds' own agents), for
/// `agents list`: the extension alone assembled (no built-in or Markdown agents), so a
/// reference that does not resolve is an error naming it, as for `run`. Empty without one.
pub(crate) async fn listed_agents() -> Result<Vec<ListedAgent>, CliError> {
    let Ok(extension) = CURRENT.try_with(Arc::clone) else {
        return Ok(Vec::new());
    };
    if extension.is_empty() {
        return Ok(Vec::new());
    }
    let agents = extension
        .apply(Subagents::builder().builtin_agents(false))
        .build()
        .await
        .map_err(crate::error::facade_error)?;
    let task = agents.task();
    Ok(task
        .agents()
        .iter()
        .filter_map(|def| {
            let kind = task.kind_of(def.name())?;
            (*kind != subagents::claude::KIND).then(|| ListedAgent {
                uri: def.reference().uri.clone(),
                name: def.name().to_string(),
                kind: kind.to_string(),
                description: def.description().to_string(),
            })
        })
        .collect())
}
