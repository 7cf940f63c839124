//! Models: the default model and named models, by spec string or as values, and the model
//! registry the Markdown agents route through.

use std::fmt;
use std::sync::Arc;
#[cfg(feature = "providers")]
use std::time::Duration;

use subagent_spi::ChatModel;

#[cfg(any(feature = "claude", feature = "providers"))]
use crate::Error;

/// A model as the builder takes it: a spec string (`ollama:qwen2.5`, `openai:gpt-4.1`,
/// `openai-compatible:MODEL@URL`, `anthropic:...`) or a model value.
#[derive(Clone)]
pub enum ModelChoice {
    /// A spec string, built by `subagent-providers` (feature `providers`).
    Spec(String),
    /// A model value.
    Model(Arc<dyn ChatModel>),
}

impl fmt::Debug for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelChoice::Spec(s) => f.debug_tuple("Spec").field(&redacted(s)).finish(),
            ModelChoice::Model(m) => f.debug_tuple("Model").field(&m.model_name()).finish(),
        }
    }
}

impl From<&str> for ModelChoice {
    fn from(spec: &str) -> Self {
        ModelChoice::Spec(spec.to_string())
    }
}

impl From<String> for ModelChoice {
    fn from(spec: String) -> Self {
        ModelChoice::Spec(spec)
    }
}

impl From<Arc<dyn ChatModel>> for ModelChoice {
    fn from(model: Arc<dyn ChatModel>) -> Self {
        ModelChoice::Model(model)
    }
}

/// A spec or URL with credentials hidden, for messages and logs.
pub fn redacted(spec: &str) -> String {
    #[cfg(feature = "providers")]
    {
        match spec.split_once('@') {
            // `openai-compatible:MODEL@URL`: redact the URL part.
            Some((head, url)) if url.contains("://") => {
                format!("{head}@{}", subagent_providers::redact_url(url))
            }
            _ => subagent_providers::redact_url(spec),
        }
    }
    #[cfg(not(feature = "providers"))]
    {
        spec.to_string()
    }
}

/// Where `subagents` looks for an Ollama server when no model is named
/// (`SUBAGENTS_OLLAMA_URL` overrides it).
pub const OLLAMA_DEFAULT_URL: &str = "http://127.0.0.1:11434";

/// What to tell a person who has no model configured.
pub const NO_MODEL_HELP: &str = "no model is reachable. Set one of:\n  \
     SUBAGENTS_MODEL=ollama:qwen2.5 (after `ollama pull qwen2.5`, with Ollama on 127.0.0.1:11434)\n  \
     SUBAGENTS_MODEL=openai:gpt-4.1 and OPENAI_API_KEY=...\n  \
     SUBAGENTS_MODEL=anthropic:claude-sonnet-4-5 and ANTHROPIC_API_KEY=...\n  \
     SUBAGENTS_MODEL=openai-compatible:MODEL@http://HOST:PORT/v1 (vLLM, llama.cpp, LM Studio)\n\
     or pass --model SPEC";

#[cfg(feature = "providers")]
fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Picks a default model spec the way the `subagents` command does: `explicit` (a flag or a
/// config file), then `$SUBAGENTS_MODEL`, then a provider key in the environment
/// (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`), then the first model of a running Ollama. Fails
/// with one message saying what to set.
#[cfg(feature = "providers")]
pub async fn choose_default_model(explicit: Option<&str>) -> Result<String, Error> {
    if let Some(spec) = explicit
        .map(str::to_string)
        .or_else(|| env_nonempty("SUBAGENTS_MODEL"))
    {
        return Ok(spec);
    }
    if env_nonempty("ANTHROPIC_API_KEY").is_some() {
        return Ok("anthropic:claude-sonnet-4-5".into());
    }
    if env_nonempty("OPENAI_API_KEY").is_some() {
        return Ok("openai:gpt-4.1".into());
    }
    let base = env_nonempty("SUBAGENTS_OLLAMA_URL").unwrap_or_else(|| OLLAMA_DEFAULT_URL.into());
    subagent_providers::probe_ollama(&base, Duration::from_secs(2))
        .await
        .map_err(|e| Error::NoModel(format!("{NO_MODEL_HELP}\n(tried {e})")))
}

/// Builds the registry: the default model (registered under its spec, or under its own name
/// for a value), named models (specs become aliases built on first use, so a broken entry
/// costs nothing until used and then names its cause), Claude Code's `sonnet`/`opus`/`haiku`
/// (to Anthropic when `ANTHROPIC_API_KEY` is set, else to the default model, so agents
/// written for Claude Code run on any model), and spec strings built on demand.
#[cfg(feature = "claude")]
pub(crate) fn registry(
    default: Option<&ModelChoice>,
    named: &[(String, ModelChoice)],
) -> Result<(subagent_runtime::ModelRegistry, Option<String>), Error> {
    let mut reg = subagent_runtime::ModelRegistry::new();
    let default_name = match default {
        None => None,
        Some(ModelChoice::Model(m)) => {
            let name = m.model_name().to_string();
            reg.register(name.clone(), m.clone());
            Some(name)
        }
        Some(ModelChoice::Spec(spec)) => {
            reg.register(spec.clone(), build_spec(spec)?);
            Some(spec.clone())
        }
    };
    if let Some(d) = &default_name {
        reg.set_default(d.clone());
    }
    for (name, choice) in named {
        match choice {
            ModelChoice::Model(m) => {
                reg.register(name.clone(), m.clone());
            }
            ModelChoice::Spec(spec) => {
                reg.alias(name.clone(), spec.clone());
            }
        }
    }
    #[cfg(feature = "providers")]
    {
        let anthropic = env_nonempty("ANTHROPIC_API_KEY").is_some();
        for (alias, target) in subagent_providers::default_aliases() {
            if named.iter().any(|(n, _)| n == alias) {
                continue;
            }
            match (&default_name, anthropic) {
                (_, true) => {
                    reg.alias(alias, format!("anthropic:{target}"));
                }
                (Some(d), false) => {
                    reg.alias(alias, d.clone());
                }
                (None, false) => {}
            }
        }
        reg.set_fallback(Arc::new(|name: &str| {
            name.contains(':')
                .then(|| subagent_providers::model_from_spec(name))
        }));
    }
    Ok((reg, default_name))
}

#[cfg(feature = "claude")]
fn build_spec(spec: &str) -> Result<Arc<dyn ChatModel>, Error> {
    #[cfg(feature = "providers")]
    {
        subagent_providers::model_from_spec(spec).map_err(|source| Error::Model {
            spec: redacted(spec),
            source,
        })
    }
    #[cfg(not(feature = "providers"))]
    {
        Err(Error::MissingFeature {
            what: format!("the model spec `{}`", redacted(spec)),
            feature: "providers",
        })
    }
}
