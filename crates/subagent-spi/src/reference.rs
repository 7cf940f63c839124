use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Kind;

/// A lightweight pointer to an agent definition: where it lives, which kind of subagent it is,
/// and protocol-specific metadata.
///
/// ```
/// use subagent_spi::SubagentReference;
/// let r = SubagentReference::new("http://127.0.0.1:10001/agent", "A2A")
///     .with_metadata("auth.bearer_env", "AGENT_TOKEN");
/// assert_eq!(r.metadata("auth.bearer_env"), Some("AGENT_TOKEN"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubagentReference {
    /// Resource location: a file path, a URL, `embedded:NAME`, `stdio:COMMAND`...
    pub uri: String,
    /// The kind that should resolve it, such as `CLAUDE`, `A2A` or `MCP`.
    pub kind: Kind,
    /// Protocol-specific settings (auth, timeouts, tool names...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

impl SubagentReference {
    /// A reference with no metadata.
    pub fn new(uri: impl Into<String>, kind: impl Into<Kind>) -> Self {
        Self {
            uri: uri.into(),
            kind: kind.into(),
            metadata: BTreeMap::new(),
        }
    }

    /// A reference with the given metadata.
    pub fn with_all_metadata(
        uri: impl Into<String>,
        kind: impl Into<Kind>,
        metadata: BTreeMap<String, String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            kind: kind.into(),
            metadata,
        }
    }

    /// Adds one metadata entry (builder style).
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Looks up one metadata entry.
    pub fn metadata(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).map(String::as_str)
    }

    /// True when `kind` matches this reference's kind, ignoring ASCII case.
    pub fn is_kind(&self, kind: impl AsRef<str>) -> bool {
        self.kind.matches(kind.as_ref())
    }
}

impl fmt::Display for SubagentReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.uri, self.kind)
    }
}
