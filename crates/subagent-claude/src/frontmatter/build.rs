//! The strict reading: `yaml-rust2`'s events built straight into JSON, bounded by a [`Budget`]
//! and the `MAX_YAML_*` limits, without recursion.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::{Budget, Fields, LimitHit, MAX_YAML_DEPTH, StrictError, YamlFailure};

fn depth_hit(line: usize) -> LimitHit {
    LimitHit::at(
        "MAX_YAML_DEPTH",
        MAX_YAML_DEPTH,
        line,
        format!("the YAML nests lists and maps deeper than {MAX_YAML_DEPTH} levels"),
    )
}

/// Reads frontmatter as strict YAML into a JSON object. An empty frontmatter is an empty map;
/// a document that is not a mapping is a failure. Alias expansion, nesting and size are bounded
/// by `budget` and the `MAX_YAML_*` limits.
pub(crate) fn strict(front: &str, budget: &mut Budget) -> Result<Fields, StrictError> {
    if front.trim().is_empty() {
        return Ok(Fields::default());
    }
    let mut builder = Builder::new(budget);
    builder.run(front)?;
    match builder.first_root {
        None | Some(Node::Scalar(Scalar::Null)) => Ok(Fields {
            map: Map::new(),
            name_line: None,
        }),
        Some(Node::Tree(Value::Object(map))) => Ok(Fields {
            map,
            name_line: builder.name_line,
        }),
        Some(_) => Err(StrictError::Syntax(YamlFailure {
            message: "the frontmatter is not a mapping of `key: value` lines".into(),
            line: Some(1),
        })),
    }
}

/// A scalar as YAML types it (kept apart from its JSON form because map keys use its text).
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Str(String),
    /// A float, as written.
    Real(String),
    Int(i64),
    Bool(bool),
    Null,
    /// A value YAML could not type (e.g. `!!int abc`), or an alias to an unfinished anchor.
    Bad,
}

impl Scalar {
    /// Types a scalar the way `yaml_rust2::YamlLoader` does.
    fn from_event(v: String, style: TScalarStyle, tag: Option<&Tag>) -> Scalar {
        if style != TScalarStyle::Plain {
            return Scalar::Str(v);
        }
        if let Some(Tag { handle, suffix }) = tag {
            if handle != "tag:yaml.org,2002:" {
                return Scalar::Str(v);
            }
            return match suffix.as_str() {
                "bool" => match v.as_str() {
                    "true" | "True" | "TRUE" => Scalar::Bool(true),
                    "false" | "False" | "FALSE" => Scalar::Bool(false),
                    _ => Scalar::Bad,
                },
                "int" => v.parse::<i64>().map_or(Scalar::Bad, Scalar::Int),
                "float" => {
                    if yaml_float(&v) {
                        Scalar::Real(v)
                    } else {
                        Scalar::Bad
                    }
                }
                "null" => match v.as_str() {
                    "~" | "null" => Scalar::Null,
                    _ => Scalar::Bad,
                },
                _ => Scalar::Str(v),
            };
        }
        Self::plain(v)
    }

    /// `yaml_rust2::Yaml::from_str`, moving the text instead of copying it.
    fn plain(v: String) -> Scalar {
        if let Some(number) = v.strip_prefix("0x") {
            if let Ok(i) = i64::from_str_radix(number, 16) {
                return Scalar::Int(i);
            }
        } else if let Some(number) = v.strip_prefix("0o") {
            if let Ok(i) = i64::from_str_radix(number, 8) {
                return Scalar::Int(i);
            }
        } else if let Some(number) = v.strip_prefix('+')
            && let Ok(i) = number.parse::<i64>()
        {
            return Scalar::Int(i);
        }
        match v.as_str() {
            "" | "~" | "null" => Scalar::Null,
            "true" | "True" | "TRUE" => Scalar::Bool(true),
            "false" | "False" | "FALSE" => Scalar::Bool(false),
            t => {
                if let Ok(i) = t.parse::<i64>() {
                    Scalar::Int(i)
                } else if yaml_float(t) {
                    Scalar::Real(v)
                } else {
                    Scalar::Str(v)
                }
            }
        }
    }

