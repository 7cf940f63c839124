//! Context windows of common models: the one table the runtime sizes compaction by.

/// When [`MODEL_WINDOWS`] was last checked against the providers' documentation. The figures
/// are the published context windows (input + output tokens; Google publishes the input
/// limit) of each family's model pages; update the date with the table.
pub const MODEL_WINDOWS_DATE: &str = "2026-11-26";

/// The window assumed for a model the table does not know (local models, unknown hosted
/// ones): 32,768 tokens. A local server often runs a smaller window than its model supports
/// (llama.cpp and Ollama default to a few thousand tokens): say so with `--context-window`.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_768;

/// `(model name prefix, window in tokens)`, matched against the model name without a provider
/// prefix (`anthropic:`, `openai/`...) or `@URL` suffix, ignoring case; the longest matching
/// prefix wins, so dated snapshots (`claude-sonnet-4-5-20250929`) and variants (`gpt-4.1-mini`)
/// take their family's window.
///
/// Where sources disagree or a family's members differ, the table takes the smaller window:
/// compacting early costs a summary, compacting late gets the request refused. Open-weight
/// families (Qwen, Llama, Mistral, Gemma...) are left out on purpose: the window that matters
/// is the one the local server was started with, usually far below the model card's, so they
/// take [`DEFAULT_CONTEXT_WINDOW`] unless `--context-window` says otherwise.
pub const MODEL_WINDOWS: &[(&str, u64)] = &[
    // Anthropic, checked 2026-11-26 against platform.claude.com/docs/en/models/overview and
    // each model's page (platform.claude.com/docs/en/models/<model>/overview): the Claude 3
    // and 4 families up to Opus 4.5, Sonnet 4 and 4.5 and Haiku 4.5 have 200K (Sonnet 4 and
    // 4.5 offer 1M only as an opt-in beta); Opus 4.6, 4.7 and 4.8, Sonnet 4.6 and the Claude 5
    // generation (Opus, Sonnet, Haiku, Fable, Mythos) have 1M.
    ("claude-opus-4", 200_000),
    ("claude-opus-4-6", 1_000_000),
    ("claude-opus-4-7", 1_000_000),
    ("claude-opus-4-8", 1_000_000),
    ("claude-sonnet-4", 200_000),
    ("claude-sonnet-4-6", 1_000_000),
    ("claude-haiku-4", 200_000),
    ("claude-opus-5", 1_000_000),
    ("claude-sonnet-5", 1_000_000),
    ("claude-haiku-5", 1_000_000),
    ("claude-fable", 1_000_000),
    ("claude-mythos", 1_000_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5", 200_000),
    ("claude-3", 200_000),
    // OpenAI, checked 2026-11-26 against the model pages (platform.openai.com/docs/models/
    // <model>, as mirrored by the gateways that link them; OpenAI's own pages were not in the
    // searchable index): GPT-5 family 400,000 (later GPT-5.x list up to 1,050,000; 400,000 is
    // kept as the family's floor), the ChatGPT snapshots `gpt-5-chat-latest`,
    // `gpt-5.1-chat-latest` and `gpt-5.2-chat-latest` 128,000; GPT-4.1 1,047,576; GPT-4o and
    // GPT-4 Turbo 128,000; GPT-4 8,192 (`gpt-4-32k` 32,768); GPT-3.5 Turbo 16,385; o1, o3,
    // o3-mini and o4-mini 200,000, but o1-mini and o1-preview 128,000.
    ("gpt-5", 400_000),
    ("gpt-5-chat", 128_000),
    ("gpt-5.1-chat", 128_000),
    ("gpt-5.2-chat", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    // Google, checked 2026-11-26 against ai.google.dev/gemini-api/docs/models (input token
    // limit 1,048,576 for Gemini 2.0 Flash, 2.5 Pro and Flash, and 3 Pro).
    ("gemini-3", 1_048_576),
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
        let table = [
            ("claude-sonnet-4-5-20250929", Some(200_000)),
            ("anthropic:claude-opus-4-1", Some(200_000)),
            ("openai/GPT-4.1-mini", Some(1_047_576)),
            ("gpt-4o-mini", Some(128_000)),
            ("qwen2.5-coder:1.5b", None),
            // Longest prefix: a family's later members and variants that differ from it.
            ("claude-opus-4-5-20251101", Some(200_000)),
            ("claude-opus-4-6", Some(1_000_000)),
            ("claude-sonnet-4-6", Some(1_000_000)),
            ("claude-haiku-4-5-20251001", Some(200_000)),
            ("claude-opus-5-5", Some(1_000_000)),
            ("gpt-5-chat-latest", Some(128_000)),
            ("gpt-5-mini", Some(400_000)),
            ("gpt-4", Some(8_192)),
            ("gpt-4-0613", Some(8_192)),
            ("gpt-4-turbo-2024-04-09", Some(128_000)),
            ("o1-mini", Some(128_000)),
            ("o1-2024-12-17", Some(200_000)),
            ("o3-mini", Some(200_000)),
            ("gemini-3-pro-preview", Some(1_048_576)),
            (
                "openai-compatible:gpt-4o@http://127.0.0.1:1/v1",
                Some(128_000),
            ),
        ];
        for (model, want) in table {
            assert_eq!(known_context_window(model), want, "{model}");
        }
        assert_eq!(context_window(Some(4096), "gpt-4o"), 4096);
        assert_eq!(
            context_window(None, "my-local-model"),
            DEFAULT_CONTEXT_WINDOW
        );
    }
}
