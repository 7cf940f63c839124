//! The usage extension: how our server reports what a run used (tokens, turns, model,
//! duration, and the same for every run it delegated to) and how our client reads it back into
//! a [`UsageNode`] tree.
//!
//! A server declares the extension in its card (`capabilities.extensions`, URI
//! [`USAGE_EXTENSION_URI`], not required) and puts the report in the `metadata` of the task and
//! of the final status update, under that URI as key. Clients that do not know the extension
//! ignore the key (metadata is free-form in 1.0 and 0.3). The JSON shape (camelCase, as A2A):
//!
//! ```json
//! {"agent": "researcher", "kind": "CLAUDE", "taskId": "…", "status": "completed",
//!  "inputTokens": 1200, "outputTokens": 300, "cacheReadTokens": 0, "cacheCreationTokens": 0,
//!  "turns": 3, "durationMs": 4100, "model": "gpt-4.1",
//!  "children": [{"agent": "leaf", "kind": "CLAUDE", "status": "completed", "inputTokens": 50,
//!                "outputTokens": 20, "turns": 1, "durationMs": 900}]}
//! ```
//!
//! Every number is a non-negative integer (absent = 0); `status` is one of the SPI's
//! [`TaskStatus`] names; unknown keys are ignored.
//!
//! A report comes from a stranger, so reading it is bounded: at most [`MAX_USAGE_NODES`]
//! nodes, [`MAX_USAGE_DEPTH`] levels, [`MAX_USAGE_TEXT`] bytes per text, and per node at most
//! [`MAX_USAGE_TOKENS`] tokens of each sort and [`MAX_USAGE_TURNS`] turns. A report breaking
//! a bound is refused by [`usage_from_metadata`] with a [`UsageReportError`] saying where;
//! [`read_usage_report`] keeps its well-formed values, and our client counts them, and the run
//! as at least the configured estimate for a broken report
//! ([`BudgetLimits::remote_unreported_tokens`](subagent_spi::BudgetLimits), marked
//! `estimated` in the usage tree), so a peer cannot zero its spend by breaking its report. Our server writes within the same bounds,
//! folding the tokens of runs below the cut into their nearest reported ancestor, so totals
//! survive the cut.

use serde_json::Value;
use subagent_spi::{TaskStatus, Usage, UsageNode};

use super::JsonObject;
use super::v1;

/// The extension's URI: the card declares it, and task metadata holds the report under it.
pub const USAGE_EXTENSION_URI: &str = "https://subagents.dev/a2a/ext/usage/v1";

/// The most nodes a usage report may hold.
pub const MAX_USAGE_NODES: usize = 256;

/// The most levels a usage report may nest (the root is level 1).
pub const MAX_USAGE_DEPTH: usize = 16;

/// The longest text (agent, kind, model, task id) in a usage report, in bytes.
pub const MAX_USAGE_TEXT: usize = 256;

/// The most tokens of each sort one node may report (a million million).
pub const MAX_USAGE_TOKENS: u64 = 1_000_000_000_000;

/// The most turns one node may report.
pub const MAX_USAGE_TURNS: u64 = 1_000_000;

/// The longest duration one node may report: 30 days, in milliseconds.
pub const MAX_USAGE_DURATION_MS: u64 = 30 * 24 * 3600 * 1000;

/// Why a usage report was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UsageReportError {
    /// More than [`MAX_USAGE_NODES`] nodes.
    #[error("the usage report has more than {limit} nodes")]
    TooManyNodes {
        /// The bound.
        limit: usize,
    },
    /// Nested deeper than [`MAX_USAGE_DEPTH`] levels.
    #[error("the usage report nests deeper than {limit} levels")]
    TooDeep {
        /// The bound.
        limit: usize,
    },
    /// A value that is missing, of the wrong type, or out of bounds.
    #[error("usage report {at}: {reason}")]
    Invalid {
        /// Where: `root`, `root.children[2]`, `root.children[0].inputTokens`...
        at: String,
        /// What is wrong.
        reason: String,
    },
}

/// The card entry declaring the extension (not required: clients may ignore it).
pub fn usage_extension() -> v1::AgentExtension {
    v1::AgentExtension {
        uri: USAGE_EXTENSION_URI.to_string(),
        description: Some(
            "Reports the run's usage (tokens, turns, model, duration and its delegated runs) \
             in the task's metadata under this URI."
                .to_string(),
        ),
        required: false,
        params: None,
    }
}

