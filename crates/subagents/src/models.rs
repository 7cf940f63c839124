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

/// Every Claude model id (`claude-sonnet-4-20250514`, `claude-3-5-haiku-latest`...) as a
/// model entry of `subagent_claude::LoadCheck` (a prefix): such names resolve like Claude
/// Code's aliases.
pub const CLAUDE_MODEL_IDS: &str = "claude-*";

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

/// True when `spec` names a model served on this machine or its network: `ollama:`, or
/// `openai-compatible:` at a loopback, private or `.local` address (llama.cpp, vLLM, LM
/// Studio, Ollama). `subagents run` gives such a main model the lean tool set by default.
#[cfg(feature = "providers")]
pub fn runs_locally(spec: &str) -> bool {
    match subagent_providers::ModelSpec::parse(spec) {
        Ok(s) => match s.provider {
            subagent_providers::Provider::Ollama => true,
            subagent_providers::Provider::OpenAiCompatible => s
                .base_url
                .as_deref()
                .is_some_and(subagent_providers::is_local_url),
            _ => false,
        },
        Err(_) => false,
    }
}

/// How long the context-window probe waits for each answer of a local server.
#[cfg(feature = "providers")]
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A context window and where its figure comes from
/// ([`Subagents::main_context_window`](crate::Subagents::main_context_window)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextWindow {
    /// The window in tokens.
    pub tokens: u64,
    /// Where the figure comes from.
    pub source: WindowSource,
}

impl ContextWindow {
    /// A window of `tokens` from `source`.
    pub fn new(tokens: u64, source: WindowSource) -> Self {
        Self { tokens, source }
    }
}

/// Where a [`ContextWindow`]'s figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WindowSource {
    /// Configured (`context_window`, `--context-window`).
    Configured,
    /// The model's server said so (where it was read: `llama.cpp /props`...).
    Server(&'static str),
    /// The runtime's table of published windows ([`subagent_runtime::MODEL_WINDOWS`]).
    Published,
    /// Nobody said: the runtime's default ([`subagent_runtime::DEFAULT_CONTEXT_WINDOW`]).
    Assumed,
}

impl fmt::Display for WindowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowSource::Configured => f.write_str("as configured"),
            WindowSource::Server(from) => write!(f, "read from the server: {from}"),
            WindowSource::Published => f.write_str("the model's published window"),
            WindowSource::Assumed => f.write_str("assumed: nothing says otherwise"),
        }
    }
}

/// What a local model server said when asked at build time (`Subagents::builder().build()`
/// asks it once).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerProbe {
    /// Not asked: the model is not on a local server (or is no spec).
    NotAsked,
    /// The server answered and gave its context window.
    Window {
        /// The window in tokens.
        tokens: u64,
        /// Where it was read (`llama.cpp /props`, `Ollama /api/show`...).
        source: &'static str,
    },
    /// The server answered but did not say.
    Silent,
    /// Nothing answers at the server's address (the message names it).
    Unreachable(String),
}

/// Asks the default model's server, when it [`runs_locally`], for its context window
/// ([`subagent_providers::probe_context_window`]).
#[cfg(feature = "providers")]
#[cfg_attr(not(feature = "claude"), allow(dead_code))]
pub(crate) async fn probe_server(default: Option<&ModelChoice>) -> ServerProbe {
    let Some(ModelChoice::Spec(spec)) = default else {
        return ServerProbe::NotAsked;
    };
    if !runs_locally(spec) {
        return ServerProbe::NotAsked;
    }
    let Ok(parsed) = subagent_providers::ModelSpec::parse(spec) else {
        return ServerProbe::NotAsked;
    };
    match subagent_providers::probe_context_window(&parsed, PROBE_TIMEOUT).await {
        Ok(Some(w)) => ServerProbe::Window {
            tokens: w.tokens,
            source: w.source,
        },
        Ok(None) => ServerProbe::Silent,
        Err(e) => ServerProbe::Unreachable(e.to_string()),
    }
}

/// [`probe_server`] without the `providers` feature: nothing to ask.
#[cfg(not(feature = "providers"))]
#[cfg_attr(not(feature = "claude"), allow(dead_code))]
pub(crate) async fn probe_server(_default: Option<&ModelChoice>) -> ServerProbe {
    ServerProbe::NotAsked
}

