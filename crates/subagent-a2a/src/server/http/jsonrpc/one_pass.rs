//! The usual JSON-RPC request, a 1.0 send (`SendMessage` / `SendStreamingMessage`) whose
//! `method` comes before its `params`, read in one pass: the params straight into the typed
//! request, not first skipped as raw text and then parsed again.
//!
//! Only a shortcut: anything else (another method, `params` before `method`, a duplicate or
//! malformed member, params that do not parse) reads as "not taken", and the general two-pass
//! reader in [`super::jsonrpc`] answers exactly as before (its error split, parse error vs.
//! invalid request vs. invalid params, needs the raw pass). What this reader accepts, the
//! general one accepts with the same envelope and the same typed params.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::{Head, JsonStrOrOther};
use crate::types::json_text::identifier;
use crate::types::v1;

/// A send read in one pass: its envelope (with no raw `params`) and its typed params.
pub(super) struct OneSend<'a> {
    pub(super) head: Head<'a>,
    pub(super) request: v1::SendMessageRequest,
}

/// Reads `body` as a 1.0 send in one pass; `None` when the general reader must take it.
pub(super) fn read(body: &[u8]) -> Option<OneSend<'_>> {
    serde_json::from_slice(body).ok()
}

/// The envelope's members (anything else is skipped).
enum Key {
    Jsonrpc,
    Id,
    Method,
    Params,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        identifier(d, "a member name", |v| match v {
            "jsonrpc" => Key::Jsonrpc,
            "id" => Key::Id,
            "method" => Key::Method,
            "params" => Key::Params,
            _ => Key::Other,
        })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for OneSend<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = OneSend<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC send request")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OneSend<'a>, A::Error> {
                let not_taken = || de::Error::custom("not taken");
                let mut jsonrpc: Option<Option<JsonStrOrOther<'a>>> = None;
                let mut id: Option<Value> = None;
                let mut method: Option<Option<JsonStrOrOther<'a>>> = None;
                let mut request: Option<v1::SendMessageRequest> = None;
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Jsonrpc if jsonrpc.is_none() => jsonrpc = Some(map.next_value()?),
                        Key::Id if id.is_none() => id = Some(map.next_value()?),
                        Key::Method if method.is_none() => method = Some(map.next_value()?),
                        Key::Params if request.is_none() => {
                            let send = method
                                .as_ref()
                                .and_then(|m| m.as_ref())
                                .and_then(JsonStrOrOther::as_str)
                                .is_some_and(|m| {
                                    m == v1::methods::SEND_MESSAGE
                                        || m == v1::methods::SEND_STREAMING_MESSAGE
                                });
                            if !send {
                                return Err(not_taken());
                            }
                            request = Some(map.next_value()?);
                        }
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                        // A duplicate member: the general reader names it.
                        _ => return Err(not_taken()),
                    }
                }
                let request = request.ok_or_else(not_taken)?;
                Ok(OneSend {
                    head: Head::new(jsonrpc.flatten(), id, method.flatten()),
                    request,
                })
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method_of(s: &OneSend<'_>) -> Option<String> {
        s.head.method_str().map(str::to_owned)
    }

    #[test]
    fn a_send_with_method_before_params_is_read_in_one_pass() {
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"SendMessage","x":[1,{"y":2}],"params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
        let s = read(body).expect("taken");
        assert_eq!(method_of(&s).as_deref(), Some("SendMessage"));
        assert_eq!(s.request.message.message_id, "m");
    }

    #[test]
    fn anything_else_is_left_to_the_general_reader() {
        let params = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
        for body in [
            // params before method
            format!(r#"{{"jsonrpc":"2.0","id":1,"params":{params},"method":"SendMessage"}}"#),
            // another method
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{params}}}"#),
            // the 0.3 send (converted by the general path)
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{params}}}"#),
            // duplicate members
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"SendMessage","params":{params}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{params},"params":{params}}}"#
            ),
            // no params, null params, params of the wrong shape
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage"}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":null}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":3}}"#.to_string(),
            // trailing bytes, not an object
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{params}}} x"#),
            "3".to_string(),
        ] {
            assert!(read(body.as_bytes()).is_none(), "taken: {body}");
        }
    }
}
