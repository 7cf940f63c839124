//! Prompt caching: whether requests ask the provider to keep their prompt, and for how long.
//!
//! On by default. What each wire does with it:
//! - **Anthropic**: `cache_control` breakpoints (see [`AnthropicModel`](crate::AnthropicModel)),
//!   with the TTL chosen here.
//! - **OpenAI-compatible**: a `prompt_cache_key` per conversation (OpenAI routes a conversation
//!   to one cache), `cache_prompt: true` (llama.cpp), the conversation kept on one slot of a
//!   llama.cpp server with several (`id_slot`), `keep_alive` for Ollama (see
//!   [`OpenAiModel`](crate::OpenAiModel)).
//!
//! `Off` sends none of it. A spec chooses with `?cache=off|5m|1h`
//! ([`ModelSpec`](crate::ModelSpec)); [`PROMPT_CACHE_VAR`] sets the default for every spec.

use std::fmt;

use serde_json::{Value, json};
use subagent_spi::ModelError;

/// The variable that sets prompt caching for every spec that does not say (`off`, `5m` or
/// `1h`; also `on` = `5m`, and `0`/`false`/`no` = `off`). Unset: `5m`.
pub const PROMPT_CACHE_VAR: &str = "SUBAGENTS_PROMPT_CACHE";

/// Whether requests ask the provider to cache their prompt, and for how long Anthropic keeps
/// what they write (its TTL; the other providers choose their own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PromptCaching {
    /// No caching hints at all.
    Off,
    /// Cache, Anthropic entries kept 5 minutes from their last use (writes cost 1.25x the
    /// input rate, reads 0.1x).
    #[default]
    FiveMinutes,
    /// Cache, Anthropic entries kept one hour (writes cost 2x the input rate: worth it when a
    /// caller waits longer than 5 minutes for its children between two turns).
    OneHour,
}

impl PromptCaching {
    /// Parses `off`, `5m` or `1h` (and `on` = `5m`; `0`, `false`, `no` = `off`; `1`, `true`,
    /// `yes` = `5m`), ignoring case and surrounding space; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "off" | "0" | "false" | "no" | "none" => Self::Off,
            "5m" | "on" | "1" | "true" | "yes" => Self::FiveMinutes,
            "1h" => Self::OneHour,
            _ => return None,
        })
    }

    /// The spelling [`parse`](Self::parse) reads back: `off`, `5m`, `1h`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::FiveMinutes => "5m",
            Self::OneHour => "1h",
        }
    }

    /// True unless [`Off`](Self::Off).
    pub fn is_on(self) -> bool {
        self != Self::Off
    }

    /// The `cache_control` value of an Anthropic breakpoint, `None` when off.
    pub(crate) fn cache_control(self) -> Option<Value> {
        match self {
            Self::Off => None,
            Self::FiveMinutes => Some(json!({"type": "ephemeral"})),
            Self::OneHour => Some(json!({"type": "ephemeral", "ttl": "1h"})),
        }
    }
}

impl fmt::Display for PromptCaching {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The setting [`PROMPT_CACHE_VAR`] gives (through `var`), `None` when unset.
pub(crate) fn from_env(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<PromptCaching>, ModelError> {
    match var(PROMPT_CACHE_VAR) {
        None => Ok(None),
        Some(v) => PromptCaching::parse(&v).map(Some).ok_or_else(|| {
            ModelError::Config(format!(
                "{PROMPT_CACHE_VAR}=`{}` is none of off, 5m, 1h",
                v.trim()
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_print_back() {
        for (text, want) in [
            ("off", PromptCaching::Off),
            (" FALSE ", PromptCaching::Off),
            ("5m", PromptCaching::FiveMinutes),
            ("on", PromptCaching::FiveMinutes),
            ("1h", PromptCaching::OneHour),
        ] {
            assert_eq!(PromptCaching::parse(text), Some(want), "{text}");
            assert_eq!(PromptCaching::parse(want.as_str()), Some(want));
        }
        assert_eq!(PromptCaching::parse("2h"), None);
        assert_eq!(PromptCaching::default(), PromptCaching::FiveMinutes);
        assert_eq!(PromptCaching::Off.cache_control(), None);
        assert_eq!(
            PromptCaching::OneHour.cache_control(),
            Some(json!({"type": "ephemeral", "ttl": "1h"}))
        );
        let env = |v: &'static str| move |k: &str| (k == PROMPT_CACHE_VAR).then(|| v.to_string());
        assert_eq!(from_env(&env("1h")).unwrap(), Some(PromptCaching::OneHour));
        assert_eq!(from_env(&|_| None).unwrap(), None);
        let err = from_env(&env("forever")).unwrap_err().to_string();
        assert!(
            err.contains(PROMPT_CACHE_VAR) && err.contains("forever"),
            "{err}"
        );
    }
}