/// Builds the registry: the default model (registered under its spec, or under its own name
/// for a value), named models (specs become aliases built on first use, so a broken entry
/// costs nothing until used and then names its cause), Claude Code's model names — the
/// aliases `sonnet`/`opus`/`haiku` and every Claude model id (`claude-sonnet-4-20250514`) —
/// (to Anthropic when `ANTHROPIC_API_KEY` is set, else answered by the default model as a
/// stand-in that says why, so agents written for Claude Code run on any model), and spec
/// strings built on demand.
///
/// `server_window`: the context window the default model's server reported
/// ([`probe_server`]); the default model built from its spec reports it.
#[cfg(feature = "claude")]
pub(crate) fn registry(
    default: Option<&ModelChoice>,
    named: &[(String, ModelChoice)],
    server_window: Option<u64>,
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
            reg.register(spec.clone(), build_spec_windowed(spec, server_window)?);
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
        if anthropic {
            for (alias, target) in subagent_providers::default_aliases() {
                if !named.iter().any(|(n, _)| n.eq_ignore_ascii_case(alias)) {
                    reg.alias(alias, format!("anthropic:{target}"));
                }
            }
        } else {
            // Without a key the default model answers for Claude Code's model names, and the
            // run says so (subagent-claude's notice).
            reg.set_stand_in(Arc::new(|name: &str| {
                subagent_providers::anthropic_model_id(name)
                    .map(|_| "no ANTHROPIC_API_KEY".to_string())
            }));
        }
        let servers = configured_servers(default, named);
        reg.set_fallback(Arc::new(move |name: &str| {
            if name.contains(':') {
                return Some(
                    guard_spec_server(name, &servers)
                        .and_then(|()| subagent_providers::model_from_spec(name)),
                );
            }
            // A Claude model id (`claude-sonnet-4-20250514`), with the key: to Anthropic.
            let id = subagent_providers::anthropic_model_id(name).filter(|_| anthropic)?;
            Some(subagent_providers::model_from_spec(&format!(
                "anthropic:{id}"
            )))
        }));
    }
    Ok((reg, default_name))
}

/// The servers the configured models send to ([`subagent_providers::spec_server`]): the
/// default model's and each named model's. The user's word, so the only servers a spec built
/// on demand may name.
#[cfg(all(feature = "claude", feature = "providers"))]
fn configured_servers(
    default: Option<&ModelChoice>,
    named: &[(String, ModelChoice)],
) -> std::collections::BTreeSet<String> {
    default
        .into_iter()
        .chain(named.iter().map(|(_, c)| c))
        .filter_map(|c| match c {
            ModelChoice::Spec(spec) => subagent_providers::spec_server(spec),
            ModelChoice::Model(_) => None,
        })
        .collect()
}

/// Refuses a spec built on demand (a Task call's `model`, an agent file's `model` field) that
/// names a server no configured model uses: the model or a cloned repository's agent file
/// would otherwise choose where the conversation and `OPENAI_COMPATIBLE_API_KEY` are sent.
#[cfg(all(feature = "claude", feature = "providers"))]
fn guard_spec_server(
    spec: &str,
    servers: &std::collections::BTreeSet<String>,
) -> Result<(), subagent_spi::ModelError> {
    match subagent_providers::spec_server(spec) {
        Some(server) if !servers.contains(&server) => {
            Err(subagent_spi::ModelError::Config(format!(
                "model `{}` would send requests to {server}, a server none of the configured \
                 models use; a Task call or an agent file may name a model on a server only \
                 when the configuration does (the main model, agent_model or [models])",
                redacted(spec)
            )))
        }
        _ => Ok(()),
    }
}

/// What Claude Code's model name `alias` (`sonnet`, `opus`, `haiku`, or a Claude model id such
/// as `claude-sonnet-4-20250514`) stands for: the Anthropic model when `ANTHROPIC_API_KEY` is
/// set, else the default model (so agents written for Claude Code run on any model); `None` for
/// another name, or with neither.
#[cfg(feature = "providers")]
fn builtin_alias_target(alias: &str, default: Option<&str>) -> Option<String> {
    let target = subagent_providers::anthropic_model_id(alias)?;
    if env_nonempty("ANTHROPIC_API_KEY").is_some() {
        Some(format!("anthropic:{target}"))
    } else {
        default.map(str::to_string)
    }
}

/// The registry the Markdown agents route through when one model is forced for every agent
/// ([`SubagentsBuilder::agent_model`](crate::SubagentsBuilder::agent_model)): whatever name a
/// run asks for (`haiku`, `inherit`'s parent model, a spec, a Task call's `model`), it gets
/// the forced model.
#[cfg(feature = "claude")]
pub(crate) fn forced_registry(spec: &str) -> Result<subagent_runtime::ModelRegistry, Error> {
    let model = build_spec(spec)?;
    let mut reg = subagent_runtime::ModelRegistry::new();
    reg.register(spec.to_string(), model.clone());
    reg.set_default(spec.to_string());
    reg.set_fallback(Arc::new(move |_name: &str| Some(Ok(model.clone()))));
    Ok(reg)
}

/// Where model names lead, as the assembly routes them: the default model, named models
/// (`[models]`), Claude Code's `sonnet`/`opus`/`haiku`, specs, and a model forced for every
/// agent. For showing which model an agent runs on before it runs (`agents list`, the notice
/// of `run`); the model registry routes the same way.
#[derive(Debug, Clone, Default)]
pub struct ModelRoutes {
    default: Option<String>,
    named: Vec<(String, String)>,
    forced: Option<String>,
}

