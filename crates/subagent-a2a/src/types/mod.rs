//! A2A wire types for both protocol versions, and conversions between them.
//!
//! - [`v1`]: A2A **1.0**, the ProtoJSON form of `specification/a2a.proto` (camelCase fields,
//!   enums as their proto names such as `ROLE_USER` and `TASK_STATE_COMPLETED`, one-of fields as
//!   a single key such as `{"text": "..."}` or `{"statusUpdate": {...}}`).
//! - [`v03`]: A2A **0.3**, the JSON schema of tag `v0.3.0` (objects tagged with `kind`, state
//!   strings such as `input-required`, cards with `url` / `protocolVersion`).
//! - [`convert`]: `From` conversions both ways between the two.
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope (built on `jsonrpsee-types`) and the A2A error codes.
//!
//! Optional fields are `Option`s or empty collections skipped when serializing, so a value
//! serializes to exactly the properties that are set: a 1.0 agent card built here validates
//! against a schema that forbids additional properties. Input is lenient where peers differ:
//! unknown fields are ignored, 1.0 enums accept their number as well as their name, and a
//! missing `kind` on a standalone 0.3 object defaults to its only value.
//!
//! One way to serve both versions from these types: read the body as
//! `jsonrpc::Request<serde_json::Value>`, pick the version from the method name
//! ([`v1::methods`] are PascalCase, [`v03::methods`] contain a `/`) and the `A2A-Version`
//! header, parse `params` into the version's request type, convert 0.3 requests to 1.0 with
//! `From` (e.g. `v1::SendMessageRequest::from(v03::MessageSendParams)`), run on 1.0 types, and
//! answer in the caller's version (`v03::Event::from(v1::StreamResponse)`,
//! `v03::Task::from(v1::Task)`) inside `jsonrpc::Response::success`, or
//! `jsonrpc::Response::error` with [`jsonrpc::a2a_error`] and a code from [`jsonrpc::codes`].

pub mod convert;
pub mod jsonrpc;
pub mod v03;
pub mod v1;

/// The JSON object type used for `metadata`, `params` and data parts.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Defines a protobuf enum serialized the ProtoJSON way: as its name, accepting the name or the
/// number on input.
macro_rules! proto_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = ($num:literal, $wire:literal), )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in proto number order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The ProtoJSON name (e.g. `TASK_STATE_WORKING`).
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire,)+ }
            }

            /// The proto number.
            pub fn number(self) -> i32 {
                match self { $($name::$variant => $num,)+ }
            }

            /// Looks a value up by its ProtoJSON name.
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($wire => Some($name::$variant),)+ _ => None }
            }

            /// Looks a value up by its proto number.
            pub fn from_number(n: i64) -> Option<Self> {
                match n { $($num => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        write!(f, "a {} name or number", stringify!($name))
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::from_name(v).ok_or_else(|| {
                            E::custom(format!("unknown {} `{}`", stringify!($name), v))
                        })
                    }
                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$name, E> {
                        $name::from_number(v).ok_or_else(|| {
                            E::custom(format!("unknown {} number {}", stringify!($name), v))
                        })
                    }
                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$name, E> {
                        let n = i64::try_from(v).map_err(|_| {
                            E::custom(format!("unknown {} number {}", stringify!($name), v))
                        })?;
                        self.visit_i64(n)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}
pub(crate) use proto_enum;

/// The protocol version a peer speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// A2A 0.3 (kind-tagged JSON, slash method names).
    V03,
    /// A2A 1.0 (ProtoJSON, PascalCase method names, `A2A-Version: 1.0`).
    V1,
}

impl ProtocolVersion {
    /// The value of the `A2A-Version` header and of `protocolVersion` fields.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V03 => "0.3",
            ProtocolVersion::V1 => "1.0",
        }
    }

    /// Parses a version string such as `1.0`, `1.0.1`, `0.3` or `0.3.0` (major.minor decide).
    pub fn parse(s: &str) -> Option<Self> {
        let mut it = s.trim().trim_start_matches(['v', 'V']).split('.');
        let major = it.next()?.parse::<u32>().ok()?;
        let minor = it.next().unwrap_or("0").parse::<u32>().ok()?;
        match (major, minor) {
            (1, _) => Some(ProtocolVersion::V1),
            (0, 3) => Some(ProtocolVersion::V03),
            _ => None,
        }
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name of the header carrying the protocol version.
pub const VERSION_HEADER: &str = "A2A-Version";

/// Well-known protocol binding names used in agent cards.
pub mod binding {
    /// JSON-RPC 2.0 over HTTP, streaming over SSE.
    pub const JSONRPC: &str = "JSONRPC";
    /// The HTTP+JSON (REST) binding.
    pub const HTTP_JSON: &str = "HTTP+JSON";
    /// gRPC.
    pub const GRPC: &str = "GRPC";
}

/// The well-known path of the agent card (1.0, and 0.3 from 0.3.0 on).
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// The older well-known path of the agent card (0.2 / early 0.3 peers).
pub const LEGACY_AGENT_CARD_PATH: &str = "/.well-known/agent.json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_by_major_minor() {
        assert_eq!(ProtocolVersion::parse("1.0"), Some(ProtocolVersion::V1));
        assert_eq!(ProtocolVersion::parse("1.0.1"), Some(ProtocolVersion::V1));
        assert_eq!(ProtocolVersion::parse("0.3.0"), Some(ProtocolVersion::V03));
        assert_eq!(ProtocolVersion::parse("0.3"), Some(ProtocolVersion::V03));
        assert_eq!(ProtocolVersion::parse("0.2.5"), None);
        assert_eq!(ProtocolVersion::parse("banana"), None);
    }
}