    fn into_json(self) -> Value {
        match self {
            Scalar::Str(s) => Value::String(s),
            Scalar::Int(i) => Value::Number(i.into()),
            Scalar::Real(s) => real_to_json(s),
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::Null | Scalar::Bad => Value::Null,
        }
    }

    /// The JSON object key this scalar becomes, with its YAML type for duplicate detection;
    /// `None` for [`Scalar::Bad`].
    fn into_key(self) -> Option<(String, u8)> {
        Some(match self {
            Scalar::Str(s) => (s, 0),
            Scalar::Real(s) => (s, 1),
            Scalar::Int(i) => (i.to_string(), 2),
            Scalar::Bool(b) => (b.to_string(), 3),
            Scalar::Null => ("null".to_string(), 4),
            Scalar::Bad => return None,
        })
    }
}

/// `yaml_rust2`'s float recognition (private there).
fn yaml_float(v: &str) -> bool {
    match v {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => true,
        _ => v.bytes().any(|b| b.is_ascii_digit()) && v.parse::<f64>().is_ok(),
    }
}

/// A finished node: a scalar, or a list or map already in JSON form.
#[derive(Debug, Clone)]
enum Node {
    Scalar(Scalar),
    Tree(Value),
}

impl Node {
    fn into_json(self) -> Value {
        match self {
            Node::Scalar(s) => s.into_json(),
            Node::Tree(v) => v,
        }
    }

    fn is_bad(&self) -> bool {
        matches!(self, Node::Scalar(Scalar::Bad))
    }
}

/// Size of a finished node: values in it, scalar bytes, nesting levels (0 for a scalar).
#[derive(Debug, Clone, Copy, Default)]
struct Weight {
    nodes: usize,
    bytes: usize,
    depth: usize,
}

/// An anchored node kept for the aliases that may follow.
struct Anchor {
    node: Node,
    weight: Weight,
}

/// A list or map being built.
struct Frame {
    kind: FrameKind,
    anchor: usize,
    weight: Weight,
}

enum FrameKind {
    Seq(Vec<Value>),
    Map(MapFrame),
}

struct MapFrame {
    map: Map<String, Value>,
    /// The key waiting for its value (`None`: the next node is a key).
    key: Option<Node>,
    /// The line of the pending key.
    key_line: usize,
    /// YAML types of keys that are not plain strings, for duplicate detection.
    typed_keys: Vec<(String, u8)>,
    /// Keys that are lists or maps (not kept in JSON; remembered for duplicate detection).
    tree_keys: Vec<Value>,
}

/// Builds JSON from `yaml_rust2` parser events, iteratively (no recursion on nesting), with the
/// document's budget charged for every value, alias copy and anchor copy.
struct Builder<'b> {
    budget: &'b mut Budget,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchor>,
    /// Anchor ids up to this one belong to earlier documents.
    last_anchor_before_doc: usize,
    max_anchor: usize,
    doc_index: usize,
    root: Option<Node>,
    first_root: Option<Node>,
    name_line: Option<usize>,
    /// A duplicate key: reported once the parser has read the rest without a syntax error of
    /// its own (which `YamlLoader` would report instead); nothing more is built meanwhile.
    deferred: Option<YamlFailure>,
}

impl<'b> Builder<'b> {
    fn new(budget: &'b mut Budget) -> Self {
        Self {
            budget,
            stack: Vec::new(),
            anchors: HashMap::new(),
            last_anchor_before_doc: 0,
            max_anchor: 0,
            doc_index: 0,
            root: None,
            first_root: None,
            name_line: None,
            deferred: None,
        }
    }

    fn run(&mut self, text: &str) -> Result<(), StrictError> {
        let mut parser = Parser::new_from_str(text);
        loop {
            let (event, mark) = parser.next_token().map_err(|e| {
                StrictError::Syntax(YamlFailure {
                    message: e.info().to_string(),
                    line: Some(e.marker().line().max(1)),
                })
            })?;
            if self.deferred.is_some() {
                if event == Event::StreamEnd {
                    return Err(StrictError::Syntax(self.deferred.take().unwrap_or_else(
                        || YamlFailure {
                            message: "duplicated key in mapping".into(),
                            line: None,
                        },
                    )));
                }
                continue;
            }
            if !self.on_event(event, mark)? {
                return Ok(());
            }
        }
    }

