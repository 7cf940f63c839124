//! The JSON Canonicalization Scheme (RFC 8785) over `serde_json` values, and the two card
//! payloads signed over it (A2A §8.4.1, and the form the official Python SDK 1.x computes).

use serde_json::{Map, Value};

/// RFC 8785: object members sorted by their names' UTF-16 code units, no whitespace, strings
/// with the minimal escapes, numbers as ECMAScript prints them.
pub fn canonicalize(v: &Value) -> String {
    let mut out = String::new();
    write_value(v, &mut out, Style::Jcs);
    out
}

/// How strings and object keys are written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    /// RFC 8785.
    Jcs,
    /// Python's `json.dumps(sort_keys=True, separators=(',', ':'))`: keys sorted by code
    /// point, every character outside printable ASCII escaped as `\uXXXX` (`ensure_ascii`).
    PythonAscii,
}

pub(super) fn write_value(v: &Value, out: &mut String, style: Style) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out, style),
        Value::Array(a) => {
            write_joined(out, ('[', ']'), a, |x, out| write_value(x, out, style));
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            match style {
                Style::Jcs => keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16())),
                Style::PythonAscii => keys.sort(),
            }
            write_joined(out, ('{', '}'), keys, |k, out| {
                write_string(k, out, style);
                out.push(':');
                write_value(&o[k], out, style);
            });
        }
    }
}

/// `items` written by `write` between the brackets `open_close`, separated by commas.
fn write_joined<T>(
    out: &mut String,
    (open, close): (char, char),
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(T, &mut String),
) {
    out.push(open);
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(x, out);
    }
    out.push(close);
}

fn write_string(s: &str, out: &mut String, style: Style) {
    use std::fmt::Write;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if style == Style::PythonAscii && !(' '..='~').contains(&c) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Numbers as ECMAScript's `Number.prototype.toString` prints the IEEE 754 double
/// (RFC 8785 §3.2.2.3); integers that a double holds exactly print as integers.
fn write_number(n: &serde_json::Number, out: &mut String) {
    const EXACT: u64 = 1 << 53;
    if let Some(i) = n.as_u64().filter(|i| *i <= EXACT) {
        out.push_str(&i.to_string());
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= EXACT) {
        out.push_str(&i.to_string());
    } else {
        out.push_str(&es_number(n.as_f64().unwrap_or(0.0)));
    }
}

/// ECMAScript Number::toString(x) for a finite double.
pub(super) fn es_number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        // -0 prints as 0; serde_json holds no NaN or infinity.
        return "0".into();
    }
    let neg = x < 0.0;
    // Rust's `{:e}` gives the shortest digits that round-trip, as ECMAScript requires.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    let digits = even_on_tie(x.abs(), digits, n);
    let digits = digits.as_str();
    let k = digits.len() as i64;
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if k <= n && n <= 21 {
        s.push_str(digits);
        s.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        s.push_str(&digits[..n as usize]);
        s.push('.');
        s.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        s.push_str("0.");
        s.extend(std::iter::repeat_n('0', (-n) as usize));
        s.push_str(digits);
    } else {
        s.push_str(&digits[..1]);
        if k > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        s.push(if n > 0 { '+' } else { '-' });
        s.push_str(&(n - 1).abs().to_string());
    }
    s
}

/// ECMAScript picks, among the shortest digit strings that round-trip, the one closest to the
/// exact value, and the even one on a tie; Rust's shortest form may pick the odd one of a tie.
fn even_on_tie(x: f64, digits: &str, n: i64) -> String {
    let k = digits.len();
    // The exact decimal expansion (a double has at most 767 significant digits; 40 past the
    // shortest form's length decide a tie for every double with 17 or fewer).
    let exact = format!("{:.*e}", k + 40, x);
    let (m, e) = exact.split_once('e').unwrap_or((&exact, "0"));
    if e.parse::<i64>().unwrap_or(0) + 1 != n {
        return digits.to_string();
    }
    let m: String = m.chars().filter(char::is_ascii_digit).collect();
    let (head, tail) = m.split_at(k.min(m.len()));
    let tie = tail.starts_with('5') && tail[1..].bytes().all(|b| b == b'0');
    if !tie || digits.bytes().last().is_some_and(|d| d % 2 == 0) {
        return digits.to_string();
    }
    // The two neighbours of the tie are `head` and `head + 1`; take the even one if it
    // round-trips.
    let up = {
        let mut b = head.as_bytes().to_vec();
        let mut i = b.len();
        loop {
            if i == 0 {
                return digits.to_string();
            }
            i -= 1;
            if b[i] == b'9' {
                b[i] = b'0';
            } else {
                b[i] += 1;
                break;
            }
        }
        String::from_utf8(b).unwrap_or_default()
    };
    for cand in [head, up.as_str()] {
        let even = cand.bytes().last().is_some_and(|d| d % 2 == 0);
        let back = format!("0.{cand}e{n}").parse::<f64>().ok();
        if even && back == Some(x) {
            return cand.trim_end_matches('0').to_string();
        }
    }
    digits.to_string()
}

