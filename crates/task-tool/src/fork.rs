//! `subagent_type: "fork"`: a copy of the caller that inherits its conversation (Claude Code's
//! fork subagent).
//!
//! The caller's agent loop offers its conversation as a [`ForkSource`] in the context of the
//! turn's tool calls; this module turns it into the [`Target`] the dispatch runs like any
//! agent's: depth + 1 (so the nesting limit bounds forks of forks), the concurrency cap, the
//! caller's budget, foreground or background. A fork is no registered agent: its session is not
//! remembered for `resume`, and a caller whose conversation is not known here (a host calling
//! `Task` itself, a remote agent's run) gets a clear error.

use std::sync::Arc;

use subagent_core::{FORK_SUBAGENT_TYPE, is_fork};
use subagent_spi::{
    ForkSource, Kind, SubagentDefinition, SubagentError, SubagentReference, TaskCall, TaskContext,
    impl_subagent_definition,
};

use crate::routing::Target;

/// The kind a fork's usage node and span name.
pub(crate) const FORK_KIND: Kind = Kind::from_static("FORK");

/// The definition a fork runs under (its name in progress events, results and usage).
#[derive(Debug)]
struct ForkDefinition {
    name: String,
    description: String,
    reference: SubagentReference,
}

impl_subagent_definition!(ForkDefinition);

/// The line of the `Task` description that offers forks.
pub(crate) const FORK_USAGE: &str = "- `subagent_type: \"fork\"`: a copy of you with this \
conversation does `prompt` on its own (side work that needs what you know).";

/// The fork target of `call` when it asks for one (`subagent_type: "fork"`); `Ok(None)` for
/// any other call, and for a `resume` of a session `known` names (the session's agent wins, as
/// for every resume). An error when the caller's conversation is not known here, or for a
/// `resume` of anything else (a fork is not resumed).
pub(crate) fn target(
    call: &TaskCall,
    ctx: &TaskContext,
    known: impl Fn(&str) -> bool,
) -> Result<Option<Target>, SubagentError> {
    if !is_fork(&call.subagent_type) {
        return Ok(None);
    }
    if let Some(session) = &call.resume {
        if known(session) {
            return Ok(None);
        }
        return Err(SubagentError::Resume {
            session: session.clone(),
            reason: "a fork cannot be resumed: start a new fork with the task in `prompt` (it \
                     inherits the conversation as it is now), or resume an agent with a \
                     session it returned"
                .to_string(),
        });
    }
    let Some(source) = ctx
        .extensions()
        .get::<ForkSource>()
        .filter(|s| s.is_for(ctx))
    else {
        return Err(SubagentError::InvalidInput(format!(
            "subagent_type \"{FORK_SUBAGENT_TYPE}\" copies the calling agent's conversation, \
             and this caller's conversation is not known here (only agents run by this \
             framework's agent loop can fork); name an agent instead"
        )));
    };
    let def: Arc<dyn SubagentDefinition> = Arc::new(ForkDefinition {
        name: FORK_SUBAGENT_TYPE.to_string(),
        description: "A copy of the calling agent with its conversation so far.".to_string(),
        reference: SubagentReference::new("fork:", FORK_KIND),
    });
    Ok(Some(Target::unregistered(
        def,
        FORK_KIND,
        source.executor().clone(),
    )))
}
