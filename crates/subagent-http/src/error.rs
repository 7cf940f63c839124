//! The crate's error: a reference that does not describe a usable agent.

/// Why a reference (or its JSON form) does not describe a usable `HTTP` agent. Resolving wraps
/// it in [`SubagentError::Resolution`](subagent_spi::SubagentError) with the reference's URI.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpKindError {
    /// A metadata key (or JSON field) is missing or has a value that cannot be used.
    #[error("`{key}`: {message}")]
    Invalid {
        /// The key.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// A metadata key (or JSON field) this kind does not know (a typo would otherwise be
    /// ignored, e.g. an `auth_env` spelled wrong sends no credential).
    #[error("unknown key `{key}` (known: {})", crate::KEYS.join(", "))]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// The environment variable named by `auth_env` is not set (its value is never shown).
    #[error("`auth_env`: the environment variable `{var}` is not set")]
    MissingCredential {
        /// The variable's name.
        var: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

impl HttpKindError {
    pub(crate) fn invalid(key: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.to_string(),
            message: message.into(),
        }
    }
}
