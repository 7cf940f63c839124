//! Model specs as strings (`openai:gpt-4.1`, `ollama:qwen2.5`, ...) and building models from them.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use subagent_spi::{ChatModel, ModelError};

use crate::OLLAMA_DEFAULT_BASE_URL;
use crate::anthropic::AnthropicModel;
use crate::base_url::BaseUrl;
use crate::openai::{MaxTokensField, OpenAiModel};
use crate::prompt_cache::PromptCaching;

/// The `keep_alive` sent to Ollama (`ollama:` specs) while prompt caching is on: the model and
/// its cache stay loaded half an hour past the last request, while a caller waits for its
/// children (Ollama's own default is 5 minutes).
pub const OLLAMA_KEEP_ALIVE: &str = "30m";

/// The accepted spec forms, for error messages.
pub const ACCEPTED_FORMS: &[&str] = &[
    "openai:<model>",
    "anthropic:<model>",
    "ollama:<model>",
    "openai-compatible:<model>@<base-url>",
    "sonnet",
    "opus",
    "haiku",
    "claude-<model id>",
];

/// Built-in aliases and the Anthropic model ids they stand for.
pub fn default_aliases() -> Vec<(&'static str, &'static str)> {
    vec![
        ("sonnet", "claude-sonnet-4-5"),
        ("opus", "claude-opus-4-1"),
        ("haiku", "claude-haiku-4-5"),
    ]
}

/// The Anthropic model a Claude Code model name stands for: an alias (`sonnet`, `opus`,
/// `haiku`, see [`default_aliases`]) gives its id, a Claude model id (`claude-` followed by
/// letters, digits, `-`, `.` and `_`, dated or not: `claude-sonnet-4-20250514`,
/// `claude-3-5-haiku-latest`, `claude-opus-4-1`) gives itself in lower case. Case and
/// surrounding blanks are ignored; `None` for any other name.
///
/// ```
/// use subagent_providers::anthropic_model_id;
/// assert_eq!(anthropic_model_id("Sonnet").as_deref(), Some("claude-sonnet-4-5"));
/// assert_eq!(
///     anthropic_model_id("claude-sonnet-4-20250514").as_deref(),
///     Some("claude-sonnet-4-20250514")
/// );
/// assert_eq!(anthropic_model_id("gpt-4.1"), None);
/// assert_eq!(anthropic_model_id("claude-"), None);
/// ```
pub fn anthropic_model_id(name: &str) -> Option<String> {
    let name = name.trim();
    if let Some((_, id)) = default_aliases()
        .into_iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(name))
    {
        return Some(id.to_string());
    }
    let lower = name.to_ascii_lowercase();
    let rest = lower.strip_prefix("claude-")?;
    let ok = !rest.is_empty()
        && rest.len() <= 100
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    ok.then_some(lower)
}

/// Which API a spec talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI (key from `OPENAI_API_KEY`, base URL override `OPENAI_BASE_URL`).
    OpenAi,
    /// Anthropic (key from `ANTHROPIC_API_KEY`, base URL override `ANTHROPIC_BASE_URL`).
    Anthropic,
    /// A local Ollama at `http://127.0.0.1:11434/v1`, no key.
    Ollama,
    /// Any OpenAI-compatible server at an explicit base URL (key, if any, from
    /// `OPENAI_COMPATIBLE_API_KEY`; the OpenAI key is never sent to other hosts).
    OpenAiCompatible,
}

impl Provider {
    /// The spec prefix, e.g. `openai`.
    pub fn prefix(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Ollama => "ollama",
            Provider::OpenAiCompatible => "openai-compatible",
        }
    }
}

