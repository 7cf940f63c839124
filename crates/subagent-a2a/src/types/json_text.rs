//! Reads a JSON string field (`null` as absent) into an exactly sized `String` without
//! serde_json's scratch copy.
//!
//! serde_json unescapes a string with escapes into a scratch buffer and hands the visitor a
//! `&str` of it, which the visitor copies again: a large text part held the request body, the
//! scratch buffer and the `String` at once (3x its size). [`OptString`] asks serde_json for the
//! value's raw JSON instead (the `RawValue` protocol): borrowed from the body when the input is
//! a slice or a `&str`, so the string is unescaped straight into a `String` of its exact
//! length (one pass to size it, one to write it), and the body and the result are the only
//! copies. Other inputs keep working: `serde_json::from_reader` and `from_value` hand over the
//! raw JSON as an owned `String` (unescaped the same way), any other deserializer (serde's
//! buffered content of an untagged or flattened type) reads the string as usual.
//!
//! The result is the same as serde_json's own decoding: the same escapes, surrogate pairs
//! combined, a lone surrogate refused with serde_json's wording; a value that is not a string
//! or `null` is refused as `invalid type: ..., expected a string`.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Unexpected, Visitor};

/// The name under which serde_json offers a value's raw JSON (`serde_json::value::RawValue`'s
/// newtype token). If a serde_json release renamed it, serde_json would treat the request as
/// a plain newtype and the string would be read the ordinary way (the unit test
/// `raw_token_matches_serde_json` catches the rename).
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// Reads `Option<String>` (JSON `null` is `None`) with at most one copy of the string.
pub(crate) struct OptString;

impl<'de> DeserializeSeed<'de> for OptString {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_newtype_struct(RAW_TOKEN, RawOrPlain)
    }
}

/// `serde_json`'s raw value arrives as a one-entry map keyed by [`RAW_TOKEN`]; any other
/// deserializer calls `visit_newtype_struct` (or visits the value itself).
struct RawOrPlain;

impl<'de> Visitor<'de> for RawOrPlain {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        <Option<String> as serde::Deserialize>::deserialize(d)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        match map.next_key::<RawKey>()? {
            Some(RawKey(true)) => map.next_value_seed(RawJson),
            _ => Err(de::Error::invalid_type(Unexpected::Map, &self)),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        <String as serde::Deserialize>::deserialize(d).map(Some)
    }
}

/// The key of serde_json's raw-value map: `true` when it is [`RAW_TOKEN`].
struct RawKey(bool);

impl<'de> serde::Deserialize<'de> for RawKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        identifier(d, "a raw JSON value", |v| RawKey(v == RAW_TOKEN))
    }
}

/// Reads a map key or other identifier as `pick` names it, without copying it: a key type's
/// `Deserialize` in one line (`expecting` is the error's "expected ..." wording).
pub(crate) fn identifier<'de, D: Deserializer<'de>, T>(
    d: D,
    expecting: &'static str,
    pick: fn(&str) -> T,
) -> Result<T, D::Error> {
    struct V<T> {
        expecting: &'static str,
        pick: fn(&str) -> T,
    }
    impl<T> Visitor<'_> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            Ok((self.pick)(v))
        }
    }
    d.deserialize_identifier(V { expecting, pick })
}

/// The raw JSON text of the value, borrowed (slice and `&str` input) or owned.
struct RawJson;

impl<'de> DeserializeSeed<'de> for RawJson {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for RawJson {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a raw JSON value")
    }

    fn visit_str<E: de::Error>(self, raw: &str) -> Result<Self::Value, E> {
        decode(raw)
    }
}

/// Decodes the raw JSON of a string (or `null`); anything else is the usual type error.
fn decode<E: de::Error>(raw: &str) -> Result<Option<String>, E> {
    let raw = raw.trim_matches([' ', '\t', '\n', '\r']);
    let bytes = raw.as_bytes();
    if raw == "null" {
        return Ok(None);
    }
    if bytes.len() < 2 || bytes[0] != b'"' || bytes[bytes.len() - 1] != b'"' {
        return Err(not_a_string(raw));
    }
    let inner = &raw[1..raw.len() - 1];
    let len = unescaped_len(inner.as_bytes())?;
    // Every escape is longer than what it stands for: the same length means none.
    if len == inner.len() {
        return Ok(Some(inner.to_owned()));
    }
    let mut out = String::with_capacity(len);
    unescape_into(inner, &mut out)?;
    debug_assert_eq!(out.len(), len);
    Ok(Some(out))
}

/// The error for raw JSON that is not a string: `invalid type: <what>, expected a string`.
fn not_a_string<E: de::Error>(raw: &str) -> E {
    /// What kind of JSON value `raw` is, as serde names it.
    struct Kind;
    impl<'de> Visitor<'de> for Kind {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
            Ok(Unexpected::Bool(v).to_string())
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
            Ok(Unexpected::Signed(v).to_string())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
            Ok(Unexpected::Unsigned(v).to_string())
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
            Ok(Unexpected::Float(v).to_string())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<String, A::Error> {
            while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Unexpected::Map.to_string())
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<String, A::Error> {
            while s.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Unexpected::Seq.to_string())
        }
    }
    struct Named(String);
    impl<'de> serde::Deserialize<'de> for Named {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(Kind).map(Named)
        }
    }
    let what = serde_json::from_str::<Named>(raw)
        .map(|n| n.0)
        .unwrap_or_else(|_| "a JSON value".to_owned());
    E::custom(format_args!("invalid type: {what}, expected a string"))
}