/// The metadata object holding `node` as a usage report, within the bounds above (runs below
/// the cut are folded into their nearest kept ancestor; long texts are shortened).
pub fn usage_to_metadata(node: &UsageNode) -> JsonObject {
    let mut left = MAX_USAGE_NODES;
    let pruned = prune(node, 1, &mut left);
    let mut m = JsonObject::new();
    m.insert(USAGE_EXTENSION_URI.to_string(), to_json(&pruned));
    m
}

/// Reads the usage report from `metadata`: `None` when there is none, else the tree or why it
/// was refused (the first problem: a report with any malformed value is refused whole here;
/// [`read_usage_report`] keeps its well-formed parts).
pub fn usage_from_metadata(
    metadata: Option<&JsonObject>,
) -> Option<Result<UsageNode, UsageReportError>> {
    let report = read_usage_report(metadata)?;
    Some(match (report.node, report.problems.into_iter().next()) {
        (_, Some(e)) => Err(e),
        (Some(node), None) => Ok(node),
        (None, None) => Err(invalid("root", "not an object")),
    })
}

/// A usage report as read by [`read_usage_report`]: its well-formed parts and what was wrong
/// with the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UsageReport {
    /// The tree of the well-formed parts: a malformed value counts as absent (0, no text), a
    /// malformed child is left out. `None` when the report is refused whole (the root is not
    /// an object, or the report breaks the node or depth bound).
    pub node: Option<UsageNode>,
    /// What was malformed, in reading order (empty for a clean report).
    pub problems: Vec<UsageReportError>,
}

impl UsageReport {
    /// True when the report was read whole, without a problem.
    pub fn is_clean(&self) -> bool {
        self.node.is_some() && self.problems.is_empty()
    }
}

/// Reads the usage report from `metadata`, keeping what is well-formed: `None` when there is
/// none. Bounded like [`usage_from_metadata`]; a stranger's report with one bad value still
/// counts its other values (a caller then counts the run as at least its configured estimate,
/// see the client's executor).
pub fn read_usage_report(metadata: Option<&JsonObject>) -> Option<UsageReport> {
    let v = metadata?.get(USAGE_EXTENSION_URI)?;
    let mut count = 0usize;
    let mut problems = Vec::new();
    let node = match from_json(v, "root", 1, &mut count, &mut problems) {
        Ok(node) => node,
        Err(e) => {
            problems.push(e);
            None
        }
    };
    Some(UsageReport { node, problems })
}

fn prune(node: &UsageNode, depth: usize, left: &mut usize) -> UsageNode {
    *left = left.saturating_sub(1);
    let mut usage = node.usage.clone();
    usage.model = usage.model.map(|m| shorten(&m));
    let mut out = UsageNode::new(
        shorten(&node.agent),
        shorten(&node.kind),
        node.status,
        usage,
    );
    out.task_id = node.task_id.as_deref().map(shorten);
    for c in &node.children {
        if depth < MAX_USAGE_DEPTH && *left > 0 {
            let kept = prune(c, depth + 1, left);
            out.children.push(kept);
        } else {
            out.usage.add_tokens(&c.total());
        }
    }
    out
}

