//! Frontmatter splitting and YAML reading, strict first and lenient as a fallback.
//!
//! The splitter is hand-written (BOM, CRLF and blank lines before the opening `---` are
//! tolerated); the YAML is parsed with `yaml-rust2`, the parser `gray_matter` uses internally,
//! and its events are built straight into [`serde_json::Value`] here rather than through
//! `YamlLoader`, for two reasons:
//!
//! - **Bounds.** An alias is a full copy of its anchor, so a few hundred bytes of nested
//!   anchors (`b: &b [*a,*a,...]`, `c: &c [*b,*b,...]`, ...) expand to billions of values.
//!   Every value built, every alias copy and the copy kept for each anchor is charged to a
//!   per-document [`Budget`] checked against [`MAX_YAML_NODES`] and [`MAX_YAML_SCALAR_BYTES`],
//!   and nesting (aliases included) against [`MAX_YAML_DEPTH`]; the first limit reached stops
//!   the reading with a [`LimitHit`]. The lenient reading shares one budget across its entries.
//! - **No recursion.** `YamlLoader` and `Parser::load` recurse once per nesting level, so a
//!   deeply nested flow (`[[[[...]]]]`) overflows the stack; this builder keeps its own stack
//!   and pulls events one at a time.
//!
//! The typing of scalars and keys follows `YamlLoader` exactly (tests compare the two).

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Most values one agent or skill file's YAML frontmatter may build: every scalar, list and map,
/// counting each copy an alias makes and the copy kept for each anchor. Real frontmatter builds
/// a few dozen; an alias expansion bomb ("billion laughs") is refused when it reaches this.
pub const MAX_YAML_NODES: usize = 100_000;

/// Most bytes of scalar text one file's YAML frontmatter may build, counting alias copies (the
/// text itself is at most [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES); escapes can grow it by half).
pub const MAX_YAML_SCALAR_BYTES: usize = 4 * 1024 * 1024;

/// Deepest nesting of lists and maps in a file's YAML frontmatter, aliases included (the
/// top-level mapping is level 1).
pub const MAX_YAML_DEPTH: usize = 64;

/// A document split into its frontmatter and body.
#[derive(Debug)]
pub(crate) struct Split<'a> {
    /// The frontmatter text between the delimiters (no delimiters).
    pub front: &'a str,
    /// 1-based line number, in the file, of the opening `---`.
    pub open_line: usize,
    /// The text after the closing delimiter.
    pub body: &'a str,
}

/// Why a document could not be split.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SplitError {
    /// The first non-blank line is not `---`.
    NoFrontmatter,
    /// The opening `---` (at this 1-based line) has no closing `---`.
    Unclosed(usize),
}

/// Strips a BOM and turns CRLF / lone CR line ends into LF (allocating only when needed).
pub(crate) fn normalize(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Splits normalized text (see [`normalize`]) into frontmatter and body.
pub(crate) fn split(text: &str) -> Result<Split<'_>, SplitError> {
    let mut pos = 0usize;
    let mut line_no = 0usize;
    // Skip blank lines before the opening delimiter.
    let open_line;
    loop {
        if pos >= text.len() {
            return Err(SplitError::NoFrontmatter);
        }
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = &text[pos..end];
        line_no += 1;
        let next = (end + 1).min(text.len());
        if line.trim().is_empty() {
            pos = next;
            continue;
        }
        if line.trim_end() == "---" {
            open_line = line_no;
            pos = next;
            break;
        }
        return Err(SplitError::NoFrontmatter);
    }
    let front_start = pos;
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = &text[pos..end];
        if line.trim_end() == "---" {
            let body_start = (end + 1).min(text.len());
            return Ok(Split {
                front: &text[front_start..pos],
                open_line,
                body: &text[body_start..],
            });
        }
        pos = end + 1;
    }
    Err(SplitError::Unclosed(open_line))
}

/// A strict YAML failure: a message and, when the parser gives one, a 1-based line number
/// relative to the frontmatter's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlFailure {
    pub message: String,
    pub line: Option<usize>,
}

/// A loading limit the YAML would go over ([`MAX_YAML_NODES`], [`MAX_YAML_SCALAR_BYTES`],
/// [`MAX_YAML_DEPTH`]): the document is refused, never read leniently instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LimitHit {
    /// The constant's name, e.g. `MAX_YAML_NODES`.
    pub limit: &'static str,
    /// Its value.
    pub max: usize,
    /// 1-based line, relative to the frontmatter's first line, where the limit was reached.
    pub line: Option<usize>,
    /// What would have gone over it.
    pub message: String,
}