impl ModelRoutes {
    /// Routes from the default model spec, named models (name → spec) and the model forced
    /// for every agent, if any.
    pub fn new(
        default: Option<&str>,
        named: impl IntoIterator<Item = (String, String)>,
        forced: Option<&str>,
    ) -> Self {
        Self {
            default: default.map(str::to_string),
            named: named.into_iter().collect(),
            forced: forced.map(str::to_string),
        }
    }

    /// The default model's spec.
    pub fn default_spec(&self) -> Option<&str> {
        self.default.as_deref()
    }

    /// The model forced for every agent, if any.
    pub fn forced(&self) -> Option<&str> {
        self.forced.as_deref()
    }

    /// The spec `name` leads to (`default`, a named model, `sonnet`/`opus`/`haiku`, or a spec
    /// itself); `None` when it names nothing known.
    pub fn spec_of(&self, name: &str) -> Option<String> {
        let mut current = name.trim().to_string();
        for _ in 0..8 {
            if current.is_empty() || current.eq_ignore_ascii_case("default") {
                current = self.default.clone()?;
                continue;
            }
            if let Some((_, spec)) = self
                .named
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&current))
            {
                current = spec.clone();
                continue;
            }
            #[cfg(feature = "providers")]
            if let Some(target) = builtin_alias_target(&current, self.default.as_deref()) {
                return Some(target);
            }
            return current.contains(':').then_some(current);
        }
        None
    }

    /// The spec a Markdown agent runs with when the main agent calls it without naming a
    /// model: the forced model, else its `model:` (`inherit`: the main agent's), else the
    /// default model.
    #[cfg(feature = "claude")]
    pub fn agent_spec(&self, def: &subagent_claude::ClaudeAgentDefinition) -> Option<String> {
        if let Some(f) = &self.forced {
            return Some(f.clone());
        }
        let default = self.default.as_deref();
        let (name, _) = subagent_claude::route_model(None, def, default, default);
        self.spec_of(&name)
    }
}

/// Which provider (and, for `openai-compatible`, which server) a spec talks to, for telling
/// apart models that go to different places.
///
/// A server is its scheme, host, port and path only, as the HTTP client reads them
/// ([`subagent_providers::BaseUrl::server_and_path`]): the spec's query is not part of it, so
/// the same server with another `?temperature` is the same provider. A spec that does not parse
/// (or without the `providers` feature) is its provider prefix followed by `@?`.
pub fn provider_of(spec: &str) -> String {
    match spec.split_once(':') {
        Some(("openai-compatible", _)) => {
            #[cfg(feature = "providers")]
            if let Some(server) = subagent_providers::ModelSpec::parse(spec)
                .ok()
                .and_then(|s| s.server())
            {
                return format!("openai-compatible@{}", server.server_and_path());
            }
            "openai-compatible@?".to_string()
        }
        Some((provider, _)) => provider.to_string(),
        None => spec.to_string(),
    }
}

/// [`build_spec`], reporting `window` as the model's context window when given.
#[cfg(feature = "claude")]
fn build_spec_windowed(spec: &str, window: Option<u64>) -> Result<Arc<dyn ChatModel>, Error> {
    #[cfg(feature = "providers")]
    if let Some(tokens) = window {
        return subagent_providers::ModelSpec::parse(spec)
            .and_then(|s| s.build_with_context_window(tokens))
            .map_err(|source| Error::Model {
                spec: redacted(spec),
                source,
            });
    }
    let _ = window;
    build_spec(spec)
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

#[cfg(test)]
mod provider_tests {
    use super::provider_of;

    #[test]
    #[cfg(feature = "providers")]
    fn a_server_is_scheme_host_port_and_path_without_the_query() {
        let main = provider_of("openai-compatible:model@http://Host:8080/v1?temperature=0.2");
        assert_eq!(main, "openai-compatible@http://host:8080/v1");
        // The same server with another query, model or a trailing slash.
        for same in [
            "openai-compatible:other@http://host:8080/v1?temperature=0.7",
            "openai-compatible:model@http://host:8080/v1/",
        ] {
            assert_eq!(provider_of(same), main, "{same}");
        }
        // Another port, path or scheme is another server.
        for other in [
            "openai-compatible:model@http://host:8081/v1",
            "openai-compatible:model@http://host:8080/v2",
            "openai-compatible:model@https://host:8080/v1",
        ] {
            assert_ne!(provider_of(other), main, "{other}");
        }
        // A URL the client would read differently is no server at all.
        assert_eq!(
            provider_of(r"openai-compatible:m@http://host:8081\@host:8080/v1"),
            "openai-compatible@?"
        );
        assert_eq!(provider_of("anthropic:claude-sonnet-4-5"), "anthropic");
        assert_eq!(provider_of("sonnet"), "sonnet");
    }
}