    /// Handles one event; `false` at the end of the stream.
    fn on_event(&mut self, event: Event, mark: Marker) -> Result<bool, StrictError> {
        let line = mark.line();
        match event {
            Event::StreamEnd => return Ok(false),
            Event::StreamStart | Event::Nothing => {}
            Event::DocumentStart => {
                self.last_anchor_before_doc = self.max_anchor;
                self.anchors.clear();
                self.root = None;
            }
            Event::DocumentEnd => {
                let root = self.root.take().unwrap_or(Node::Scalar(Scalar::Bad));
                if self.doc_index == 0 {
                    self.first_root = Some(root);
                }
                self.doc_index += 1;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let bytes = text.len();
                self.budget
                    .charge(1, bytes, line)
                    .map_err(StrictError::Limit)?;
                let scalar = Scalar::from_event(text, style, tag.as_ref());
                let weight = Weight {
                    nodes: 1,
                    bytes,
                    depth: 0,
                };
                self.finish(Node::Scalar(scalar), weight, anchor, line)?;
            }
            Event::SequenceStart(anchor, _) => {
                self.open(FrameKind::Seq(Vec::new()), anchor, line)?;
            }
            Event::MappingStart(anchor, _) => {
                self.open(
                    FrameKind::Map(MapFrame {
                        map: Map::new(),
                        key: None,
                        key_line: 0,
                        typed_keys: Vec::new(),
                        tree_keys: Vec::new(),
                    }),
                    anchor,
                    line,
                )?;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else {
                    return Err(StrictError::Syntax(YamlFailure {
                        message: "unbalanced end of a list or map".into(),
                        line: Some(line.max(1)),
                    }));
                };
                let value = match frame.kind {
                    FrameKind::Seq(items) => Value::Array(items),
                    FrameKind::Map(m) => Value::Object(m.map),
                };
                self.finish(Node::Tree(value), frame.weight, frame.anchor, line)?;
            }
            Event::Alias(id) => {
                if id <= self.last_anchor_before_doc {
                    return Err(StrictError::Syntax(YamlFailure {
                        message: "while parsing node, found unknown anchor".into(),
                        line: Some(line.max(1)),
                    }));
                }
                let (node, weight) = match self.anchors.get(&id) {
                    Some(a) => {
                        if self.stack.len() + a.weight.depth > MAX_YAML_DEPTH {
                            return Err(StrictError::Limit(depth_hit(line)));
                        }
                        self.budget
                            .charge(a.weight.nodes, a.weight.bytes, line)
                            .map_err(StrictError::Limit)?;
                        (a.node.clone(), a.weight)
                    }
                    // An alias inside its own anchor: the anchor is not finished yet.
                    None => (
                        Node::Scalar(Scalar::Bad),
                        Weight {
                            nodes: 1,
                            ..Weight::default()
                        },
                    ),
                };
                self.finish(node, weight, 0, line)?;
            }
        }
        Ok(true)
    }

    fn open(&mut self, kind: FrameKind, anchor: usize, line: usize) -> Result<(), StrictError> {
        if self.stack.len() >= MAX_YAML_DEPTH {
            return Err(StrictError::Limit(depth_hit(line)));
        }
        self.budget.charge(1, 0, line).map_err(StrictError::Limit)?;
        self.max_anchor = self.max_anchor.max(anchor);
        self.stack.push(Frame {
            kind,
            anchor,
            weight: Weight {
                nodes: 1,
                bytes: 0,
                depth: 1,
            },
        });
        Ok(())
    }