/// Why strict YAML reading failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StrictError {
    /// Not YAML (or not a mapping): the lenient reading may still make sense of it.
    Syntax(YamlFailure),
    /// Over a limit: the document is refused.
    Limit(LimitHit),
}

/// Frontmatter read as YAML: the fields and where some of them are.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    pub map: Map<String, Value>,
    /// 1-based line (relative to the frontmatter) of the top-level `name` key.
    pub name_line: Option<usize>,
}

/// What one reading of a document's YAML has built so far (the strict reading, or all the
/// entries of the lenient one together): values and scalar bytes, counting each copy an alias
/// makes and the copy kept for each anchor.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    nodes: usize,
    bytes: usize,
}

impl Budget {
    fn charge(&mut self, nodes: usize, bytes: usize, line: usize) -> Result<(), LimitHit> {
        self.nodes = self.nodes.saturating_add(nodes);
        self.bytes = self.bytes.saturating_add(bytes);
        if self.nodes > MAX_YAML_NODES {
            return Err(LimitHit {
                limit: "MAX_YAML_NODES",
                max: MAX_YAML_NODES,
                line: Some(line.max(1)),
                message: format!(
                    "the YAML would build more than {MAX_YAML_NODES} values (each alias is a \
                     full copy of its anchor: an alias expansion bomb?)"
                ),
            });
        }
        if self.bytes > MAX_YAML_SCALAR_BYTES {
            return Err(LimitHit {
                limit: "MAX_YAML_SCALAR_BYTES",
                max: MAX_YAML_SCALAR_BYTES,
                line: Some(line.max(1)),
                message: format!(
                    "the YAML's text would grow past {MAX_YAML_SCALAR_BYTES} bytes (each alias \
                     is a full copy of its anchor: an alias expansion bomb?)"
                ),
            });
        }
        Ok(())
    }
}

fn depth_hit(line: usize) -> LimitHit {
    LimitHit {
        limit: "MAX_YAML_DEPTH",
        max: MAX_YAML_DEPTH,
        line: Some(line.max(1)),
        message: format!("the YAML nests lists and maps deeper than {MAX_YAML_DEPTH} levels"),
    }
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

/// The keys of a Claude Code agent file (compared after [`fold_key`]). The lenient reading
/// starts a new entry at each of them even inside a multi-line prose value, and the definition
/// checks misspelled keys against them.
pub(crate) const CLAUDE_CODE_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "permissionMode",
    "maxTurns",
    "skills",
    "mcpServers",
    "hooks",
    "memory",
    "background",
    "effort",
    "isolation",
    "color",
    "initialPrompt",
];

/// Keys other than [`CLAUDE_CODE_KEYS`] that also start a new entry in the lenient reading
/// (compared after [`fold_key`]): skill and plugin files' keys.
const OTHER_ENTRY_KEYS: &[&str] = &["allowedTools", "version", "license", "metadata"];

/// Whether a folded key always starts a new entry in the lenient reading.
fn starts_entry(folded: &str) -> bool {
    CLAUDE_CODE_KEYS
        .iter()
        .chain(OTHER_ENTRY_KEYS)
        .any(|k| fold_key(k) == folded)
}

/// Keys whose values are free prose that may run over many unindented lines.
const PROSE_KEYS: &[&str] = &["description", "initialprompt", "whentouse"];

