//! Model specs as strings (`openai:gpt-4.1`, `ollama:qwen2.5`, ...) and building models from them.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use subagent_spi::{ChatModel, ModelError};

use crate::anthropic::AnthropicModel;
use crate::openai::{MaxTokensField, OLLAMA_DEFAULT_BASE_URL, OpenAiModel};

/// The accepted spec forms, for error messages.
pub const ACCEPTED_FORMS: &[&str] = &[
    "openai:<model>",
    "anthropic:<model>",
    "ollama:<model>",
    "openai-compatible:<model>@<base-url>",
    "sonnet",
    "opus",
    "haiku",
];

/// Built-in aliases and the Anthropic model ids they stand for.
pub fn default_aliases() -> Vec<(&'static str, &'static str)> {
    vec![
        ("sonnet", "claude-sonnet-4-5"),
        ("opus", "claude-opus-4-1"),
        ("haiku", "claude-haiku-4-5"),
    ]
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
    /// The base URL given in the spec (`openai-compatible` only).
    pub base_url: Option<String>,
    /// The sampling temperature given with `?temperature=<t>` (default: none, the provider's
    /// own default), sent with every request that sets none.
    pub temperature: Option<Temperature>,
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

/// The options after a spec's `?` (`temperature=<t>`, `&`-separated).
fn spec_options(spec: &str, query: &str) -> Result<Option<Temperature>, ModelError> {
    let mut temperature = None;
    for pair in query.split('&').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key.trim() {
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
                    &format!("unknown option `{other}` after `?` (known: temperature)"),
                ));
            }
        }
    }
    Ok(temperature)
}

fn spec_error(spec: &str, why: &str) -> ModelError {
    ModelError::Config(format!(
        "invalid model spec `{spec}`: {why}; accepted forms: {}",
        ACCEPTED_FORMS.join(", ")
    ))
}

