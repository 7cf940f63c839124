//! The default price table: list prices of the common hosted models, so cost shows and
//! `usd` budgets work without hand-written prices. `[prices]` of subagents.toml (or
//! [`SubagentsBuilder::prices`](crate::SubagentsBuilder::prices)) overrides any entry; a model
//! in neither is reported as unpriced, never guessed.

use subagent_core::{ModelPrice, ModelPrices};

/// When [`DEFAULT_PRICES`] was last checked against the providers' price lists.
pub const DEFAULT_PRICES_DATE: &str = "2026-03-21";

/// Standard (non-batch, uncached, short-context) list prices in USD per million tokens:
/// `(model, input, output)`. Dated snapshots (`claude-sonnet-4-5-20250929`,
/// `gpt-4.1-2025-04-14`) are priced as their model ([`ModelPrices::get`]).
///
/// Sources, checked on [`DEFAULT_PRICES_DATE`]: Anthropic's pricing page
/// (<https://docs.anthropic.com/en/docs/about-claude/pricing>) and OpenAI's
/// (<https://platform.openai.com/docs/pricing>), as summarised by
/// <https://deploybase.ai/articles/claude-api-pricing> and
/// <https://deploybase.ai/articles/openai-pricing> (March 2026). Update the date with the table.
pub const DEFAULT_PRICES: &[(&str, f64, f64)] = &[
    // Anthropic
    ("claude-opus-4-6", 5.0, 25.0),
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4-1", 15.0, 75.0),
    ("claude-opus-4-0", 15.0, 75.0),
    ("claude-opus-4", 15.0, 75.0),
    ("claude-sonnet-4-6", 3.0, 15.0),
    ("claude-sonnet-4-5", 3.0, 15.0),
    ("claude-sonnet-4-0", 3.0, 15.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    // OpenAI
    ("gpt-5", 1.25, 10.0),
    ("gpt-5.1", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.4),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("gpt-4o", 2.5, 10.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("o1", 15.0, 60.0),
    ("o3", 2.0, 8.0),
    ("o3-mini", 1.1, 4.4),
    ("o4-mini", 1.1, 4.4),
];

/// [`DEFAULT_PRICES`] as [`ModelPrices`], to extend or override with your own.
pub fn default_prices() -> ModelPrices {
    DEFAULT_PRICES
        .iter()
        .fold(ModelPrices::new(), |p, (model, input, output)| {
            p.with(*model, ModelPrice::new(*input, *output))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_prices_the_common_models_and_their_snapshots() {
        let p = default_prices();
        assert_eq!(
            p.cost("anthropic:claude-sonnet-4-5", 1_000_000, 0),
            Some(3.0)
        );
        assert_eq!(p.cost("claude-haiku-4-5-20251001", 0, 1_000_000), Some(5.0));
        assert_eq!(
            p.cost("openai:gpt-4.1-mini-2025-04-14", 1_000_000, 0),
            Some(0.4)
        );
        assert_eq!(
            p.cost("qwen2.5", 1, 1),
            None,
            "a local model is never guessed"
        );
        for (model, input, output) in DEFAULT_PRICES {
            assert!(
                input.is_finite() && *input > 0.0 && output >= input,
                "{model}"
            );
        }
    }
}