    /// A node is complete: keep a copy for its anchor, then put it into its parent.
    fn finish(
        &mut self,
        node: Node,
        weight: Weight,
        anchor: usize,
        line: usize,
    ) -> Result<(), StrictError> {
        if anchor > 0 {
            self.max_anchor = self.max_anchor.max(anchor);
            self.budget
                .charge(weight.nodes, weight.bytes, line)
                .map_err(StrictError::Limit)?;
            self.anchors.insert(
                anchor,
                Anchor {
                    node: node.clone(),
                    weight,
                },
            );
        }
        let depth_here = self.stack.len();
        let Some(parent) = self.stack.last_mut() else {
            self.root = Some(node);
            return Ok(());
        };
        parent.weight.nodes = parent.weight.nodes.saturating_add(weight.nodes);
        parent.weight.bytes = parent.weight.bytes.saturating_add(weight.bytes);
        parent.weight.depth = parent.weight.depth.max(weight.depth + 1);
        match &mut parent.kind {
            FrameKind::Seq(items) => items.push(node.into_json()),
            FrameKind::Map(m) => match m.key.take() {
                // A value YAML could not type cannot be a key: the next node is tried instead
                // (as `YamlLoader` does).
                None if node.is_bad() => {}
                None => {
                    m.key = Some(node);
                    m.key_line = line;
                }
                Some(key) => {
                    let key_line = m.key_line;
                    match key {
                        Node::Scalar(s) => {
                            // Never `None`: a bad node is not kept as a key (above).
                            let Some((key, ty)) = s.into_key() else {
                                return Ok(());
                            };
                            if m.map.contains_key(&key) {
                                // Keys of different YAML types can make the same JSON key
                                // (`1` and `'1'`); only the same type is a duplicate. Untyped
                                // (plain string) keys are recorded once they collide.
                                if !m.typed_keys.iter().any(|(k, _)| *k == key) {
                                    m.typed_keys.push((key.clone(), 0));
                                }
                                if m.typed_keys.iter().any(|(k, t)| *k == key && *t == ty) {
                                    self.deferred = Some(YamlFailure {
                                        message: format!("{key:?}: duplicated key in mapping"),
                                        line: Some(line.max(1)),
                                    });
                                    return Ok(());
                                }
                                m.typed_keys.push((key.clone(), ty));
                            } else if ty != 0 {
                                m.typed_keys.push((key.clone(), ty));
                            }
                            if depth_here == 1 && self.doc_index == 0 && ty == 0 && key == "name" {
                                self.name_line = Some(key_line.max(1));
                            }
                            m.map.insert(key, node.into_json());
                        }
                        Node::Tree(k) => {
                            if m.tree_keys.contains(&k) {
                                self.deferred = Some(YamlFailure {
                                    message: "duplicated key in mapping".into(),
                                    line: Some(line.max(1)),
                                });
                                return Ok(());
                            }
                            m.tree_keys.push(k);
                        }
                    }
                }
            },
        }
        Ok(())
    }
}

/// A YAML real as JSON: the number, or the text itself when it is not a finite `f64`
/// (`.inf`, `.nan`).
fn real_to_json(s: String) -> Value {
    match s.parse::<f64>().ok().and_then(Number::from_f64) {
        Some(n) => Value::Number(n),
        None => Value::String(s),
    }
}

/// Converts a `yaml_rust2` node into JSON (used by tests as the reference conversion).
#[cfg(test)]
pub(crate) fn yaml_to_json(y: yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::String(s) => Value::String(s),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(s) => real_to_json(s),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(a) => Value::Array(a.into_iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => {
            let mut map = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Null => "null".to_string(),
                    _ => continue,
                };
                map.insert(key, yaml_to_json(v));
            }
            Value::Object(map)
        }
        _ => Value::Null,
    }
}

/// The reading before alias expansion was bounded: `YamlLoader` then conversion (tests compare
/// the new reader against it on inputs without aliases).
#[cfg(test)]
pub(crate) fn strict_reference(front: &str) -> Result<Map<String, Value>, YamlFailure> {
    use yaml_rust2::{Yaml, YamlLoader};
    if front.trim().is_empty() {
        return Ok(Map::new());
    }
    match YamlLoader::load_from_str(front) {
        Ok(docs) => match docs.into_iter().next() {
            None | Some(Yaml::Null) => Ok(Map::new()),
            Some(h @ Yaml::Hash(_)) => match yaml_to_json(h) {
                Value::Object(m) => Ok(m),
                _ => unreachable!("a hash converts to an object"),
            },
            Some(_) => Err(YamlFailure {
                message: "the frontmatter is not a mapping of `key: value` lines".into(),
                line: Some(1),
            }),
        },
        Err(e) => Err(YamlFailure {
            message: e.info().to_string(),
            line: Some(e.marker().line().max(1)),
        }),
    }
}