impl ModelSpec {
    /// Parse `openai:<model>`, `anthropic:<model>`, `ollama:<model>`,
    /// `openai-compatible:<model>@<base-url>` or an alias (`sonnet`, `opus`, `haiku`), each
    /// optionally followed by `?temperature=<t>` (from 0 to [`MAX_SPEC_TEMPERATURE`]; e.g.
    /// `ollama:qwen2.5?temperature=0` for repeatable choices from a small local model).
    pub fn parse(spec: &str) -> Result<ModelSpec, ModelError> {
        let (s, temperature) = match spec.trim().split_once('?') {
            Some((s, query)) => (s.trim(), spec_options(spec, query)?),
            None => (spec.trim(), None),
        };
        if let Some((_, id)) = default_aliases().into_iter().find(|(a, _)| *a == s) {
            return Ok(ModelSpec {
                provider: Provider::Anthropic,
                model: id.to_string(),
                base_url: None,
                temperature,
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
            let url = rest[at + 1..].trim_end_matches('/').to_string();
            crate::transport::normalise_base_url("openai-compatible", &url)
                .map_err(|_| spec_error(spec, "the base URL must name a host"))?;
            (rest[..at].trim().to_string(), Some(url))
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
        })
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

    fn build_inner(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        window: Option<u64>,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let openai = match self.provider {
            Provider::OpenAi => {
                let base = var("OPENAI_BASE_URL");
                let key = var("OPENAI_API_KEY");
                if key.is_none() && base.is_none() {
                    return Err(ModelError::Config(format!(
                        "OPENAI_API_KEY is not set; `{self}` needs it (or set OPENAI_BASE_URL to a server that needs no key)"
                    )));
                }
                let b = OpenAiModel::builder().model(&self.model).api_key_opt(key);
                match base {
                    Some(url) => b.base_url(url),
                    None => b.max_tokens_field(MaxTokensField::MaxCompletionTokens),
                }
            }
            Provider::Anthropic => {
                let base = var("ANTHROPIC_BASE_URL");
                let key = var("ANTHROPIC_API_KEY");
                if key.is_none() && base.is_none() {
                    return Err(ModelError::Config(format!(
                        "ANTHROPIC_API_KEY is not set; `{self}` needs it (or set ANTHROPIC_BASE_URL to a server that needs no key)"
                    )));
                }
                let mut b = AnthropicModel::builder()
                    .model(&self.model)
                    .api_key_opt(key);
                if let Some(url) = base {
                    b = b.base_url(url);
                }
                if let Some(t) = self.temperature {
                    b = b.temperature(t.get());
                }
                return Ok(Arc::new(b.build()?));
            }
            Provider::Ollama => OpenAiModel::builder()
                .provider_name("ollama")
                .base_url(OLLAMA_DEFAULT_BASE_URL)
                .model(&self.model)
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
                    .text_tool_calls(text_tool_calls(&var, local)?)
            }
        };
        let openai = match self.temperature {
            Some(t) => openai.temperature(t.get()),
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

/// True when `url`'s host is this machine or a private network: `localhost`, a loopback,
/// private (RFC 1918), link-local or unique-local address, or a name ending `.local`,
/// `.lan`, `.internal` or `.home.arpa` (where llama.cpp, vLLM, LM Studio usually run).
pub fn is_local_url(url: &str) -> bool {
    let rest = url
        .trim()
        .strip_prefix("http://")
        .or_else(|| url.trim().strip_prefix("https://"))
        .unwrap_or("");
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return match ip {
            std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
            std::net::IpAddr::V6(v6) => {
                v6.is_loopback()
                    || (v6.segments()[0] & 0xfe00) == 0xfc00
                    || (v6.segments()[0] & 0xffc0) == 0xfe80
            }
        };
    }
    host == "localhost"
        || [".localhost", ".local", ".lan", ".internal", ".home.arpa"]
            .iter()
            .any(|s| host.ends_with(s))
}

/// The server a spec sends its requests to, as `scheme://host:port` (lower case, credentials
/// and path left out, the default port filled in), for the specs that name one
/// (`openai-compatible:MODEL@URL`); `None` for specs whose server comes from the user's
/// environment (`openai:`, `anthropic:`, `ollama:`, aliases) and for strings that are not specs.
///
/// Two specs with the same server send the same key (`OPENAI_COMPATIBLE_API_KEY`) to the same
/// place; a host uses this to allow a model named by a model or a file only on a server the
/// user configured.
pub fn spec_server(spec: &str) -> Option<String> {
    let base = ModelSpec::parse(spec).ok()?.base_url?;
    let (scheme, rest) = base.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority
        .rsplit('@')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let has_port = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']').is_some_and(|(_, p)| p.starts_with(':')),
        None => authority.contains(':'),
    };
    let authority = authority.trim_end_matches('.').to_string();
    if authority.is_empty() {
        return None;
    }
    Some(if has_port {
        format!("{scheme}://{authority}")
    } else {
        let port = if scheme == "https" { 443 } else { 80 };
        format!("{scheme}://{authority}:{port}")
    })
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider.prefix(), self.model)?;
        if let Some(url) = &self.base_url {
            write!(f, "@{url}")?;
        }
        if let Some(t) = self.temperature {
            write!(f, "?temperature={t}")?;
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
            ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
            ("o4-mini", "openai:o4-mini"),
            ("opneai:gpt-4.1", "openai:gpt-4.1"),
            ("anthropc:claude-opus-4-1", "anthropic:claude-opus-4-1"),
            ("gpt-4.1?temperature=0", "openai:gpt-4.1?temperature=0"),
        ] {
            assert_eq!(suggest_spec(given).as_deref(), Some(meant), "{given}");
        }
        for valid_or_nonsense in [
            "openai:gpt-4.1",
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
    fn local_urls() {
        for local in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:1234/v1",
            "http://[::1]:8000/v1",
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
            "http://gpu-box.lan:8000/v1",
            "http://user@127.0.0.1/v1",
        ] {
            assert!(is_local_url(local), "{local}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://8.8.8.8/v1",
            "http://127.0.0.1.example.com/v1",
            "http://localhost.evil.com/v1",
        ] {
            assert!(!is_local_url(remote), "{remote}");
        }
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
        assert_eq!(
            spec_server("openai-compatible:m@http://127.0.0.1:8080/v1").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            spec_server("openai-compatible:m@https://User:pw@Evil.Example/v1").as_deref(),
            Some("https://evil.example:443")
        );
        assert_eq!(
            spec_server("openai-compatible:m@http://[::1]:9/v1").as_deref(),
            Some("http://[::1]:9")
        );
        assert_eq!(
            spec_server("openai-compatible:m@http://[::1]/v1").as_deref(),
            Some("http://[::1]:80")
        );
        assert_eq!(spec_server("openai:gpt-4.1"), None);
        assert_eq!(spec_server("sonnet"), None);
        assert_eq!(spec_server("not a spec"), None);
    }
}