/// Where in a card a JSON object sits, for the default-value rules of A2A §8.4.1 (which fields
/// are `REQUIRED`, which are proto `optional`, which are maps).
#[derive(Clone, Copy)]
enum Ctx {
    Card,
    Capabilities,
    Interface,
    Skill,
    Provider,
    Extension,
    SecurityRequirement,
    /// A map whose entries are kept whatever their value (the value in the given context).
    Map(MapOf),
    /// Any other message: default values (`""`, `false`, `0`, `[]`, `{}` maps) are dropped.
    Message,
}

#[derive(Clone, Copy)]
enum MapOf {
    /// Security schemes by name.
    Messages,
    /// `StringList` values (`{"list": [...]}` in 1.0, plain arrays in 0.3).
    Lists,
}

/// Fields kept even when they hold a default value: `REQUIRED` fields, and `optional` fields
/// (which are present only when set). Both card generations' names are listed.
fn keeps(ctx: Ctx, key: &str) -> bool {
    match ctx {
        Ctx::Card => matches!(
            key,
            "name"
                | "description"
                | "supportedInterfaces"
                | "version"
                | "capabilities"
                | "defaultInputModes"
                | "defaultOutputModes"
                | "skills"
                | "documentationUrl"
                | "iconUrl"
                | "provider"
                // 0.3
                | "url"
                | "protocolVersion"
                | "preferredTransport"
                | "supportsAuthenticatedExtendedCard"
        ),
        Ctx::Capabilities => matches!(
            key,
            "streaming" | "pushNotifications" | "extendedAgentCard" | "stateTransitionHistory"
        ),
        Ctx::Interface => matches!(
            key,
            "url" | "protocolBinding" | "protocolVersion" | "transport"
        ),
        Ctx::Skill => matches!(key, "id" | "name" | "description" | "tags"),
        Ctx::Provider => matches!(key, "url" | "organization"),
        Ctx::Extension => key == "uri",
        Ctx::SecurityRequirement | Ctx::Map(_) | Ctx::Message => false,
    }
}

/// The context of a field's value.
fn child(ctx: Ctx, key: &str) -> Option<Ctx> {
    Some(match (ctx, key) {
        (Ctx::Card, "capabilities") => Ctx::Capabilities,
        (Ctx::Card, "supportedInterfaces" | "additionalInterfaces") => Ctx::Interface,
        (Ctx::Card, "skills") => Ctx::Skill,
        (Ctx::Card, "provider") => Ctx::Provider,
        (Ctx::Card | Ctx::Skill, "securitySchemes") => Ctx::Map(MapOf::Messages),
        (Ctx::Card | Ctx::Skill, "securityRequirements") => Ctx::SecurityRequirement,
        (Ctx::Card | Ctx::Skill, "security") => Ctx::Map(MapOf::Lists),
        (Ctx::SecurityRequirement, "schemes") => Ctx::Map(MapOf::Lists),
        (Ctx::Capabilities, "extensions") => Ctx::Extension,
        // Free-form JSON (`google.protobuf.Struct`): taken as it is.
        (_, "params" | "metadata") => return None,
        _ => Ctx::Message,
    })
}

fn is_default(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

/// The payload A2A §8.4.1 signs, before RFC 8785: the card without `signatures`, without
/// `null`s, and without fields holding a default value unless they are `REQUIRED` or proto
/// `optional` (an `optional` field in the JSON was set). Every other JSON value is taken as is.
pub fn spec_payload(card: &Value) -> Value {
    match card {
        Value::Object(o) => {
            let mut o = o.clone();
            o.remove("signatures");
            Value::Object(strip(&o, Ctx::Card))
        }
        other => other.clone(),
    }
}

fn strip(o: &Map<String, Value>, ctx: Ctx) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in o {
        if v.is_null() {
            continue;
        }
        let keep = match ctx {
            Ctx::Map(_) => true,
            _ => keeps(ctx, k) || !is_default(v),
        };
        if !keep {
            continue;
        }
        let inner = match ctx {
            Ctx::Map(MapOf::Messages) => Some(Ctx::Message),
            Ctx::Map(MapOf::Lists) => Some(Ctx::Message),
            _ => child(ctx, k),
        };
        let v = match inner {
            Some(c) => strip_value(v, c),
            None => v.clone(),
        };
        // An empty map is a map field's default.
        if matches!((ctx, &v), (_, Value::Object(m)) if m.is_empty() && is_map_field(ctx, k)) {
            continue;
        }
        out.insert(k.clone(), v);
    }
    out
}

fn is_map_field(ctx: Ctx, key: &str) -> bool {
    matches!(child(ctx, key), Some(Ctx::Map(_))) && !matches!(ctx, Ctx::Map(_))
}

