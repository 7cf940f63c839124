//! The input schema a model reads for a tool: derived from the input type with `schemars`,
//! then made short. Every turn of every run carries the schemas of the tools it offers, so
//! what a schema says twice or says for Rust readers costs tokens on each turn.

use serde_json::{Map, Value, json};

/// How deep `$ref`s are inlined; deeper (recursive) ones keep their `$defs`.
const MAX_INLINE_DEPTH: usize = 8;

/// The JSON Schema of `T` as a tool's input schema, in the short form of [`compact_schema`].
pub fn input_schema<T: schemars::JsonSchema>() -> Value {
    compact_schema(
        serde_json::to_value(schemars::schema_for!(T))
            .unwrap_or_else(|_| json!({"type": "object"})),
    )
}

/// `schema` (as `schemars` derives it) in a shorter form with the same meaning for a tool's
/// input:
///
/// - no `$schema`, `title` or type-level `description` (the tool's description speaks to the
///   model; the type's rustdoc speaks to Rust readers);
/// - an optional field as its plain type: `"type": ["string", "null"]` becomes `"string"`, an
///   `anyOf` of one schema and `null` becomes that schema, and `"default": null` goes (a field
///   that is not `required` may be left out, which is what `null` stood for);
/// - integer formats (`uint64`, `int32`...) and the `"minimum": 0` that comes with unsigned ones
///   go (the input is parsed into its Rust type anyway, which refuses what does not fit);
/// - `$ref`s to `$defs` are inlined (a field's own description wins over its type's), and
///   `$defs` go once nothing refers to them;
/// - a `oneOf` of documented constants becomes one `enum` of them;
/// - `"additionalProperties": false` goes (the input's parser refuses unknown fields itself);
/// - line breaks of wrapped doc comments inside a description become spaces.
pub fn compact_schema(mut schema: Value) -> Value {
    let defs = schema
        .as_object_mut()
        .and_then(|o| o.remove("$defs"))
        .unwrap_or(Value::Null);
    if let Some(o) = schema.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
        o.remove("description");
    }
    let mut out = compact(schema, &defs, 0);
    if refers(&out)
        && let Some(o) = out.as_object_mut()
    {
        o.insert(
            "$defs".into(),
            compact(defs, &Value::Null, MAX_INLINE_DEPTH),
        );
    }
    out
}

/// True when `v` holds a `$ref` (a recursive type inlined as deep as allowed).
fn refers(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.contains_key("$ref") || o.values().any(refers),
        Value::Array(a) => a.iter().any(refers),
        _ => false,
    }
}

/// `inner` with the keys of `outer` (but `keyword`) set over its own.
fn merged(inner: &Value, outer: Map<String, Value>, keyword: &str) -> Value {
    let mut inner = inner.clone();
    if let Some(i) = inner.as_object_mut() {
        for (k, v) in outer {
            if k != keyword {
                i.insert(k, v);
            }
        }
    }
    inner
}

fn compact(v: Value, defs: &Value, depth: usize) -> Value {
    let mut o = match v {
        Value::Object(o) => o,
        Value::Array(a) => {
            return Value::Array(a.into_iter().map(|x| compact(x, defs, depth)).collect());
        }
        other => return other,
    };
    // A reference to a definition: the definition, under the field's own keys.
    if depth < MAX_INLINE_DEPTH
        && let Some(def) = o
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|name| defs.get(name))
    {
        let def = def.clone();
        return compact(merged(&def, o, "$ref"), defs, depth + 1);
    }
    // `anyOf: [X, {"type": "null"}]`: X.
    if let Some(Value::Array(branches)) = o.get("anyOf") {
        let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
        if let [a, b] = branches.as_slice()
            && (is_null(a) != is_null(b))
        {
            let other = if is_null(a) { b.clone() } else { a.clone() };
            return compact(merged(&other, o, "anyOf"), defs, depth);
        }
    }
    // `type: [T, "null"]`: T.
    if let Some(Value::Array(types)) = o.get("type") {
        let kept: Vec<&Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .collect();
        if let [one] = kept.as_slice() {
            let one = (*one).clone();
            o.insert("type".into(), one);
        }
    }
    if o.get("default") == Some(&Value::Null) {
        o.remove("default");
    }
    // Unknown fields are refused when the input is parsed; the model need not read it.
    if o.get("additionalProperties") == Some(&Value::Bool(false)) {
        o.remove("additionalProperties");
    }
    let integer_format = o.get("format").and_then(Value::as_str).is_some_and(|f| {
        [
            "uint", "int", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
        ]
        .contains(&f)
    });
    if integer_format {
        o.remove("format");
        if o.get("minimum") == Some(&json!(0)) {
            o.remove("minimum");
        }
    }
    // A `oneOf` of documented constants: one `enum`.
    if let Some(Value::Array(variants)) = o.get("oneOf")
        && !variants.is_empty()
        && variants.iter().all(|v| v.get("const").is_some())
    {
        let values: Vec<Value> = variants.iter().map(|v| v["const"].clone()).collect();
        let ty = variants[0].get("type").cloned();
        o.remove("oneOf");
        o.insert("enum".into(), Value::Array(values));
        if let Some(ty) = ty {
            o.entry("type").or_insert(ty);
        }
    }
    if let Some(Value::String(d)) = o.get_mut("description") {
        *d = unwrapped(d);
    }
    Value::Object(
        o.into_iter()
            .map(|(k, v)| {
                // `properties` maps names to schemas: each value is a schema, the names are not
                // keywords.
                let v = if k == "properties" {
                    match v {
                        Value::Object(props) => Value::Object(
                            props
                                .into_iter()
                                .map(|(name, s)| (name, compact(s, defs, depth)))
                                .collect(),
                        ),
                        other => other,
                    }
                } else if k == "description" || k == "enum" || k == "const" || k == "required" {
                    v
                } else {
                    compact(v, defs, depth)
                };
                (k, v)
            })
            .collect(),
    )
}

/// A doc comment's text with its wrapping undone: single line breaks become spaces, blank
/// lines (paragraphs) stay.
fn unwrapped(text: &str) -> String {
    text.split("\n\n")
        .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_fields_refs_and_enums_come_out_short_with_the_same_meaning() {
        let derived = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Input",
            "description": "For Rust readers.",
            "$defs": {
                "Mode": {"description": "A mode.", "oneOf": [
                    {"const": "a", "description": "A.", "type": "string"},
                    {"const": "b", "description": "B.", "type": "string"}
                ]}
            },
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "type": {"type": ["string", "null"], "default": null, "description": "Kind,\nwrapped."},
                "limit": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
                "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}], "description": "Which."},
                "depth": {"type": "integer", "minimum": 1, "format": "uint32"}
            },
            "required": ["type"]
        });
        assert_eq!(
            compact_schema(derived),
            json!({
                "type": "object",
                "properties": {
                    "type": {"type": "string", "description": "Kind, wrapped."},
                    "limit": {"type": "integer"},
                    "mode": {"type": "string", "enum": ["a", "b"], "description": "Which."},
                    "depth": {"type": "integer", "minimum": 1}
                },
                "required": ["type"]
            })
        );
    }

    #[test]
    fn a_recursive_type_keeps_its_definitions() {
        let derived = json!({
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}}
        });
        let out = compact_schema(derived);
        assert!(out.get("$defs").is_some(), "{out}");
        assert!(refers(&out));
    }
}