/// A parsed model spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ModelSpec {
    /// The API.
    pub provider: Provider,
    /// The model id sent to it.
    pub model: String,
    /// The base URL given in the spec (`openai-compatible` only), as the HTTP client reads it
    /// ([`BaseUrl`]; no trailing `/`).
    pub base_url: Option<String>,
    /// The sampling temperature given with `?temperature=<t>` (default: none, the provider's
    /// own default), sent with every request that sets none.
    pub temperature: Option<Temperature>,
    /// Prompt caching given with `?cache=off|5m|1h` (default: none, [`PROMPT_CACHE_VAR`](crate::PROMPT_CACHE_VAR)'s
    /// setting, else 5 minutes; see [`PromptCaching`]).
    pub cache: Option<PromptCaching>,
}

/// Highest temperature a spec accepts (OpenAI's upper bound; Anthropic's is 1).
pub const MAX_SPEC_TEMPERATURE: f32 = 2.0;

/// A sampling temperature from a spec's `?temperature=<t>`: finite, from 0 to
/// [`MAX_SPEC_TEMPERATURE`].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Temperature(f32);

impl Temperature {
    /// `t` when it is finite and from 0 to [`MAX_SPEC_TEMPERATURE`].
    pub fn new(t: f32) -> Option<Temperature> {
        // `-0` is 0 (one value, one hash).
        (t.is_finite() && (0.0..=MAX_SPEC_TEMPERATURE).contains(&t)).then_some(Temperature(t + 0.0))
    }

    /// The value.
    pub fn get(self) -> f32 {
        self.0
    }
}

// Never NaN (see `new`), so equality is total.
impl Eq for Temperature {}

impl std::hash::Hash for Temperature {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl fmt::Display for Temperature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The options after a spec's `?` (`&`-separated).
#[derive(Default)]
struct SpecOptions {
    temperature: Option<Temperature>,
    cache: Option<PromptCaching>,
}

/// The options after a spec's `?` (`temperature=<t>`, `cache=off|5m|1h`, `&`-separated).
fn spec_options(spec: &str, query: &str) -> Result<SpecOptions, ModelError> {
    let mut temperature = None;
    let mut cache = None;
    for pair in query.split('&').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key.trim() {
            "cache" => {
                if cache.is_some() {
                    return Err(spec_error(spec, "`cache` is given twice"));
                }
                cache = Some(PromptCaching::parse(value).ok_or_else(|| {
                    spec_error(
                        spec,
                        &format!("`cache={}` is none of off, 5m, 1h", value.trim()),
                    )
                })?);
            }
            "temperature" => {
                if temperature.is_some() {
                    return Err(spec_error(spec, "`temperature` is given twice"));
                }
                let t = value
                    .trim()
                    .parse::<f32>()
                    .ok()
                    .and_then(Temperature::new)
                    .ok_or_else(|| {
                        spec_error(
                            spec,
                            &format!(
                                "`temperature={}` is not a number from 0 to {MAX_SPEC_TEMPERATURE}",
                                value.trim()
                            ),
                        )
                    })?;
                temperature = Some(t);
            }
            other => {
                return Err(spec_error(
                    spec,
                    &format!("unknown option `{other}` after `?` (known: temperature, cache)"),
                ));
            }
        }
    }
    Ok(SpecOptions { temperature, cache })
}

fn spec_error(spec: &str, why: &str) -> ModelError {
    ModelError::Config(format!(
        "invalid model spec `{spec}`: {why}; accepted forms: {}",
        ACCEPTED_FORMS.join(", ")
    ))
}

