//! The operations of the `subagents` command that are not a run of agents, as typed calls
//! returning records: a message to a remote A2A agent ([`A2aCall`](crate::A2aCall)), pruning a
//! store ([`prune_store`](crate::prune_store)), and the background tasks a store keeps
//! ([`Subagents::tasks`](crate::Subagents::tasks)). The command parses arguments, calls these
//! and renders what they return.

#[cfg(feature = "a2a")]
pub(crate) mod call;
#[cfg(feature = "store")]
pub(crate) mod prune;
pub(crate) mod tasks;