fn strip_value(v: &Value, ctx: Ctx) -> Value {
    match v {
        Value::Object(o) => Value::Object(strip(o, ctx)),
        Value::Array(a) => Value::Array(a.iter().map(|x| strip_value(x, ctx)).collect()),
        other => other.clone(),
    }
}

/// The payload the official Python SDK 1.x signs and verifies (`a2a.utils.signing`): the
/// proto's JSON form with every empty string, list and object removed, recursively. It is the
/// §8.4.1 payload with every empty value removed; the two differ when a `REQUIRED` field is empty
/// or a map entry is an empty message (a security requirement without scopes).
pub fn python_payload(card: &Value) -> Value {
    clean_empty(&spec_payload(card)).unwrap_or(Value::Object(Map::new()))
}

/// Removes empty strings, lists and objects, recursively (`None` when `v` itself empties).
fn clean_empty(v: &Value) -> Option<Value> {
    match v {
        Value::Object(o) => {
            let m: Map<String, Value> = o
                .iter()
                .filter_map(|(k, v)| clean_empty(v).map(|v| (k.clone(), v)))
                .collect();
            (!m.is_empty()).then_some(Value::Object(m))
        }
        Value::Array(a) => {
            let a: Vec<Value> = a.iter().filter_map(clean_empty).collect();
            (!a.is_empty()).then_some(Value::Array(a))
        }
        Value::String(s) if s.is_empty() => None,
        Value::Null => None,
        other => Some(other.clone()),
    }
}

/// How Python SDK releases before 1.3 serialized their payload: `json.dumps(...,
/// sort_keys=True, separators=(',', ':'))`, which escapes non-ASCII characters (unlike RFC
/// 8785; 1.3 uses RFC 8785).
pub fn python_serialize(v: &Value) -> String {
    let mut out = String::new();
    write_value(v, &mut out, Style::PythonAscii);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 8785 §3.2.2 (the sample of §3.2.3's input and output).
    #[test]
    fn rfc8785_sample() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let v: Value = serde_json::from_str(input).unwrap();
        assert_eq!(
            canonicalize(&v),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    /// RFC 8785 Appendix B: IEEE 754 values and their canonical text.
    #[test]
    fn rfc8785_appendix_b_numbers() {
        let cases: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, want) in cases {
            assert_eq!(es_number(f64::from_bits(*bits)), *want, "{bits:#x}");
        }
        // Integers a double holds exactly print as integers; larger ones as the double.
        assert_eq!(
            canonicalize(&json!([1, -7, 0, 9007199254740992u64])),
            "[1,-7,0,9007199254740992]"
        );
        assert_eq!(
            canonicalize(&json!(18446744073709551615u64)),
            "18446744073709552000"
        );
    }

    #[test]
    fn keys_sort_by_utf16_code_units() {
        // RFC 8785 §3.2.3's sorting example.
        let v: Value = serde_json::from_str(
            r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#,
        )
        .unwrap();
        let s = canonicalize(&v);
        let order: Vec<&str> = [
            "Carriage Return",
            "One",
            "Control",
            "Latin Small",
            "Euro",
            "Emoji",
            "Hebrew",
        ]
        .to_vec();
        let pos: Vec<usize> = order.iter().map(|w| s.find(w).unwrap()).collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{s}");
    }

    /// A2A §8.4.1's example of default-value removal.
    #[test]
    fn spec_example_of_default_removal() {
        let card = json!({
            "name": "Example Agent",
            "description": "",
            "capabilities": {"streaming": false, "pushNotifications": false, "extensions": []},
            "skills": []
        });
        assert_eq!(
            canonicalize(&spec_payload(&card)),
            r#"{"capabilities":{"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}"#
        );
    }

    #[test]
    fn signatures_and_defaults_go_maps_stay() {
        let card = json!({
            "name": "a", "description": "d", "version": "1",
            "signatures": [{"protected": "x", "signature": "y"}],
            "capabilities": {"extensions": [{"uri": "u", "required": false, "params": {"n": 0, "e": ""}}]},
            "securitySchemes": {},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
            "documentationUrl": null,
            "skills": [{"id": "s", "name": "n", "description": "", "tags": [], "examples": []}]
        });
        let p = spec_payload(&card);
        assert_eq!(
            canonicalize(&p),
            r#"{"capabilities":{"extensions":[{"params":{"e":"","n":0},"uri":"u"}]},"description":"d","name":"a","securityRequirements":[{"schemes":{"bearer":{}}}],"skills":[{"description":"","id":"s","name":"n","tags":[]}],"version":"1"}"#
        );
        // The Python SDK's form drops every empty value, the security requirement with it.
        assert_eq!(
            python_serialize(&python_payload(&card)),
            r#"{"capabilities":{"extensions":[{"params":{"n":0},"uri":"u"}]},"description":"d","name":"a","skills":[{"id":"s","name":"n"}],"version":"1"}"#
        );
        assert_eq!(
            python_serialize(&json!({"d": "café €"})),
            r#"{"d":"caf\u00e9 \u20ac"}"#
        );
    }
}