/// Lower-cases a key and drops `-` and `_`, so `disallowedTools`, `disallowed-tools` and
/// `disallowed_tools` compare equal.
pub(crate) fn fold_key(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '-' && *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// If `line` is a top-level `key:` line, returns the key and the rest after the colon.
fn key_line(line: &str) -> Option<(&str, &str)> {
    let first = line.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    let colon = line.find(':')?;
    let key = &line[..colon];
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    let rest = &line[colon + 1..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    Some((key, rest))
}

struct Entry<'a> {
    key: &'a str,
    /// 1-based line of the key, relative to the frontmatter.
    line: usize,
    first: &'a str,
    rest: Vec<&'a str>,
    /// `<example>` and `</example>` tags seen so far (kept as lines are added, so deciding
    /// where an entry ends stays linear in the number of lines).
    opened: usize,
    closed: usize,
}

impl<'a> Entry<'a> {
    fn new(key: &'a str, line: usize, first: &'a str) -> Self {
        let mut e = Entry {
            key,
            line,
            first,
            rest: Vec::new(),
            opened: 0,
            closed: 0,
        };
        e.count_examples(first);
        e
    }

    fn count_examples(&mut self, text: &str) {
        if text.contains("example>") {
            self.opened += text.matches("<example>").count();
            self.closed += text.matches("</example>").count();
        }
    }

    fn push(&mut self, line: &'a str) {
        self.count_examples(line);
        self.rest.push(line);
    }

    fn open_examples(&self) -> bool {
        self.opened > self.closed
    }
}

/// Reads frontmatter that strict YAML rejected, line by line: every top-level `key:` line starts
/// an entry, other lines continue the current entry. Each entry is tried as YAML on its own;
/// one that still fails is kept as text (quotes stripped, indentation removed). All entries
/// share `budget`: going over a limit refuses the whole frontmatter.
pub(crate) fn lenient(front: &str, budget: &mut Budget) -> Result<Fields, LimitHit> {
    let mut entries: Vec<Entry<'_>> = Vec::new();
    for (index, line) in front.split('\n').enumerate() {
        if let Some((key, rest)) = key_line(line) {
            let folded = fold_key(key);
            let starts = match entries.last() {
                None => true,
                Some(cur) => {
                    let cur_folded = fold_key(cur.key);
                    if starts_entry(&folded) {
                        true
                    } else if PROSE_KEYS.contains(&cur_folded.as_str()) {
                        // Inside prose, `Context:` / `user:` lines belong to the text.
                        key.starts_with(|c: char| c.is_ascii_lowercase()) && !cur.open_examples()
                    } else {
                        true
                    }
                }
            };
            if starts {
                entries.push(Entry::new(key, index + 1, rest));
                continue;
            }
        }
        // Lines before the first key (comments, junk) are dropped.
        if let Some(cur) = entries.last_mut() {
            cur.push(line);
        }
    }
    let mut fields = Fields::default();
    for e in entries {
        let value = entry_value(&e, budget)?;
        if e.key == "name" {
            fields.name_line = Some(e.line);
        }
        fields.map.insert(e.key.to_string(), value);
    }
    Ok(fields)
}

fn entry_value(e: &Entry<'_>, budget: &mut Budget) -> Result<Value, LimitHit> {
    // First, the entry alone as YAML (handles lists, block scalars, quoted strings).
    let mut chunk = String::with_capacity(
        e.key.len() + e.first.len() + 2 + e.rest.iter().map(|l| l.len() + 1).sum::<usize>(),
    );
    chunk.push_str(e.key);
    chunk.push(':');
    chunk.push_str(e.first);
    for l in &e.rest {
        chunk.push('\n');
        chunk.push_str(l);
    }
    match strict(&chunk, budget) {
        Ok(mut fields) => {
            if fields.map.len() == 1
                && let Some(v) = fields.map.remove(e.key)
            {
                return Ok(v);
            }
        }
        Err(StrictError::Limit(mut hit)) => {
            // Lines relative to the frontmatter, not to the entry.
            hit.line = hit.line.map(|l| l + e.line - 1);
            return Err(hit);
        }
        Err(StrictError::Syntax(_)) => {}
    }
    // A list that YAML rejected: `- item` lines.
    let first = e.first.trim();
    let rest_nonblank: Vec<&str> = e
        .rest
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    if first.is_empty()
        && !rest_nonblank.is_empty()
        && rest_nonblank
            .iter()
            .all(|l| l.starts_with("- ") || *l == "-")
    {
        return Ok(Value::Array(
            rest_nonblank
                .iter()
                .map(|l| Value::String(unquote(l.trim_start_matches('-').trim()).to_string()))
                .collect(),
        ));
    }
    // Plain text: the first value and the continuation lines, de-indented.
    let first = match first {
        "|" | "|-" | "|+" | ">" | ">-" | ">+" => "",
        f => f,
    };
    let indent = e
        .rest
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut text = String::from(first);
    for l in &e.rest {
        text.push('\n');
        if l.len() >= indent {
            text.push_str(l.get(indent..).unwrap_or(l.trim_start()));
        }
    }
    let text = text.trim();
    if text.is_empty() {
        return Ok(Value::Null);
    }
    Ok(Value::String(unquote(text).to_string()))
}

/// Strips one pair of matching surrounding quotes.
pub(crate) fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_with_blank_lines_bom_and_crlf() {
        let raw = "\u{feff}\r\n\r\n---\r\nname: a\r\n---\r\nbody\r\n";
        let n = normalize(raw);
        let s = split(&n).unwrap();
        assert_eq!(s.front, "name: a\n");
        assert_eq!(s.body, "body\n");
        assert_eq!(s.open_line, 3);
    }

    #[test]
    fn no_frontmatter_and_unclosed() {
        assert_eq!(split("# Title\n").unwrap_err(), SplitError::NoFrontmatter);
        assert_eq!(split("").unwrap_err(), SplitError::NoFrontmatter);
        assert_eq!(
            split("\n---\nname: a\n").unwrap_err(),
            SplitError::Unclosed(2)
        );
    }

    #[test]
    fn closing_at_end_of_file_without_newline() {
        let s = split("---\nname: a\n---").unwrap();
        assert_eq!(s.front, "name: a\n");
        assert_eq!(s.body, "");
    }

    #[test]
    fn strict_reports_line() {
        let err = strict("name: a\ndescription: x: y\n", &mut Budget::default()).unwrap_err();
        let StrictError::Syntax(err) = err else {
            panic!("{err:?}")
        };
        assert_eq!(err.line, Some(2), "{err:?}");
    }

    #[test]
    fn strict_converts_types() {
        let m = strict(
            "a: 1\nb: 2.5\nc: true\nd: [x, y]\ne:\n  f: g\n",
            &mut Budget::default(),
        )
        .unwrap()
        .map;
        assert_eq!(
            Value::Object(m),
            serde_json::json!({"a":1,"b":2.5,"c":true,"d":["x","y"],"e":{"f":"g"}})
        );
    }

    #[test]
    fn lenient_reads_colons_and_examples() {
        let front = "name: x\ndescription: Use when: you want it.\n\n<example>\nContext: c\nuser: hi\nassistant: ok\n</example>\nmore text\ntools: Read, Grep\nmodel: sonnet\n";
        assert!(strict(front, &mut Budget::default()).is_err());
        let m = lenient(front, &mut Budget::default()).unwrap().map;
        assert_eq!(m["name"], "x");
        let d = m["description"].as_str().unwrap();
        assert!(d.starts_with("Use when: you want it."), "{d}");
        assert!(d.contains("user: hi"));
        assert!(d.ends_with("more text"));
        assert_eq!(m["tools"], "Read, Grep");
        assert_eq!(m["model"], "sonnet");
    }

    #[test]
    fn lenient_keeps_yaml_lists_and_unknown_keys() {
        let front = "name: x\ndescription: a: b\ntools:\n  - Read\n  - Grep\ncustom: 3\n";
        let m = lenient(front, &mut Budget::default()).unwrap().map;
        assert_eq!(m["tools"], serde_json::json!(["Read", "Grep"]));
        assert_eq!(m["custom"], 3);
        assert_eq!(m["description"], "a: b");
    }
}