/// serde_json's wording for a surrogate without its pair (a trailing one first, too).
const LONE_SURROGATE: &str = "lone leading surrogate in hex escape";
/// serde_json's wording for a leading surrogate not followed by `\u`.
const UNPAIRED: &str = "unexpected end of hex escape";

/// The length in bytes of `s` (a JSON string's content, without quotes) once unescaped;
/// checks every escape.
fn unescaped_len<E: de::Error>(s: &[u8]) -> Result<usize, E> {
    let mut len = 0;
    let mut i = 0;
    while let Some(at) = s[i..].iter().position(|&b| b == b'\\') {
        len += at;
        i += at;
        let (n, used) = escape(s, i)?;
        len += n.len_utf8();
        i += used;
    }
    Ok(len + s.len() - i)
}

/// Appends the unescaped `s` (checked by [`unescaped_len`]) to `out`.
fn unescape_into<E: de::Error>(s: &str, out: &mut String) -> Result<(), E> {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(at) = b[i..].iter().position(|&c| c == b'\\') {
        // `\` is ASCII, so `i + at` is a char boundary.
        out.push_str(&s[i..i + at]);
        i += at;
        let (c, used) = escape(b, i)?;
        out.push(c);
        i += used;
    }
    out.push_str(&s[i..]);
    Ok(())
}

/// The character of the escape at `s[i]` (a `\`) and how many bytes it takes (a surrogate
/// pair takes both of its `\u` escapes).
fn escape<E: de::Error>(s: &[u8], i: usize) -> Result<(char, usize), E> {
    let c = match s.get(i + 1) {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => return unicode_escape(s, i),
        _ => return Err(E::custom("invalid escape")),
    };
    Ok((c, 2))
}

/// A `\uXXXX` escape at `s[i]`, with the trailing half of a surrogate pair.
fn unicode_escape<E: de::Error>(s: &[u8], i: usize) -> Result<(char, usize), E> {
    let n = hex4(s, i + 2)?;
    match n {
        0xDC00..=0xDFFF => Err(E::custom(LONE_SURROGATE)),
        0xD800..=0xDBFF => {
            if s.get(i + 6) != Some(&b'\\') || s.get(i + 7) != Some(&b'u') {
                return Err(E::custom(UNPAIRED));
            }
            let n2 = hex4(s, i + 8)?;
            if !(0xDC00..=0xDFFF).contains(&n2) {
                return Err(E::custom(LONE_SURROGATE));
            }
            let c = (((n - 0xD800) << 10) | (n2 - 0xDC00)) + 0x1_0000;
            char::from_u32(c)
                .map(|c| (c, 12))
                .ok_or_else(|| E::custom(LONE_SURROGATE))
        }
        _ => char::from_u32(n)
            .map(|c| (c, 6))
            .ok_or_else(|| E::custom("invalid escape")),
    }
}

