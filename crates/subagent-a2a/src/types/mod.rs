//! A2A wire types for both protocol versions, and conversions between them.
//!
//! - [`v1`]: A2A **1.0**, the ProtoJSON form of `specification/a2a.proto` (camelCase fields,
//!   enums as their proto names such as `ROLE_USER` and `TASK_STATE_COMPLETED`, one-of fields as
//!   a single key such as `{"text": "..."}` or `{"statusUpdate": {...}}`).
//! - [`v03`]: A2A **0.3**, the JSON schema of tag `v0.3.0` (objects tagged with `kind`, state
//!   strings such as `input-required`, cards with `url` / `protocolVersion`).
//! - [`convert`]: `From` conversions both ways between the two.
//! - [`approval`]: how an approval question travels in an `input-required` status message.
//! - [`usage`]: the usage extension (a run's usage tree in task metadata).
//! - [`progress`]: the progress extension (a run's live progress events, every depth).
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

pub mod approval;
pub mod convert;
pub(crate) mod json_text;
pub mod jsonrpc;
pub mod progress;
pub mod usage;
pub mod v03;
pub mod v03_rest;
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

/// Checks that `s` is base64 the way ProtoJSON writes `bytes`: the standard (`+/`) or URL-safe
/// (`-_`) alphabet, with or without `=` padding, no whitespace. The error says what is wrong
/// and where (offsets are byte offsets into the string).
pub fn check_base64(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let body = b.iter().rposition(|c| *c != b'=').map_or(0, |i| i + 1);
    let pad = b.len() - body;
    if let Some(i) = b[..body]
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')))
    {
        let c = b[i];
        let what = if c.is_ascii_graphic() || c == b' ' {
            format!("`{}`", c as char)
        } else {
            format!("byte 0x{c:02x}")
        };
        return Err(format!(
            "not valid base64: {what} at offset {i} is not a base64 character"
        ));
    }
    if pad > 2 {
        return Err(format!(
            "not valid base64: {pad} `=` padding characters (at most 2)"
        ));
    }
    if body % 4 == 1 {
        return Err(format!(
            "not valid base64: {body} base64 characters cannot encode whole bytes"
        ));
    }
    if pad > 0 && !b.len().is_multiple_of(4) {
        return Err("not valid base64: wrong `=` padding".into());
    }
    Ok(())
}

/// The message of a `serde_json` error, made clearer where serde_json's own words mislead: an
/// unpaired UTF-16 surrogate (`"\ud800"`) is reported by serde_json as "unexpected end of hex
/// escape" or "lone leading surrogate in hex escape"; this says what is actually wrong. The
/// position (`at line L column C`) is kept.
pub fn json_error_message(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    for wrong in [
        "unexpected end of hex escape",
        "lone leading surrogate in hex escape",
    ] {
        if msg.contains(wrong) {
            return msg.replacen(
                wrong,
                "invalid \\u escape: unpaired UTF-16 surrogate (a \\uD800-\\uDBFF escape must be \
                 followed by a \\uDC00-\\uDFFF escape, and a \\uDC00-\\uDFFF escape must follow \
                 one); JSON strings must be valid Unicode",
                1,
            );
        }
    }
    msg
}

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

/// A xorshift generator for the tests' random cases (a fixed seed: the same cases every run).
#[cfg(test)]
struct XorShift(u64);

#[cfg(test)]
impl XorShift {
    fn next(&mut self) -> u64 {
        let x = &mut self.0;
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// Fewer than `max` of `pieces`, each picked at random, one after another.
    fn concat(&mut self, pieces: &[&str], max: u64) -> String {
        let n = self.next() % max;
        (0..n)
            .map(|_| pieces[(self.next() % pieces.len() as u64) as usize])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_by_major_minor() {
        for (text, want) in [
            ("1.0", Some(ProtocolVersion::V1)),
            ("1.0.1", Some(ProtocolVersion::V1)),
            ("0.3.0", Some(ProtocolVersion::V03)),
            ("0.3", Some(ProtocolVersion::V03)),
            ("0.2.5", None),
            ("banana", None),
        ] {
            assert_eq!(ProtocolVersion::parse(text), want, "{text}");
        }
    }

    #[test]
    fn base64_is_checked_strictly() {
        for ok in ["", "QQ", "QQ==", "QUI=", "QUJD", "-_-_", "+/+/", "QUJDRA"] {
            assert!(check_base64(ok).is_ok(), "{ok}");
        }
        for bad in [
            "!!!notbase64",
            "Q",
            "QQ=",
            "Q===",
            "QQ==QQ==",
            "QU JD",
            "QUJD\n",
            "Ä",
        ] {
            let e = check_base64(bad).unwrap_err();
            assert!(e.starts_with("not valid base64"), "{bad}: {e}");
        }
        assert!(
            check_base64("!!!notbase64")
                .unwrap_err()
                .contains("`!` at offset 0")
        );
    }

    #[test]
    fn unpaired_surrogates_are_named() {
        for text in [
            r#""\ud800""#,
            r#""\ud800x""#,
            r#""\ud800\u0041""#,
            r#""\udc00""#,
        ] {
            let e = serde_json::from_str::<String>(text).unwrap_err();
            let m = json_error_message(&e);
            assert!(m.contains("unpaired UTF-16 surrogate"), "{text}: {m}");
            assert!(m.contains("line 1 column"), "{text}: {m}");
        }
        let e = serde_json::from_str::<String>("[").unwrap_err();
        assert_eq!(json_error_message(&e), e.to_string());
    }
}