/// The new reader against `YamlLoader` (the reading before this one), on the real corpus and on
/// generated YAML; and property tests that the splitter and both readings never panic and stay
/// bounded on any input.
#[cfg(test)]
mod differential {
    use super::*;
    use proptest::prelude::*;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    /// Values in a JSON tree.
    fn count(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(count).sum::<usize>(),
            Value::Object(m) => 1 + m.values().map(count).sum::<usize>(),
            _ => 1,
        }
    }

    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// Asserts `strict` agrees with `YamlLoader` on `front`: the same map, or both fail (at the
    /// same line). Returns whether it parsed.
    fn agrees(front: &str) -> Result<bool, TestCaseError> {
        let ours = strict(front, &mut Budget::default());
        let reference = strict_reference(front);
        match (ours, reference) {
            (Ok(f), Ok(m)) => {
                prop_assert_eq!(Value::Object(f.map), Value::Object(m), "{:?}", front);
                Ok(true)
            }
            (Err(StrictError::Syntax(a)), Err(b)) => {
                prop_assert_eq!(a.line, b.line, "{:?}: {:?} vs {:?}", front, a, b);
                Ok(false)
            }
            (a, b) => {
                prop_assert!(false, "{:?}: ours {:?}, YamlLoader {:?}", front, a, b);
                Ok(false)
            }
        }
    }

    fn corpus_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                corpus_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }

    #[test]
    fn strict_matches_yamlloader_on_the_corpus() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora/claude-agents");
        let mut files = Vec::new();
        corpus_files(&dir, &mut files);
        if files.is_empty() {
            println!("NOTICE: no corpus at {}; skipped", dir.display());
            return;
        }
        let mut parsed = 0;
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            let text = normalize(&text);
            let Ok(split) = split(&text) else { continue };
            if agrees(split.front).unwrap() {
                parsed += 1;
            }
        }
        println!(
            "{parsed} of {} corpus frontmatters are strict YAML",
            files.len()
        );
        assert!(parsed > 500, "{parsed}");
    }

    #[test]
    fn name_line_is_the_key_line() {
        let f = strict("# c\ndescription: d\n\nname: n\n", &mut Budget::default()).unwrap();
        assert_eq!(f.name_line, Some(4));
        let f = lenient("description: a: b\nname: n\n", &mut Budget::default()).unwrap();
        assert_eq!(f.name_line, Some(2));
    }

    #[test]
    fn key_typing_and_duplicates_match_yamlloader() {
        for front in [
            "1: a\n01: b\n",
            "1: a\n'1': b\n",
            "'1': a\n1: b\n'1': c\n",
            "true: a\nTrue: b\n",
            "~: a\nnull: b\n",
            "1.0: a\n1.00: b\n",
            "[a]: 1\n[a]: 2\n",
            "{a: 1}: x\nb: y\n",
            "!!int x: 1\nb: 2\n",
            "a: !!float 1\nb: !!float .inf\nc: !!null x\nd: !!bool yes\ne: !foo 1\n",
            "a: 0x1F\nb: 0o17\nc: +5\nd: 1e3\ne: .NaN\nf: -.inf\ng: inf\n",
            "a: &x 1.50\n*x : b\n",
            "a: &x [1]\nb: *x\nc: &x [2]\nd: *x\n",
            "a: &x [*x]\n",
            "a: 1\n---\nb: *nope\n",
            "a: &x 1\n---\nb: *x\n",
            "--- 1\n",
            "- a\n",
            "--- \n...\n",
            "a: b\n... \n--- \nc: [\n",
        ] {
            agrees(front).unwrap();
        }
    }

    /// Pieces of YAML, including every construct the reader types or tracks.
    fn token() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "a",
            "b",
            "name",
            "description",
            "\"q\"",
            "'s'",
            "\"\\e[1m\"",
            "1",
            "01",
            "0x1f",
            "0o7",
            "+3",
            "1.5",
            "1e3",
            ".inf",
            "-.Inf",
            ".nan",
            "true",
            "False",
            "~",
            "null",
            ": ",
            ":",
            "- ",
            "-",
            "? ",
            "[",
            "]",
            "{",
            "}",
            ", ",
            ",",
            "\n",
            "\n  ",
            "\n    ",
            "  ",
            "&a ",
            "&b ",
            "*a",
            "*b",
            "!!int ",
            "!!str ",
            "!!float ",
            "!!bool ",
            "!!null ",
            "!x ",
            "|\n  ",
            ">-\n  ",
            " #c",
            "---\n",
            "...\n",
            "\t",
            "%YAML 1.2\n",
            "<example>",
            "</example>",
            "é",
            "\u{202e}",
        ])
    }

    fn yamlish() -> impl Strategy<Value = String> {
        prop::collection::vec(token(), 0..48).prop_map(|t| t.concat())
    }

    /// Anchored lists of aliases to earlier anchors, of random width and shape: the family of
    /// alias bombs.
    fn bomb() -> impl Strategy<Value = String> {
        (1usize..12, 1usize..14, any::<bool>(), any::<bool>()).prop_map(
            |(levels, width, block, mapping)| {
                let mut out = String::from("name: n\n");
                for level in 0..levels {
                    let item = if level == 0 {
                        "x".to_string()
                    } else {
                        format!("*l{}", level - 1)
                    };
                    let items: Vec<String> = (0..width)
                        .map(|i| {
                            if mapping {
                                format!("k{i}: {item}")
                            } else {
                                item.clone()
                            }
                        })
                        .collect();
                    let (open, close) = if mapping { ("{", "}") } else { ("[", "]") };
                    if block {
                        out.push_str(&format!("l{level}: &l{level}\n"));
                        for i in items {
                            if mapping {
                                out.push_str(&format!("  {i}\n"));
                            } else {
                                out.push_str(&format!("  - {i}\n"));
                            }
                        }
                    } else {
                        out.push_str(&format!(
                            "l{level}: &l{level} {open}{}{close}\n",
                            items.join(", ")
                        ));
                    }
                }
                out
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn split_never_panics_and_slices_the_input(text in "(---|\r|\n|\u{feff}| |a|:|-){0,64}") {
            let normalized = normalize(&text);
            prop_assert!(!normalized.contains('\r'));
            if let Ok(s) = split(&normalized) {
                prop_assert!(s.open_line >= 1);
                prop_assert!(normalized.ends_with(s.body));
                prop_assert!(normalized.contains(s.front));
                prop_assert!(s.front.len() + s.body.len() <= normalized.len());
            }
        }

        #[test]
        fn split_never_panics_on_any_text(text in any::<String>()) {
            let normalized = normalize(&text);
            let _ = split(&normalized);
            let _ = split(&text);
        }

        #[test]
        fn strict_matches_yamlloader_on_generated_yaml(front in yamlish()) {
            agrees(&front)?;
        }

        #[test]
        fn readings_never_panic_and_stay_bounded(front in prop_oneof![yamlish(), any::<String>()]) {
            let readings = [
                strict(&front, &mut Budget::default()).ok(),
                lenient(&front, &mut Budget::default()).ok(),
            ];
            for f in readings.into_iter().flatten() {
                let v = Value::Object(f.map);
                prop_assert!(count(&v) <= MAX_YAML_NODES);
                prop_assert!(depth(&v) <= MAX_YAML_DEPTH);
            }
        }

    }

    proptest! {
        // Each case may build up to the whole budget, twice: fewer cases keep this quick.
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn alias_bombs_of_any_shape_are_refused_or_small(front in bomb()) {
            let start = Instant::now();
            let result = strict(&front, &mut Budget::default());
            prop_assert!(start.elapsed() < Duration::from_secs(2));
            match result {
                Ok(f) => prop_assert!(count(&Value::Object(f.map)) <= MAX_YAML_NODES),
                Err(StrictError::Limit(hit)) => prop_assert!(hit.limit.starts_with("MAX_YAML_")),
                Err(e) => prop_assert!(false, "{:?}: {:?}", front, e),
            }
            // The same bomb under one key of a frontmatter that only the lenient reading takes.
            let indented: String = front.lines().map(|l| format!("  {l}\n")).collect();
            let lenient_front = format!("description: a: b\nbomb:\n{indented}");
            match lenient(&lenient_front, &mut Budget::default()) {
                Ok(f) => prop_assert!(count(&Value::Object(f.map)) <= MAX_YAML_NODES),
                Err(hit) => prop_assert!(hit.limit.starts_with("MAX_YAML_")),
            }
        }
    }
}

#[cfg(test)]
mod robustness {
    use crate::parse_agent;
    use std::path::Path;

    #[test]
    fn odd_inputs_never_panic() {
        let deep = format!("---\nname: {}\n---\n", "[".repeat(200_000));
        let deep_map = format!("---\n{}\n---\n", "a:\n ".repeat(50_000));
        let cases: Vec<String> = vec![
            "".into(),
            "---".into(),
            "---\n---".into(),
            "\u{feff}".into(),
            "---\r\n".into(),
            "---\n: \n---\n".into(),
            "---\n- a\n- b\n---\n".into(),
            "---\nname: |\n---\n".into(),
            "---\nname: \"unterminated\ndescription: x\n---\n".into(),
            "---\n\tname: tab\n---\n".into(),
            "---\nnäme: ü: ö\ndescription: é\n---\n".into(),
            "---\nname: a\ndescription: b\nname: c\n---\n".into(),
            "---\n&a [*a]\n---\n".into(),
            "---\nname: *nope\ndescription: d\n---\n".into(),
            deep,
            deep_map,
        ];
        for c in &cases {
            let _ = parse_agent(Path::new("odd.md"), c);
        }
    }
}
