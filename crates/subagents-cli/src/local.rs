//! What a main model on a local server changes (llama.cpp, Ollama, vLLM, LM Studio on this
//! machine or its network): the lean tool set by default, a warning when the main agent's
//! prompt nears the window the server runs, and errors that name the server when nothing
//! answers there.

use subagents::models::{ContextWindow, ServerProbe, WindowSource};

use crate::error::CliError;

/// The `--main-tools` word that offers every tool.
pub(crate) use subagents::ALL_TOOLS;

/// The lean tool set a local main model gets by default.
pub(crate) const LEAN_TOOLS: &str = "Task";

/// A warning is printed when the main agent's fixed prompt takes at least this share of the
/// model's context window (compaction starts at 75 %: little room is left for the work).
pub(crate) const WARN_PERCENT: u64 = 50;

/// The tools `run` offers the main agent: `--main-tools` as given ([`ALL_TOOLS`]: every
/// tool), else [`LEAN_TOOLS`] when the main model `spec` runs locally and no `--agent` is the
/// main agent, else `None`, the facade's default set. The flag is `true` when the lean set was
/// chosen by default (say so once).
pub(crate) fn main_tools(
    flag: Option<&[String]>,
    spec: &str,
    agent: bool,
) -> (Option<Vec<String>>, bool) {
    match flag {
        Some(names) => (Some(names.to_vec()), false),
        None if !agent && subagents::models::runs_locally(spec) => {
            (Some(vec![LEAN_TOOLS.to_string()]), true)
        }
        None => (None, false),
    }
}

/// The one line saying the lean set was chosen, and how to get every tool.
pub(crate) fn lean_notice() -> String {
    format!(
        "subagents: the main model runs on a local server: the main agent is offered only \
         {LEAN_TOOLS} (a short prompt, quicker turns); --main-tools {ALL_TOOLS} offers every tool"
    )
}

/// The warning for a main agent whose prompt (system prompt and tool definitions) takes
/// `tokens` of `window`, when that is at least [`WARN_PERCENT`] of it.
pub(crate) fn window_warning(tokens: u64, window: ContextWindow, lean: bool) -> Option<String> {
    if tokens.saturating_mul(100) < window.tokens.saturating_mul(WARN_PERCENT) {
        return None;
    }
    let percent = tokens.saturating_mul(100) / window.tokens.max(1);
    let mut fixes = Vec::new();
    if !lean {
        fixes.push(format!("--main-tools {LEAN_TOOLS} offers one tool"));
    }
    fixes.push("fewer installed agents make the Task description shorter".to_string());
    fixes.push(match window.source {
        WindowSource::Assumed => {
            "--context-window N tells the real window when the server runs another".to_string()
        }
        _ => "a server started with a larger window (llama-server -c N, Ollama's num_ctx) \
              leaves more room"
            .to_string(),
    });
    Some(format!(
        "subagents: warning: the main agent's prompt (system prompt and tool definitions) is \
         about {tokens} tokens, {percent}% of the model's {}-token context window ({}); every \
         turn starts with it and long runs will compact early: {}",
        window.tokens,
        window.source,
        fixes.join("; ")
    ))
}

/// The hint for a model server that does not answer: where it should be running.
pub(crate) fn server_hint(spec: &str) -> Option<String> {
    let parsed = subagents::providers::ModelSpec::parse(spec).ok()?;
    match parsed.provider {
        subagents::providers::Provider::Ollama => Some(
            "is Ollama running at http://127.0.0.1:11434 (`ollama serve`), with the model \
             pulled (`ollama pull MODEL`)?"
                .to_string(),
        ),
        subagents::providers::Provider::OpenAiCompatible => {
            let url = subagents::providers::redact_url(parsed.base_url.as_deref()?);
            Some(format!(
                "is the server at {url} running? Start it (e.g. `llama-server -m MODEL.gguf \
                 --port PORT --jinja`), or choose another model with --model"
            ))
        }
        _ => None,
    }
}

/// The fix for a model server that does not answer: "is the server at URL running?", the URL
/// being the one the request went to (credentials hidden).
pub(crate) fn unreachable_hint(e: &subagents::spi::ModelError) -> String {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(subagents::providers::ProviderError::Connect { url, .. }) = s.downcast_ref() {
            let base = ["/chat/completions", "/messages"]
                .iter()
                .find_map(|tail| url.strip_suffix(tail))
                .unwrap_or(url);
            return format!(
                "Is the server at {base} running? Start it, or choose another model with --model."
            );
        }
        source = s.source();
    }
    "Is the model server running and reachable? Start it, or choose another model with --model."
        .to_string()
}

/// Exit 2 at once when the main model's local server was found not running while the agents
/// were built (before any model call, retry or progress line): the error names the server.
pub(crate) fn unreachable(probe: &ServerProbe, spec: &str) -> Option<CliError> {
    let ServerProbe::Unreachable(why) = probe else {
        return None;
    };
    let hint = server_hint(spec).unwrap_or_default();
    Some(CliError::NoModel(format!("{why}\n{hint}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lean_set_is_the_default_on_a_local_server_only() {
        let local = "openai-compatible:q@http://127.0.0.1:8080/v1";
        assert_eq!(
            main_tools(None, local, false),
            (Some(vec!["Task".to_string()]), true)
        );
        assert!(main_tools(None, "ollama:qwen2.5", false).1);
        assert_eq!(main_tools(None, "openai:gpt-4.1", false), (None, false));
        assert_eq!(
            main_tools(
                None,
                "openai-compatible:q@https://api.example.com/v1",
                false
            ),
            (None, false)
        );
        // `--agent`: that agent's own tools.
        assert_eq!(main_tools(None, local, true), (None, false));
        assert_eq!(
            main_tools(Some(&["all".into()]), local, false),
            (Some(vec!["all".to_string()]), false)
        );
        let given = vec!["Task".to_string(), "Read".to_string()];
        assert_eq!(main_tools(Some(&given), local, false), (Some(given), false));
    }

    #[test]
    fn the_warning_names_the_window_its_source_and_fixes() {
        let w = ContextWindow::new(8_192, WindowSource::Server("llama.cpp /props"));
        assert_eq!(window_warning(4_000, w, false), None);
        let text = window_warning(4_500, w, false).expect("past half");
        assert!(text.contains("about 4500 tokens, 54%"), "{text}");
        assert!(text.contains("8192-token context window"), "{text}");
        assert!(
            text.contains("read from the server: llama.cpp /props"),
            "{text}"
        );
        assert!(text.contains("--main-tools Task"), "{text}");
        let lean = window_warning(4_500, w, true).expect("past half");
        assert!(!lean.contains("--main-tools"), "{lean}");
        let assumed = ContextWindow::new(2_000, WindowSource::Assumed);
        let text = window_warning(1_500, assumed, true).expect("past half");
        assert!(text.contains("--context-window"), "{text}");
    }
}
