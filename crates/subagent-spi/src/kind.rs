use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The name of a subagent kind: `CLAUDE`, `A2A`, `MCP`, or a plugin's own.
///
/// A kind is declared once, by its [`SubagentType`](crate::SubagentType); references name the
/// kind that should resolve them. Kinds compare **ignoring ASCII case** (`a2a` equals `A2A`)
/// in equality and hashing alike, so this type is the one place where kinds are matched.
///
/// ```
/// use subagent_spi::Kind;
/// const A2A: Kind = Kind::from_static("A2A");
/// assert_eq!(A2A, Kind::new("a2a"));
/// assert_eq!(A2A.as_str(), "A2A");
/// assert!(A2A.matches("A2a"));
/// ```
#[derive(Clone)]
pub struct Kind(Cow<'static, str>);

impl Kind {
    /// A kind from a static name (usable in `const` items).
    pub const fn from_static(name: &'static str) -> Self {
        Self(Cow::Borrowed(name))
    }

    /// A kind from any name.
    pub fn new(name: impl Into<String>) -> Self {
        Self(Cow::Owned(name.into()))
    }

    /// The name as declared.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `name` names this kind, ignoring ASCII case.
    pub fn matches(&self, name: &str) -> bool {
        self.0.eq_ignore_ascii_case(name)
    }
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        self.matches(&other.0)
    }
}

impl Eq for Kind {}

impl PartialEq<str> for Kind {
    fn eq(&self, other: &str) -> bool {
        self.matches(other)
    }
}

impl PartialEq<&str> for Kind {
    fn eq(&self, other: &&str) -> bool {
        self.matches(other)
    }
}

impl Hash for Kind {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for b in self.0.bytes() {
            state.write_u8(b.to_ascii_lowercase());
        }
        state.write_u8(0xff);
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Kind {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Kind {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl From<String> for Kind {
    fn from(name: String) -> Self {
        Self::new(name)
    }
}

impl From<&Kind> for Kind {
    fn from(kind: &Kind) -> Self {
        kind.clone()
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn case_insensitive_in_eq_and_hash() {
        let mut set = HashSet::new();
        set.insert(Kind::from_static("CLAUDE"));
        assert!(set.contains(&Kind::new("claude")));
        assert!(!set.contains(&Kind::new("claudex")));
        assert_eq!(Kind::new("Mcp"), "MCP");
        assert_eq!(Kind::new("Mcp").to_string(), "Mcp");
    }

    #[test]
    fn serde_as_a_string() {
        let k: Kind = serde_json::from_str("\"a2a\"").unwrap();
        assert_eq!(k, Kind::from_static("A2A"));
        assert_eq!(serde_json::to_string(&k).unwrap(), "\"a2a\"");
    }
}