impl ModelSpec {
    /// Parse `openai:<model>`, `anthropic:<model>`, `ollama:<model>`,
    /// `openai-compatible:<model>@<base-url>`, an alias (`sonnet`, `opus`, `haiku`) or a bare
    /// Claude model id (`claude-sonnet-4-20250514`: Anthropic, see [`anthropic_model_id`]), each
    /// optionally followed by `?temperature=<t>` (from 0 to [`MAX_SPEC_TEMPERATURE`]; e.g.
    /// `ollama:qwen2.5?temperature=0` for repeatable choices from a small local model).
    pub fn parse(spec: &str) -> Result<ModelSpec, ModelError> {
        let (s, SpecOptions { temperature, cache }) = match spec.trim().split_once('?') {
            Some((s, query)) => (s.trim(), spec_options(spec, query)?),
            None => (spec.trim(), SpecOptions::default()),
        };
        if let Some(id) = (!s.contains(':')).then(|| anthropic_model_id(s)).flatten() {
            return Ok(ModelSpec {
                provider: Provider::Anthropic,
                model: id,
                base_url: None,
                temperature,
                cache,
            });
        }
        let Some((prefix, rest)) = s.split_once(':') else {
            return Err(ModelError::UnknownModel {
                name: s.to_string(),
                known: ACCEPTED_FORMS.iter().map(|f| f.to_string()).collect(),
            });
        };
        let provider = match prefix.trim().to_ascii_lowercase().as_str() {
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            "ollama" => Provider::Ollama,
            "openai-compatible" | "openai_compatible" => Provider::OpenAiCompatible,
            other => {
                return Err(spec_error(
                    spec,
                    &format!(
                        "unknown provider `{other}` (known: openai, anthropic, ollama, openai-compatible)"
                    ),
                ));
            }
        };
        let rest = rest.trim();
        let (model, base_url) = if provider == Provider::OpenAiCompatible {
            let at = rest
                .find("@http://")
                .or_else(|| rest.find("@https://"))
                .ok_or_else(|| {
                    spec_error(
                        spec,
                        "openai-compatible needs `<model>@<base-url>` with an http:// or https:// URL",
                    )
                })?;
            // Read once, by the client's own parser: what the guards judge is what connects.
            let url = &rest[at + 1..];
            let base = BaseUrl::parse(url).map_err(|why| {
                let shown = format!(
                    "{}:{}@{}",
                    prefix.trim(),
                    &rest[..at],
                    crate::redact_url(url)
                );
                spec_error(&shown, &why)
            })?;
            (
                rest[..at].trim().to_string(),
                Some(base.as_str().to_string()),
            )
        } else {
            (rest.to_string(), None)
        };
        if model.is_empty() {
            return Err(spec_error(spec, "the model id is empty"));
        }
        Ok(ModelSpec {
            provider,
            model,
            base_url,
            temperature,
            cache,
        })
    }

    /// The server this spec names (`openai-compatible:MODEL@URL`), read by the client's
    /// parser; `None` for specs whose server comes from the user's environment (`openai:`,
    /// `anthropic:`, `ollama:`, aliases).
    pub fn server(&self) -> Option<BaseUrl> {
        self.base_url
            .as_deref()
            .and_then(|u| BaseUrl::parse(u).ok())
    }

    /// Build the model, reading keys and base URLs through `env` (a variable lookup such as
    /// `|k| std::env::var(k).ok()`; empty values count as unset).
    pub fn build_with_env(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        self.build_inner(env, None)
    }

    /// [`build`](Self::build), for a model whose server runs it with a context window of
    /// `tokens` (as [`probe_context_window`](crate::probe_context_window) read it): the model
    /// reports it ([`ChatModel::context_window`]). Only the OpenAI-compatible kinds (`ollama:`,
    /// `openai-compatible:`) keep it.
    pub fn build_with_context_window(&self, tokens: u64) -> Result<Arc<dyn ChatModel>, ModelError> {
        self.build_inner(&|k| std::env::var(k).ok(), Some(tokens))
    }

    /// `{PREFIX}_API_KEY` and `{PREFIX}_BASE_URL` from `var`; an error when neither is set (the
    /// hosted API needs its key).
    fn key_or_base(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
        prefix: &str,
    ) -> Result<(Option<String>, Option<String>), ModelError> {
        let base = var(&format!("{prefix}_BASE_URL"));
        let key = var(&format!("{prefix}_API_KEY"));
        if key.is_none() && base.is_none() {
            return Err(ModelError::Config(format!(
                "{prefix}_API_KEY is not set; `{self}` needs it (or set {prefix}_BASE_URL to a server that needs no key)"
            )));
        }
        Ok((key, base))
    }