fn shorten(s: &str) -> String {
    if s.len() <= MAX_USAGE_TEXT {
        return s.to_string();
    }
    let mut end = MAX_USAGE_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn to_json(n: &UsageNode) -> Value {
    let u = &n.usage;
    let mut m = JsonObject::new();
    m.insert("agent".into(), n.agent.clone().into());
    m.insert("kind".into(), n.kind.clone().into());
    if let Some(id) = &n.task_id {
        m.insert("taskId".into(), id.clone().into());
    }
    m.insert("status".into(), n.status.as_str().into());
    m.insert("inputTokens".into(), u.input_tokens.into());
    m.insert("outputTokens".into(), u.output_tokens.into());
    m.insert("cacheReadTokens".into(), u.cache_read_tokens.into());
    m.insert("cacheCreationTokens".into(), u.cache_creation_tokens.into());
    m.insert("turns".into(), u.turns.into());
    m.insert("durationMs".into(), u.duration_ms.into());
    if let Some(model) = &u.model {
        m.insert("model".into(), model.clone().into());
    }
    if !n.children.is_empty() {
        m.insert(
            "children".into(),
            Value::Array(n.children.iter().map(to_json).collect()),
        );
    }
    Value::Object(m)
}

fn invalid(at: &str, reason: impl Into<String>) -> UsageReportError {
    UsageReportError::Invalid {
        at: at.to_string(),
        reason: reason.into(),
    }
}

fn text(
    o: &JsonObject,
    at: &str,
    key: &str,
    required: bool,
) -> Result<Option<String>, UsageReportError> {
    match o.get(key) {
        None | Some(Value::Null) if !required => Ok(None),
        None | Some(Value::Null) => Err(invalid(at, format!("`{key}` is missing"))),
        Some(Value::String(s)) if s.len() > MAX_USAGE_TEXT => Err(invalid(
            at,
            format!("`{key}` is longer than {MAX_USAGE_TEXT} bytes"),
        )),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(at, format!("`{key}` is not a string"))),
    }
}

fn count(o: &JsonObject, at: &str, key: &str, max: u64) -> Result<u64, UsageReportError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v <= max => Ok(v),
            Some(v) => Err(invalid(at, format!("`{key}` is {v}, over the bound {max}"))),
            None => Err(invalid(
                at,
                format!("`{key}` is {n}, not a non-negative whole number"),
            )),
        },
        Some(_) => Err(invalid(at, format!("`{key}` is not a number"))),
    }
}

