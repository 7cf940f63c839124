//! The checks and defaults of one `Task` call before its child runs: what the call takes
//! from its agent, and what refuses it (the nesting limit, a spent budget). A new admission
//! rule (a rate limit, a cache hit) belongs here, not in the registry.

use subagent_spi::{Limit, SubagentDefinition, SubagentError, TaskCall, TaskContext};

/// The call's defaults from its agent: the background default (a Markdown agent's
/// `background: true`) and the typed result's schema (crate::typed), when the call sets none.
pub(crate) fn apply_defaults(call: &mut TaskCall, def: &dyn SubagentDefinition) {
    if call.run_in_background.is_none() && def.runs_in_background_by_default() {
        call.run_in_background = Some(true);
    }
    if call.output_schema.is_none() {
        call.output_schema = def.output_schema();
    }
}

/// Refuses a call from a context at or beyond the nesting limit `max_depth`, or whose budget
/// is spent (crate::charge).
pub(crate) fn admit(
    ctx: &TaskContext,
    def: &dyn SubagentDefinition,
    max_depth: u32,
) -> Result<(), SubagentError> {
    if ctx.depth() >= max_depth {
        return Err(SubagentError::LimitReached {
            agent: def.name().to_string(),
            limit: Limit::Depth {
                max: max_depth,
                depth: ctx.depth(),
            },
        });
    }
    crate::charge::refuse_if_spent(ctx, def.name())
}