    fn build_inner(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        window: Option<u64>,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let caching = match self.cache {
            Some(c) => c,
            None => crate::prompt_cache::from_env(&var)?.unwrap_or_default(),
        };
        let openai = match self.provider {
            Provider::OpenAi => {
                let (key, base) = self.key_or_base(&var, "OPENAI")?;
                let b = OpenAiModel::builder().model(&self.model).api_key_opt(key);
                match base {
                    Some(url) => b.base_url(url),
                    None => b.max_tokens_field(MaxTokensField::MaxCompletionTokens),
                }
            }
            Provider::Anthropic => {
                let (key, base) = self.key_or_base(&var, "ANTHROPIC")?;
                let mut b = AnthropicModel::builder()
                    .model(&self.model)
                    .api_key_opt(key)
                    .prompt_caching(caching);
                if let Some(url) = base {
                    b = b.base_url(url);
                }
                if let Some(t) = self.temperature {
                    b = b.temperature(t.get());
                }
                if let Some(wait) = rate_limit_wait(&var)? {
                    b = b.max_rate_limit_wait(wait);
                }
                return Ok(Arc::new(b.build()?));
            }
            Provider::Ollama => OpenAiModel::builder()
                .provider_name("ollama")
                .base_url(OLLAMA_DEFAULT_BASE_URL)
                .model(&self.model)
                .keep_alive(OLLAMA_KEEP_ALIVE)
                .text_tool_calls(text_tool_calls(&var, true)?),
            Provider::OpenAiCompatible => {
                let base = self
                    .base_url
                    .clone()
                    .ok_or_else(|| ModelError::Config(format!("`{self}` has no base URL")))?;
                let local = is_local_url(&base);
                OpenAiModel::builder()
                    .provider_name("openai-compatible")
                    .base_url(base)
                    .model(&self.model)
                    .api_key_opt(var("OPENAI_COMPATIBLE_API_KEY"))
                    .llama_cpp_cache(local)
                    .text_tool_calls(text_tool_calls(&var, local)?)
            }
        };
        let openai = match self.temperature {
            Some(t) => openai.temperature(t.get()),
            None => openai,
        }
        .prompt_caching(caching);
        let openai = match rate_limit_wait(&var)? {
            Some(wait) => openai.max_rate_limit_wait(wait),
            None => openai,
        };
        let openai = match window {
            Some(tokens) => openai.context_window(tokens),
            None => openai,
        };
        Ok(Arc::new(openai.build()?))
    }

    /// Build the model, reading the process environment.
    pub fn build(&self) -> Result<Arc<dyn ChatModel>, ModelError> {
        self.build_with_env(&|k| std::env::var(k).ok())
    }
}

/// The variable that turns the recovery of tool calls written as text on or off for every
/// OpenAI-compatible spec (`on`/`off`; also `1`/`0`, `true`/`false`). Unset: on for `ollama:`
/// and for `openai-compatible:` on a local address (see [`is_local_url`]), off otherwise.
pub const TEXT_TOOL_CALLS_VAR: &str = "SUBAGENTS_TEXT_TOOL_CALLS";

/// The recovery setting: [`TEXT_TOOL_CALLS_VAR`] when set, else `default`.
fn text_tool_calls(
    var: &dyn Fn(&str) -> Option<String>,
    default: bool,
) -> Result<bool, ModelError> {
    match var(TEXT_TOOL_CALLS_VAR).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(default),
        Some(v) if matches!(v.as_str(), "on" | "1" | "true" | "yes") => Ok(true),
        Some(v) if matches!(v.as_str(), "off" | "0" | "false" | "no") => Ok(false),
        Some(v) => Err(ModelError::Config(format!(
            "{TEXT_TOOL_CALLS_VAR}=`{v}` is neither on nor off"
        ))),
    }
}

/// The variable that sets how long every model built from a spec keeps retrying slow-down
/// answers (429, 503, 529), in seconds (`0`: they are retried `max_retries` times like other
/// failures). Unset: [`DEFAULT_MAX_RATE_LIMIT_WAIT`](crate::DEFAULT_MAX_RATE_LIMIT_WAIT), 300.
pub const RATE_LIMIT_WAIT_VAR: &str = "SUBAGENTS_RATE_LIMIT_WAIT";