/// Reads one node: `Ok(None)` when it is not an object (recorded in `problems`), `Err` when the
/// report breaks the node or depth bound (refused whole). Malformed values are recorded in
/// `problems` and count as absent.
fn from_json(
    v: &Value,
    at: &str,
    depth: usize,
    nodes: &mut usize,
    problems: &mut Vec<UsageReportError>,
) -> Result<Option<UsageNode>, UsageReportError> {
    if depth > MAX_USAGE_DEPTH {
        return Err(UsageReportError::TooDeep {
            limit: MAX_USAGE_DEPTH,
        });
    }
    *nodes += 1;
    if *nodes > MAX_USAGE_NODES {
        return Err(UsageReportError::TooManyNodes {
            limit: MAX_USAGE_NODES,
        });
    }
    let Value::Object(o) = v else {
        problems.push(invalid(at, "not an object"));
        return Ok(None);
    };
    // A malformed value is recorded and counts as absent.
    let mut keep = |r: Result<u64, UsageReportError>| {
        r.unwrap_or_else(|e| {
            problems.push(e);
            0
        })
    };
    let input = keep(count(o, at, "inputTokens", MAX_USAGE_TOKENS));
    let output = keep(count(o, at, "outputTokens", MAX_USAGE_TOKENS));
    let cache_read = keep(count(o, at, "cacheReadTokens", MAX_USAGE_TOKENS));
    let cache_creation = keep(count(o, at, "cacheCreationTokens", MAX_USAGE_TOKENS));
    let turns = keep(count(o, at, "turns", MAX_USAGE_TURNS));
    let duration = keep(count(o, at, "durationMs", MAX_USAGE_DURATION_MS));
    let mut text_of = |key: &str| {
        text(o, at, key, false).unwrap_or_else(|e| {
            problems.push(e);
            None
        })
    };
    let agent = text_of("agent").unwrap_or_default();
    let kind = text_of("kind").unwrap_or_default();
    let status = text_of("status");
    let model = text_of("model");
    let task_id = text_of("taskId");
    let status = match status {
        None => TaskStatus::Completed,
        Some(s) => {
            serde_json::from_value::<TaskStatus>(Value::String(s.clone())).unwrap_or_else(|_| {
                problems.push(invalid(
                    at,
                    format!("`status` `{}` is not a known status", s.escape_debug()),
                ));
                TaskStatus::Completed
            })
        }
    };
    let mut usage = Usage::new()
        .with_tokens(input, output)
        .with_cache_tokens(cache_read, cache_creation)
        .with_turns(u32::try_from(turns).unwrap_or(u32::MAX))
        .with_duration_ms(duration);
    usage.model = model;
    let mut node = UsageNode::new(agent, kind, status, usage);
    node.task_id = task_id;
    match o.get("children") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, c) in items.iter().enumerate() {
                let child_at = format!("{at}.children[{i}]");
                if let Some(child) = from_json(c, &child_at, depth + 1, nodes, problems)? {
                    node.children.push(child);
                }
            }
        }
        Some(_) => problems.push(invalid(at, "`children` is not a list")),
    }
    Ok(Some(node))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn leaf(name: &str, tokens: u64) -> UsageNode {
        UsageNode::new(
            name,
            "CLAUDE",
            TaskStatus::Completed,
            Usage::new()
                .with_tokens(tokens, tokens)
                .with_turns(1)
                .with_duration_ms(5)
                .with_model("gpt-x"),
        )
    }

    #[test]
    fn a_tree_round_trips_through_metadata() {
        let tree = leaf("main", 10).with_task_id("t-1").with_children(vec![
            leaf("a", 1),
            leaf("b", 2).with_children(vec![leaf("c", 3)]),
        ]);
        let m = usage_to_metadata(&tree);
        assert_eq!(m[USAGE_EXTENSION_URI]["inputTokens"], 10);
        assert_eq!(m[USAGE_EXTENSION_URI]["taskId"], "t-1");
        assert_eq!(
            m[USAGE_EXTENSION_URI]["children"][1]["children"][0]["agent"],
            "c"
        );
        assert_eq!(usage_from_metadata(Some(&m)), Some(Ok(tree)));
        assert_eq!(usage_from_metadata(None), None);
        assert_eq!(usage_from_metadata(Some(&JsonObject::new())), None);
    }

    #[test]
    fn writing_cuts_big_trees_and_keeps_their_totals() {
        // 600 children, and a chain 40 deep.
        let wide =
            leaf("root", 1).with_children((0..600).map(|i| leaf(&format!("c{i}"), 1)).collect());
        let mut deep = leaf("d40", 1);
        for i in (0..40).rev() {
            deep = leaf(&format!("d{i}"), 1).with_children(vec![deep]);
        }
        for tree in [wide, deep] {
            let m = usage_to_metadata(&tree);
            let back = usage_from_metadata(Some(&m))
                .expect("present")
                .expect("within bounds");
            assert_eq!(back.total().total_tokens(), tree.total().total_tokens());
        }
    }

    #[test]
    fn hostile_reports_are_refused_with_where_and_why() {
        let read = |v: Value| {
            let mut m = JsonObject::new();
            m.insert(USAGE_EXTENSION_URI.into(), v);
            usage_from_metadata(Some(&m)).expect("present")
        };
        let err = read(json!({"agent": "x", "inputTokens": -5})).unwrap_err();
        assert!(
            err.to_string().contains("root: `inputTokens` is -5"),
            "{err}"
        );
        let err = read(json!({"agent": "x", "outputTokens": 1e30})).unwrap_err();
        assert!(
            err.to_string().contains("not a non-negative whole number"),
            "{err}"
        );
        let err = read(json!({"children": [{}, {"turns": 99_000_000}]})).unwrap_err();
        assert!(
            err.to_string().contains("root.children[1]: `turns`"),
            "{err}"
        );
        let err = read(json!({"status": "exploded"})).unwrap_err();
        assert!(err.to_string().contains("not a known status"), "{err}");
        let err = read(json!({"agent": "a".repeat(300)})).unwrap_err();
        assert!(err.to_string().contains("longer than"), "{err}");
        assert!(read(json!("nope")).is_err());
        assert!(read(json!({"children": {}})).is_err());
        let many: Vec<Value> = (0..300).map(|_| json!({})).collect();
        assert_eq!(
            read(json!({"children": many})).unwrap_err(),
            UsageReportError::TooManyNodes {
                limit: MAX_USAGE_NODES
            }
        );
        let mut deep = json!({});
        for _ in 0..20 {
            deep = json!({"children": [deep]});
        }
        assert_eq!(
            read(deep).unwrap_err(),
            UsageReportError::TooDeep {
                limit: MAX_USAGE_DEPTH
            }
        );
        // Unknown keys and absent numbers are fine.
        let ok = read(json!({"agent": "x", "future": [1, 2], "turns": 2})).unwrap();
        assert_eq!(
            (ok.agent.as_str(), ok.usage.turns, ok.usage.input_tokens),
            ("x", 2, 0)
        );
    }
}
