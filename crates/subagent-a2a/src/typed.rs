//! Typed results over A2A: how a caller asks for a JSON value valid under a schema, and where
//! the value comes back.
//!
//! The request message carries one extra **data part** `{"output_schema": SCHEMA}` (any
//! protocol version has data parts; a peer that does not know the convention sees a data part
//! it may ignore). The result is the **last data part** of the reply or of the task's
//! artifacts; our server answers with an artifact `result` holding one data part. The caller's
//! `Task` tool checks the value against the schema whatever the peer.

use serde_json::Value;

use crate::types::v1;

/// The key of the data part that carries the output schema.
pub const OUTPUT_SCHEMA_KEY: &str = "output_schema";

/// The data part asking for a result valid under `schema`.
pub fn schema_part(schema: &Value) -> v1::Part {
    let mut data = serde_json::Map::new();
    data.insert(OUTPUT_SCHEMA_KEY.to_string(), schema.clone());
    v1::Part::data(Value::Object(data))
}

/// The schema a part carries, when it is a schema part (a data part with the one key
/// [`OUTPUT_SCHEMA_KEY`]).
pub fn schema_in(part: &v1::Part) -> Option<&Value> {
    match &part.content {
        v1::PartContent::Data(Value::Object(m)) if m.len() == 1 => m.get(OUTPUT_SCHEMA_KEY),
        _ => None,
    }
}

/// The structured result among `parts`: the last data part.
pub fn result_data<'a>(parts: impl IntoIterator<Item = &'a v1::Part>) -> Option<Value> {
    parts
        .into_iter()
        .filter_map(|p| match &p.content {
            v1::PartContent::Data(v) => Some(v),
            _ => None,
        })
        .last()
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_schema_part_round_trips_and_results_are_the_last_data_part() {
        let p = schema_part(&json!({"type": "object"}));
        assert_eq!(schema_in(&p), Some(&json!({"type": "object"})));
        assert_eq!(schema_in(&v1::Part::data(json!({"other": 1}))), None);
        assert_eq!(schema_in(&v1::Part::text("x")), None);
        let parts = [
            v1::Part::data(json!(1)),
            v1::Part::text("t"),
            v1::Part::data(json!({"a": 2})),
        ];
        assert_eq!(result_data(&parts), Some(json!({"a": 2})));
        assert_eq!(result_data(&[v1::Part::text("t")]), None);
    }
}