/// The largest [`RATE_LIMIT_WAIT_VAR`] accepted, in seconds (a day).
const MAX_RATE_LIMIT_WAIT_SECS: f64 = 86_400.0;

/// [`RATE_LIMIT_WAIT_VAR`], checked, when set.
fn rate_limit_wait(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<std::time::Duration>, ModelError> {
    let Some(v) = var(RATE_LIMIT_WAIT_VAR) else {
        return Ok(None);
    };
    match v.trim().parse::<f64>() {
        Ok(secs) if (0.0..=MAX_RATE_LIMIT_WAIT_SECS).contains(&secs) => {
            Ok(Some(std::time::Duration::from_secs_f64(secs)))
        }
        _ => Err(ModelError::Config(format!(
            "{RATE_LIMIT_WAIT_VAR}=`{}` is not a number of seconds from 0 to {MAX_RATE_LIMIT_WAIT_SECS}",
            v.trim()
        ))),
    }
}

/// True when `url`'s host is this machine or a private network ([`BaseUrl::is_local`]);
/// false for a URL [`BaseUrl::parse`] refuses.
pub fn is_local_url(url: &str) -> bool {
    BaseUrl::parse(url).is_ok_and(|u| u.is_local())
}

/// The server a spec sends its requests to, as `scheme://host:port` (lower case, path left out,
/// the default port filled in: [`BaseUrl::origin`]), for the specs that name one
/// (`openai-compatible:MODEL@URL`); `None` for specs whose server comes from the user's
/// environment (`openai:`, `anthropic:`, `ollama:`, aliases) and for strings that are not specs
/// (a URL the client would read differently from how it is written is not a spec).
///
/// Two specs with the same server send the same key (`OPENAI_COMPATIBLE_API_KEY`) to the same
/// place; a host uses this to allow a model named by a model or a file only on a server the
/// user configured.
pub fn spec_server(spec: &str) -> Option<String> {
    ModelSpec::parse(spec).ok()?.server().map(|u| u.origin())
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider.prefix(), self.model)?;
        if let Some(url) = &self.base_url {
            write!(f, "@{url}")?;
        }
        let mut sep = '?';
        if let Some(t) = self.temperature {
            write!(f, "{sep}temperature={t}")?;
            sep = '&';
        }
        if let Some(c) = self.cache {
            write!(f, "{sep}cache={c}")?;
        }
        Ok(())
    }
}

