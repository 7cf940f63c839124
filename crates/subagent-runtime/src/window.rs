//! Context windows of common models: the one table the runtime sizes compaction by.

/// When [`MODEL_WINDOWS`] was written. The figures are the providers' published context
/// windows (input + output tokens) as documented on their model pages; update the date with
/// the table.
pub const MODEL_WINDOWS_DATE: &str = "2026-11-26";

/// The window assumed for a model the table does not know (local models, unknown hosted
/// ones): 32,768 tokens. A local server often runs a smaller window than its model supports
/// (llama.cpp and Ollama default to a few thousand tokens): say so with `--context-window`.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_768;

/// `(model name prefix, window in tokens)`, matched against the model name without a provider
/// prefix (`anthropic:`, `openai/`...) or `@URL` suffix, ignoring case; the longest matching
/// prefix wins, so dated snapshots (`claude-sonnet-4-5-20250929`) and variants (`gpt-4.1-mini`)
/// take their family's window.
pub const MODEL_WINDOWS: &[(&str, u64)] = &[
    // Anthropic (the standard window; the 1M beta is opt-in per request)
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5", 200_000),
    ("claude-3", 200_000),
    // OpenAI
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    // Google
    ("gemini-2.5", 1_048_576),
    ("gemini-2.0", 1_048_576),
];

/// The window of `model` from [`MODEL_WINDOWS`], if the table knows it.
pub fn known_context_window(model: &str) -> Option<u64> {
    let name = model.split_once('@').map_or(model, |(n, _)| n);
    let name = name.trim().to_ascii_lowercase();
    // The name itself and what follows each `:` or `/` (a provider prefix, an org path).
    let candidates = std::iter::once(name.as_str())
        .chain(name.match_indices([':', '/']).map(|(i, _)| &name[i + 1..]));
    candidates
        .flat_map(|n| {
            MODEL_WINDOWS
                .iter()
                .filter(move |(prefix, _)| n.starts_with(prefix))
        })
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, w)| w)
}

/// The window a run sizes its compaction by: `configured` when set, else the table's window
/// of `model`, else [`DEFAULT_CONTEXT_WINDOW`].
pub fn context_window(configured: Option<u64>, model: &str) -> u64 {
    configured
        .or_else(|| known_context_window(model))
        .unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_models_and_unknown_ones() {
        assert_eq!(
            known_context_window("claude-sonnet-4-5-20250929"),
            Some(200_000)
        );
        assert_eq!(
            known_context_window("anthropic:claude-opus-4-1"),
            Some(200_000)
        );
        assert_eq!(known_context_window("openai/GPT-4.1-mini"), Some(1_047_576));
        assert_eq!(known_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("qwen2.5-coder:1.5b"), None);
        assert_eq!(
            known_context_window("openai-compatible:gpt-4o@http://127.0.0.1:1/v1"),
            Some(128_000)
        );
        assert_eq!(context_window(Some(4096), "gpt-4o"), 4096);
        assert_eq!(
            context_window(None, "my-local-model"),
            DEFAULT_CONTEXT_WINDOW
        );
    }
}
