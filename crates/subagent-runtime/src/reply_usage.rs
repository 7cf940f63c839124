//! A model reply's reported usage added to a run's: saturating, since the counts come from
//! the model server and can be anything (`u64::MAX` must not wrap a run's counts, nor panic).

use subagent_spi::Usage;
use subagent_spi::chat::TokenUsage;

/// Adds `reply`'s token counts to `usage` (saturating, through [`Usage::add_tokens`]).
pub(crate) fn add_reply(usage: &mut Usage, reply: &TokenUsage) {
    usage.add_tokens(
        &Usage::new()
            .with_tokens(reply.input_tokens, reply.output_tokens)
            .with_cache_tokens(reply.cache_read_tokens, reply.cache_creation_tokens),
    );
}
