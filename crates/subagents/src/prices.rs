//! The default price table: list prices of the common hosted models, so cost shows and
//! `usd` budgets work without hand-written prices. `[prices]` of subagents.toml (or
//! [`SubagentsBuilder::prices`](crate::SubagentsBuilder::prices)) overrides any entry; a model
//! in neither is reported as unpriced, never guessed.

use subagent_core::{ModelPrice, ModelPrices};

/// When [`DEFAULT_PRICES`] was last checked against the providers' price lists
/// ([`DEFAULT_CACHE_PRICES`] added 2026-11-28 from the same lists).
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

/// The prompt-cache rates of the models of [`DEFAULT_PRICES`] whose provider publishes them,
/// USD per million tokens: `(model, cache read, cache write)`, from the same pages.
///
/// Anthropic: reads 0.1x the input rate, writes with the default 5-minute TTL 1.25x (one-hour
/// writes cost 2x: with `?cache=1h`, set `cache_write` in `[prices]` to twice the input rate).
/// OpenAI: its "cached input" rate; OpenAI charges nothing extra for writing, so a write costs
/// the input rate (and is reported as plain input anyway).
pub const DEFAULT_CACHE_PRICES: &[(&str, f64, f64)] = &[
    // Anthropic
    ("claude-opus-4-6", 0.5, 6.25),
    ("claude-opus-4-5", 0.5, 6.25),
    ("claude-opus-4-1", 1.5, 18.75),
    ("claude-opus-4-0", 1.5, 18.75),
    ("claude-opus-4", 1.5, 18.75),
    ("claude-sonnet-4-6", 0.3, 3.75),
    ("claude-sonnet-4-5", 0.3, 3.75),
    ("claude-sonnet-4-0", 0.3, 3.75),
    ("claude-sonnet-4", 0.3, 3.75),
    ("claude-haiku-4-5", 0.1, 1.25),
    ("claude-3-5-haiku", 0.08, 1.0),
    // OpenAI
    ("gpt-5", 0.125, 1.25),
    ("gpt-5.1", 0.125, 1.25),
    ("gpt-5-mini", 0.025, 0.25),
    ("gpt-5-nano", 0.005, 0.05),
    ("gpt-4.1", 0.5, 2.0),
    ("gpt-4.1-mini", 0.1, 0.4),
    ("gpt-4.1-nano", 0.025, 0.1),
    ("gpt-4o", 1.25, 2.5),
    ("gpt-4o-mini", 0.075, 0.15),
    ("o1", 7.5, 15.0),
    ("o3", 0.5, 2.0),
    ("o3-mini", 0.55, 1.1),
    ("o4-mini", 0.275, 1.1),
];

/// [`DEFAULT_PRICES`] (with [`DEFAULT_CACHE_PRICES`]) as [`ModelPrices`], to extend or override
/// with your own.
pub fn default_prices() -> ModelPrices {
    DEFAULT_PRICES
        .iter()
        .fold(ModelPrices::new(), |p, (model, input, output)| {
            let price = ModelPrice::new(*input, *output);
            let price = match DEFAULT_CACHE_PRICES.iter().find(|(m, _, _)| m == model) {
                Some((_, read, write)) => price.with_cache(*read, *write),
                None => price,
            };
            p.with(*model, price)
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
        // Every priced model has its cache rates: reads cheaper than input, writes not.
        for (model, input, _) in DEFAULT_PRICES {
            let (_, read, write) = DEFAULT_CACHE_PRICES
                .iter()
                .find(|(m, _, _)| m == model)
                .unwrap_or_else(|| panic!("{model} has no cache rates"));
            assert!(read < input && write >= input, "{model}");
        }
        let sonnet = p.get("claude-sonnet-4-5").unwrap();
        assert_eq!(
            (sonnet.cache_read_per_mtok, sonnet.cache_write_per_mtok),
            (Some(0.3), Some(3.75))
        );
        // A cached Anthropic turn: 100k read, 1k written (of 1.2k input), 500 out.
        let usage = subagent_spi::Usage::new()
            .with_tokens(1_200, 500)
            .with_cache_tokens(100_000, 1_000)
            .with_model("claude-sonnet-4-5-20250929");
        let cost = p.usage_cost(&usage).unwrap();
        let want = (200.0 * 3.0 + 1_000.0 * 3.75 + 100_000.0 * 0.3 + 500.0 * 15.0) / 1e6;
        assert!((cost - want).abs() < 1e-12, "{cost} vs {want}");
        let uncached = (101_200.0 * 3.0 + 500.0 * 15.0) / 1e6;
        let saved = p.cache_savings(&usage).unwrap();
        assert!((saved - (uncached - want)).abs() < 1e-12, "{saved}");
    }
}