/// The four hex digits at `s[at..at + 4]`.
fn hex4<E: de::Error>(s: &[u8], at: usize) -> Result<u32, E> {
    let digits = s
        .get(at..at + 4)
        .ok_or_else(|| E::custom("EOF while parsing a string"))?;
    digits.iter().try_fold(0u32, |n, &d| {
        let v = (d as char)
            .to_digit(16)
            .ok_or_else(|| E::custom("invalid escape"))?;
        Ok(n << 4 | v)
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde::de::DeserializeSeed;

    use super::{OptString, RAW_TOKEN};

    /// `{"t": <json>}` read with [`OptString`].
    #[derive(Debug)]
    struct Field(Option<String>);

    impl<'de> Deserialize<'de> for Field {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Field;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> Result<Field, A::Error> {
                    let mut out = None;
                    while let Some(k) = m.next_key::<String>()? {
                        assert_eq!(k, "t");
                        out = m.next_value_seed(OptString)?;
                    }
                    Ok(Field(out))
                }
            }
            d.deserialize_map(V)
        }
    }

    /// serde_json's own decoding of `{"t": <json>}` into an `Option<String>` field.
    fn reference(json: &str) -> Result<Option<String>, String> {
        #[derive(Deserialize)]
        struct Ref {
            t: Option<String>,
        }
        serde_json::from_str::<Ref>(&format!(r#"{{"t": {json}}}"#))
            .map(|r| r.t)
            .map_err(|e| e.to_string())
    }

    /// Every way in: a slice, a `&str`, a reader, a `Value`.
    fn ours(json: &str) -> Vec<(&'static str, Result<Option<String>, String>)> {
        let doc = format!(r#"{{"t": {json}}}"#);
        let mut out = vec![
            (
                "slice",
                serde_json::from_slice::<Field>(doc.as_bytes()).map(|f| f.0),
            ),
            ("str", serde_json::from_str::<Field>(&doc).map(|f| f.0)),
            (
                "reader",
                serde_json::from_reader::<_, Field>(doc.as_bytes()).map(|f| f.0),
            ),
        ];
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&doc) {
            out.push(("value", serde_json::from_value::<Field>(v).map(|f| f.0)));
        }
        out.into_iter()
            .map(|(how, r)| (how, r.map_err(|e| e.to_string())))
            .collect()
    }

    /// Same value as serde_json, or an error when serde_json errs; with `wording`, serde_json's
    /// wording too, less the position (ours is reported where the string ends). A string with
    /// two defects may be refused for the other one: serde_json checks the escapes' syntax
    /// over the whole string before this module checks surrogate pairs.
    fn check(json: &str, wording: bool) {
        let want = reference(json);
        for (how, got) in ours(json) {
            match (&want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{how}: {json:?}"),
                (Err(w), Err(g)) => {
                    let head = |s: &str| s.split(" at line").next().unwrap_or(s).to_owned();
                    if wording {
                        assert_eq!(head(w), head(g), "{how}: {json:?}");
                    }
                }
                _ => panic!("{how}: {json:?}: serde_json {want:?}, ours {got:?}"),
            }
        }
    }

    #[test]
    fn decodes_like_serde_json() {
        for json in [
            r#""""#,
            r#""plain text""#,
            r#""é ü 中文 😀""#,
            r#""\"\\\/\b\f\n\r\t""#,
            r#""a\u0041\u00e9\u4e2d\uffff""#,
            r#""\ud83d\ude00 pair""#,
            r#""\uD83D\uDE00 upper""#,
            r#""\u0000 nul""#,
            r#""ends with escape\n""#,
            "null",
            r#""lone trailing \udc00""#,
            r#""lone leading \ud83d end""#,
            r#""lone leading \ud83d\n""#,
            r#""leading then bmp \ud83d\u0041""#,
            r#""two leading \ud83d\ud83d""#,
            r#""bad \x escape""#,
            r#""bad \u12g4 hex""#,
            r#""short \u12""#,
            "\"raw\u{1}control\"",
            "42",
            "-7",
            "1.5",
            "true",
            "[1, 2]",
            r#"{"a": 1}"#,
        ] {
            check(json, true);
        }
    }

    /// Random strings over an alphabet of escapes, halves of surrogate pairs and multi-byte
    /// characters, against serde_json (a fixed xorshift seed: the same cases every run).
    #[test]
    fn random_strings_decode_like_serde_json() {
        let pieces = [
            "a", "zz", "é", "😀", "\\n", "\\\"", "\\\\", "\\/", "\\t", "\\u0041", "\\u00E9",
            "\\ud83d", "\\ude00", "\\uDBFF", "\\uDFFF", "\\u", "12", "\\q", "\\",
        ];
        let mut rng = crate::types::XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..3000 {
            let s = format!("\"{}\"", rng.concat(&pieces, 8));
            check(&s, false);
        }
    }

    #[test]
    fn an_unescaped_string_is_sized_exactly() {
        let got = serde_json::from_slice::<Field>(br#"{"t": "a\nb\u00e9\ud83d\ude00"}"#)
            .unwrap()
            .0
            .unwrap();
        assert_eq!(got, "a\nbé😀");
        assert_eq!(got.capacity(), got.len());
    }

    #[test]
    fn other_deserializers_read_the_string_as_usual() {
        // serde's buffered content (an untagged enum) never sees the raw-value request.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            F(Field),
        }
        let Either::F(f) = serde_json::from_str::<Either>(r#"{"t": "x\ny"}"#).unwrap();
        assert_eq!(f.0.as_deref(), Some("x\ny"));
        let d = serde::de::value::StrDeserializer::<serde::de::value::Error>::new("plain");
        assert_eq!(OptString.deserialize(d).unwrap().as_deref(), Some("plain"));
    }

    /// serde_json still offers raw values under the name this module asks for.
    #[test]
    fn raw_token_matches_serde_json() {
        struct Capture;
        #[derive(Debug)]
        struct Name(&'static str);
        impl std::fmt::Display for Name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for Name {}
        impl serde::de::Error for Name {
            fn custom<T: std::fmt::Display>(_: T) -> Self {
                Name("")
            }
        }
        impl<'de> serde::Deserializer<'de> for Capture {
            type Error = Name;
            fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Name> {
                Err(Name(""))
            }
            fn deserialize_newtype_struct<V: serde::de::Visitor<'de>>(
                self,
                name: &'static str,
                _: V,
            ) -> Result<V::Value, Name> {
                Err(Name(name))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct seq tuple tuple_struct map struct enum
                identifier ignored_any
            }
        }
        let err = <&serde_json::value::RawValue as Deserialize>::deserialize(Capture).unwrap_err();
        assert_eq!(err.0, RAW_TOKEN);
    }
}