impl FromStr for ModelSpec {
    type Err = ModelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Parse `spec` and build the model, reading `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
/// `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL` and `OPENAI_COMPATIBLE_API_KEY` from the environment.
pub fn model_from_spec(spec: &str) -> Result<Arc<dyn ChatModel>, ModelError> {
    ModelSpec::parse(spec)?.build()
}

/// [`model_from_spec`] with an explicit variable lookup instead of the process environment.
pub fn model_from_spec_with_env(
    spec: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ChatModel>, ModelError> {
    ModelSpec::parse(spec)?.build_with_env(env)
}

/// The spec someone most likely meant by `name` when it is none ([`ModelSpec::parse`] fails):
/// a provider's model without its prefix (`gpt-4.1` → `openai:gpt-4.1`, `claude-…` →
/// `anthropic:…`, an Ollama tag such as `qwen2.5` or `llama3.1:8b` → `ollama:…`), or a prefix
/// written with `/` (`openai/gpt-4.1` → `openai:gpt-4.1`). `None` for a valid spec and for text
/// that looks like no model.
pub fn suggest_spec(name: &str) -> Option<String> {
    let name = name.trim();
    if name.is_empty() || ModelSpec::parse(name).is_ok() {
        return None;
    }
    let (base, query) = match name.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (name, String::new()),
    };
    let known = ["openai", "anthropic", "ollama", "openai-compatible"];
    if let Some((prefix, model)) = base.split_once('/')
        && known.contains(&prefix.to_ascii_lowercase().as_str())
        && !model.is_empty()
        && !base.contains("://")
    {
        return Some(format!("{}:{model}{query}", prefix.to_ascii_lowercase()));
    }
    // A misspelt provider: `opneai:gpt-4.1`.
    if let Some((prefix, model)) = base.split_once(':')
        && let Some(provider) = known
            .iter()
            .find(|k| strsim::damerau_levenshtein(&prefix.to_ascii_lowercase(), k) <= 2)
        && !model.is_empty()
    {
        return Some(format!("{provider}:{model}{query}"));
    }
    let lower = base.to_ascii_lowercase();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':');
    if !base.chars().all(plain) || !base.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let openai = ["gpt-", "o1", "o3", "o4", "chatgpt-", "davinci", "text-"];
    let provider = if openai.iter().any(|p| lower.starts_with(p)) {
        "openai"
    } else if lower.starts_with("claude") {
        "anthropic"
    } else {
        "ollama"
    };
    Some(format!("{provider}:{base}{query}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_model_without_its_provider_gets_a_suggestion() {
        use super::suggest_spec;
        for (given, meant) in [
            ("gpt-4.1", "openai:gpt-4.1"),
            ("openai/gpt-4.1", "openai:gpt-4.1"),
            ("qwen2.5", "ollama:qwen2.5"),
            ("llama3.1:8b", "ollama:llama3.1:8b"),
            ("o4-mini", "openai:o4-mini"),
            ("opneai:gpt-4.1", "openai:gpt-4.1"),
            ("anthropc:claude-opus-4-1", "anthropic:claude-opus-4-1"),
            ("gpt-4.1?temperature=0", "openai:gpt-4.1?temperature=0"),
        ] {
            assert_eq!(suggest_spec(given).as_deref(), Some(meant), "{given}");
        }
        for valid_or_nonsense in [
            "openai:gpt-4.1",
            // A Claude model id is a spec of its own (Anthropic).
            "claude-sonnet-4-5",
            "sonnet",
            "",
            "http://x/v1",
            "../x",
            "1abc",
        ] {
            assert_eq!(suggest_spec(valid_or_nonsense), None, "{valid_or_nonsense}");
        }
    }

    use super::*;

    #[test]
    fn bare_claude_ids_are_anthropic_models_like_the_aliases() {
        for id in [
            "claude-sonnet-4-20250514",
            "claude-3-5-haiku-latest",
            "claude-opus-4-1",
            "Claude-Opus-4-1",
        ] {
            let s = ModelSpec::parse(id).unwrap();
            assert_eq!(s.provider, Provider::Anthropic, "{id}");
            assert_eq!(s.model, id.to_ascii_lowercase());
        }
        for not in ["claude", "claude-", "claude-x y", "claudex-1", "gpt-4.1"] {
            assert!(anthropic_model_id(not).is_none(), "{not}");
        }
        assert_eq!(
            anthropic_model_id(" HAIKU ").as_deref(),
            Some("claude-haiku-4-5")
        );
        // A prefixed spec is never read as a bare id.
        let s = ModelSpec::parse("ollama:claude-lookalike").unwrap();
        assert_eq!(s.provider, Provider::Ollama);
    }

    #[test]
    fn parses_every_form() {
        let s = ModelSpec::parse("openai:gpt-4.1").unwrap();
        assert_eq!(
            (s.provider, s.model.as_str()),
            (Provider::OpenAi, "gpt-4.1")
        );
        let s = ModelSpec::parse("ollama:qwen2.5:7b").unwrap();
        assert_eq!(
            (s.provider, s.model.as_str()),
            (Provider::Ollama, "qwen2.5:7b")
        );
        let s = ModelSpec::parse("anthropic:claude-sonnet-4-5").unwrap();
        assert_eq!(s.provider, Provider::Anthropic);
        let s =
            ModelSpec::parse("openai-compatible:org/model@v2@http://127.0.0.1:8080/v1/").unwrap();
        assert_eq!(s.model, "org/model@v2");
        assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        assert_eq!(
            s.to_string(),
            "openai-compatible:org/model@v2@http://127.0.0.1:8080/v1"
        );
        let s = ModelSpec::parse("sonnet").unwrap();
        assert_eq!(
            (s.provider, s.model.as_str()),
            (Provider::Anthropic, "claude-sonnet-4-5")
        );
    }

    #[test]
    fn bad_specs_list_the_accepted_forms() {
        for bad in [
            "gpt-4",
            "foo:bar",
            "openai:",
            "openai-compatible:m",
            "openai-compatible:m@ftp://x",
        ] {
            let err = ModelSpec::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("openai-compatible:<model>@<base-url>"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_spec_may_set_the_temperature() {
        let s =
            ModelSpec::parse("openai-compatible:m@http://127.0.0.1:8080/v1?temperature=0").unwrap();
        assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        assert_eq!(s.temperature.map(Temperature::get), Some(0.0));
        assert_eq!(
            s.to_string(),
            "openai-compatible:m@http://127.0.0.1:8080/v1?temperature=0"
        );
        let s = ModelSpec::parse("ollama:qwen2.5:7b?temperature=0.2").unwrap();
        assert_eq!(
            (s.model.as_str(), s.temperature),
            ("qwen2.5:7b", Temperature::new(0.2))
        );
        assert_eq!(ModelSpec::parse(&s.to_string()).unwrap(), s);
        let s = ModelSpec::parse("haiku?temperature=1").unwrap();
        assert_eq!(s.provider, Provider::Anthropic);
        assert_eq!(s.temperature, Temperature::new(1.0));
        assert_eq!(ModelSpec::parse("ollama:q").unwrap().temperature, None);
        assert_eq!(
            ModelSpec::parse("ollama:q?temperature=-0").unwrap(),
            ModelSpec::parse("ollama:q?temperature=0").unwrap()
        );
        for (bad, says) in [
            (
                "ollama:q?temperature=hot",
                "`temperature=hot` is not a number from 0 to 2",
            ),
            ("ollama:q?temperature=2.5", "from 0 to 2"),
            ("ollama:q?temperature=-1", "from 0 to 2"),
            ("ollama:q?temperature=NaN", "from 0 to 2"),
            ("ollama:q?temperature=inf", "from 0 to 2"),
            ("ollama:q?temperature", "from 0 to 2"),
            ("ollama:q?temperature=0&temperature=1", "given twice"),
            ("ollama:q?top_p=0.9", "unknown option `top_p`"),
        ] {
            let err = ModelSpec::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn a_spec_may_set_prompt_caching() {
        let s = ModelSpec::parse("anthropic:claude-haiku-4-5?cache=1h").unwrap();
        assert_eq!(s.cache, Some(PromptCaching::OneHour));
        assert_eq!(s.to_string(), "anthropic:claude-haiku-4-5?cache=1h");
        let s = ModelSpec::parse("ollama:q?temperature=0&cache=off").unwrap();
        assert_eq!(
            (s.temperature, s.cache),
            (Temperature::new(0.0), Some(PromptCaching::Off))
        );
        assert_eq!(ModelSpec::parse(&s.to_string()).unwrap(), s);
        assert_eq!(
            ModelSpec::parse("sonnet?cache=5m").unwrap().cache,
            Some(PromptCaching::FiveMinutes)
        );
        assert_eq!(ModelSpec::parse("ollama:q").unwrap().cache, None);
        for (bad, says) in [
            ("ollama:q?cache=2h", "`cache=2h` is none of off, 5m, 1h"),
            ("ollama:q?cache=off&cache=1h", "`cache` is given twice"),
        ] {
            let err = ModelSpec::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        // The variable sets the default; a spec's own setting wins.
        let env = |v: &'static str| {
            move |k: &str| {
                (k == crate::PROMPT_CACHE_VAR || k == "ANTHROPIC_API_KEY").then(|| v.to_string())
            }
        };
        assert!(model_from_spec_with_env("sonnet", &env("sideways")).is_err());
        assert!(model_from_spec_with_env("sonnet?cache=off", &env("1h")).is_ok());
    }

    #[test]
    fn local_urls() {
        for local in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:1234/v1",
            "http://[::1]:8000/v1",
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
            "http://gpu-box.lan:8000/v1",
        ] {
            assert!(is_local_url(local), "{local}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://8.8.8.8/v1",
            "http://127.0.0.1.example.com/v1",
            "http://localhost.evil.com/v1",
            // Refused URLs are not local (the hand parser read these as 127.0.0.1).
            "http://user@127.0.0.1/v1",
            r"http://8.8.8.8\@127.0.0.1/v1",
        ] {
            assert!(!is_local_url(remote), "{remote}");
        }
    }

    #[test]
    fn a_url_the_client_reads_differently_is_no_spec() {
        for (bad, says) in [
            (
                r"openai-compatible:m@http://127.0.0.1:1\@127.0.0.1:2/v1",
                "backslash",
            ),
            (
                "openai-compatible:m@http://u:SECRET@127.0.0.1:2/v1",
                "credentials",
            ),
            ("openai-compatible:m@http://127.1:2/v1", "`127.0.0.1:2`"),
            ("openai-compatible:m@http://127.0.0.1:2/v1#x", "fragment"),
        ] {
            let err = ModelSpec::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains(says) && err.contains("invalid model spec `openai-compatible:m@http"),
                "{bad}: {err}"
            );
            assert!(!err.contains("SECRET"), "{err}");
            assert_eq!(spec_server(bad), None, "{bad}");
        }
        let s = ModelSpec::parse("openai-compatible:m@http://LOCALHOST:80/v1/").unwrap();
        assert_eq!(s.base_url.as_deref(), Some("http://localhost/v1"));
        assert!(s.server().unwrap().is_loopback());
    }

    #[test]
    fn the_text_tool_calls_variable_is_on_off_or_an_error() {
        let with =
            |v: &'static str| move |k: &str| (k == TEXT_TOOL_CALLS_VAR).then(|| v.to_string());
        assert!(text_tool_calls(&|_| None, true).unwrap());
        assert!(!text_tool_calls(&|_| None, false).unwrap());
        assert!(!text_tool_calls(&with("off"), true).unwrap());
        assert!(text_tool_calls(&with(" ON "), false).unwrap());
        let err = model_from_spec_with_env("ollama:q", &with("maybe"))
            .err()
            .unwrap();
        assert!(err.to_string().contains(TEXT_TOOL_CALLS_VAR), "{err}");
    }

    #[test]
    fn keys_are_required_unless_a_base_url_is_set() {
        let none = |_: &str| None;
        let err = model_from_spec_with_env("openai:gpt-4.1", &none)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("OPENAI_API_KEY"), "{err}");
        let err = model_from_spec_with_env("haiku", &none)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
        let local = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".to_string());
        let m = model_from_spec_with_env("openai:gpt-4.1", &local).unwrap();
        assert_eq!(m.model_name(), "gpt-4.1");
        let m = model_from_spec_with_env("ollama:qwen2.5", &none).unwrap();
        assert_eq!(m.model_name(), "qwen2.5");
    }

    #[test]
    fn spec_server_is_the_origin_of_a_url_spec() {
        for (spec, origin) in [
            (
                "openai-compatible:m@http://127.0.0.1:8080/v1",
                Some("http://127.0.0.1:8080"),
            ),
            (
                "openai-compatible:m@https://Evil.Example/v1",
                Some("https://evil.example:443"),
            ),
            (
                "openai-compatible:m@http://[::1]:9/v1",
                Some("http://[::1]:9"),
            ),
            (
                "openai-compatible:m@http://[::1]/v1",
                Some("http://[::1]:80"),
            ),
            ("openai:gpt-4.1", None),
            ("sonnet", None),
            ("not a spec", None),
        ] {
            assert_eq!(spec_server(spec).as_deref(), origin, "{spec}");
        }
    }
}
