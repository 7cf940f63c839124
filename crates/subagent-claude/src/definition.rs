//! The typed agent definition and the parser that builds it from Markdown text.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use subagent_spi::SubagentReference;

use crate::KIND;
use crate::error::ClaudeError;
use crate::frontmatter::{self, Budget, SplitError, StrictError};

/// One entry of a `tools` or `disallowedTools` list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolRule {
    /// An exact tool name, e.g. `Read` or `mcp__github__create_issue`.
    Name(String),
    /// A name prefix ending in `*`, e.g. `mcp__github__*` (`*` alone matches every tool).
    Prefix(String),
    /// A tool with an argument restriction, e.g. `Agent(explore, plan)` or `Bash(git:*)`.
    Scoped {
        /// The tool name before the parenthesis.
        name: String,
        /// The text inside the parentheses.
        spec: String,
    },
}

impl ToolRule {
    /// Parses one entry (`Read`, `mcp__server__*`, `Agent(a, b)`).
    pub fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        if let Some(open) = entry.find('(')
            && entry.ends_with(')')
        {
            let name = entry[..open].trim().to_string();
            let spec = entry[open + 1..entry.len() - 1].trim().to_string();
            if name.is_empty() {
                return None;
            }
            return Some(ToolRule::Scoped { name, spec });
        }
        if let Some(prefix) = entry.strip_suffix('*') {
            return Some(ToolRule::Prefix(prefix.to_string()));
        }
        Some(ToolRule::Name(entry.to_string()))
    }

    /// The tool name (or prefix) this rule is about.
    pub fn name(&self) -> &str {
        match self {
            ToolRule::Name(n) | ToolRule::Prefix(n) => n,
            ToolRule::Scoped { name, .. } => name,
        }
    }

    /// True when the rule names the tool `tool` (for scoped rules: the tool, ignoring the
    /// argument restriction). `Task` and `Agent` are the same tool.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            ToolRule::Name(n) | ToolRule::Scoped { name: n, .. } => same_tool(n, tool),
            ToolRule::Prefix(p) => tool.starts_with(p.as_str()),
        }
    }

    /// True for `Agent(...)` / `Task(...)` / `Agent` / `Task`: the delegation tool.
    pub fn is_delegation(&self) -> bool {
        matches!(self, ToolRule::Name(n) | ToolRule::Scoped { name: n, .. } if is_task_name(n))
    }
}

impl fmt::Display for ToolRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolRule::Name(n) => f.write_str(n),
            ToolRule::Prefix(p) => write!(f, "{p}*"),
            ToolRule::Scoped { name, spec } => write!(f, "{name}({spec})"),
        }
    }
}

/// True for the names of the delegation tool (`Task`, and `Agent`, its newer name).
pub fn is_task_name(name: &str) -> bool {
    name == "Task" || name == "Agent"
}

fn same_tool(rule: &str, tool: &str) -> bool {
    rule == tool || (is_task_name(rule) && is_task_name(tool))
}

/// Splits a `tools` string on commas outside parentheses (and on whitespace inside an entry
/// without parentheses, since tool names never contain spaces).
pub fn parse_tool_list(text: &str) -> Vec<ToolRule> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0usize;
    let push = |piece: &str, out: &mut Vec<ToolRule>| {
        let piece = piece.trim();
        if piece.contains('(') {
            out.extend(ToolRule::parse(piece));
        } else {
            out.extend(piece.split_whitespace().filter_map(ToolRule::parse));
        }
    };
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = (depth - 1).max(0),
            ',' if depth == 0 => {
                push(&text[start..i], &mut out);
                start = i + 1;
            }
            _ => {}
        }
    }
    push(&text[start..], &mut out);
    out
}

/// The `model` field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelChoice {
    /// `inherit`: use the parent's model.
    Inherit,
    /// An alias (`sonnet`, `opus`, `haiku`), a full model id, or `provider:model`; resolved
    /// through the model registry at run time.
    Named(String),
}

/// The `permissionMode` field, with Claude Code's meanings (see the crate's permission table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PermissionMode {
    /// Reads run; edits, commands and web fetches ask (`default`, also `manual`).
    #[default]
    Default,
    /// Reads and edits run; commands and web fetches ask.
    AcceptEdits,
    /// Read-only: only read-only (and delegation) tools may run.
    Plan,
    /// Nothing asks: everything runs (deny rules still hold; Bash stays confined).
    BypassPermissions,
    /// Whatever would ask is denied: only reads and calls allowed by a rule run.
    DontAsk,
    /// Claude Code's classifier-driven mode. There is no classifier here: treated like
    /// `bypassPermissions` (nothing asks; deny rules still hold), as before.
    Auto,
}

impl std::str::FromStr for PermissionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| {
            format!(
                "unknown permission mode `{s}`; valid modes: {}",
                Self::VALID.join(", ")
            )
        })
    }
}

impl PermissionMode {
    /// The mode names accepted (as Claude Code spells them; `manual` is also read as
    /// `default`).
    pub const VALID: &'static [&'static str] = &[
        "default",
        "acceptEdits",
        "plan",
        "dontAsk",
        "bypassPermissions",
        "auto",
    ];

    /// Parses a mode name, ignoring case, `-` and `_`; `None` for an unknown name.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match frontmatter::fold_key(text.trim()).as_str() {
            "default" | "manual" => PermissionMode::Default,
            "acceptedits" => PermissionMode::AcceptEdits,
            "plan" => PermissionMode::Plan,
            "bypasspermissions" => PermissionMode::BypassPermissions,
            "dontask" => PermissionMode::DontAsk,
            "auto" => PermissionMode::Auto,
            _ => return None,
        })
    }

    /// True for the modes that ask less than `default` (`acceptEdits`, `bypassPermissions`,
    /// `auto`): a setting that selects one lifts a limit.
    pub fn lifts_limits(self) -> bool {
        matches!(
            self,
            PermissionMode::AcceptEdits | PermissionMode::BypassPermissions | PermissionMode::Auto
        )
    }

    /// The canonical name, as Claude Code spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Auto => "auto",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Claude Code-style agent: frontmatter configuration plus the Markdown body, which is the
/// agent's system prompt.
///
/// Implements [`SubagentDefinition`](subagent_spi::SubagentDefinition); executors get it back with
/// `definition.downcast_ref::<ClaudeAgentDefinition>()`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClaudeAgentDefinition {
    /// `name`, as written (registration uses it unchanged).
    pub name: String,
    /// `description`: when to use the agent.
    pub description: String,
    /// The body: the agent's system prompt (trimmed).
    pub prompt: String,
    /// `tools`: the allow-list; `None` = every configured tool.
    pub tools: Option<Vec<ToolRule>>,
    /// `disallowedTools`: removed before the allow-list applies.
    pub disallowed_tools: Vec<ToolRule>,
    /// `model`.
    pub model: Option<ModelChoice>,
    /// `permissionMode` (absent = [`PermissionMode::Default`]).
    pub permission_mode: PermissionMode,
    /// `maxTurns`.
    pub max_turns: Option<u32>,
    /// `skills`: names of skills whose text is preloaded into the system prompt.
    pub skills: Vec<String>,
    /// `mcpServers`, as written (not started by this crate; a host may read it).
    pub mcp_servers: Option<Value>,
    /// `hooks`, as written: command hooks run around this agent's tool calls and at its end
    /// (see [`crate::hooks`]).
    pub hooks: Option<Value>,
    /// `memory`, as written: `user`, `project` or `local` (see [`crate::memory`]).
    pub memory: Option<Value>,
    /// `background`: a `Task` call that does not set `run_in_background` starts the agent in
    /// the background ([`SubagentDefinition::runs_in_background_by_default`](subagent_spi::SubagentDefinition::runs_in_background_by_default); the executor
    /// itself always runs in the foreground of its caller).
    pub background: Option<bool>,
    /// `effort`: `low`, `medium`, `high`, `xhigh` (read as `max`) or `max`, sent with each
    /// model request.
    pub effort: Option<String>,
    /// `isolation`: `worktree` runs the agent in a temporary `git worktree`.
    pub isolation: Option<String>,
    /// `color`: the agent's colour in a host's display (one of [`AGENT_COLORS`]).
    pub color: Option<String>,
    /// `initialPrompt`: the first user message when the agent runs as a main agent (a
    /// subagent's first message is always the `Task` prompt).
    pub initial_prompt: Option<String>,
    /// `omitClaudeMd: true`: the project's instructions (`CLAUDE.md`, `AGENTS.md`, see
    /// [`ProjectInstructions`](crate::ProjectInstructions)) are left out of this agent's
    /// system prompt, as in Claude Code.
    pub omit_claude_md: bool,
    /// `budget` (an extension of ours; `maxBudgetUsd`, the Claude Agent SDK's name, sets its
    /// `usd`): the agent's own budget over its whole subtree, e.g.
    /// `budget: {tokens: 50000, turns: 20, time: 5m, usd: 0.5}`
    /// ([`SubagentDefinition::budget`](subagent_spi::SubagentDefinition::budget)).
    pub budget: Option<subagent_spi::BudgetLimits>,
    /// `outputSchema` (an extension of ours): the JSON Schema of the agent's result when a
    /// `Task` call gives none, written inline as YAML or JSON
    /// ([`SubagentDefinition::output_schema`](subagent_spi::SubagentDefinition::output_schema)).
    /// Checked when the file loads, under the strict profile of schemas from outside
    /// (`subagent_schema::Profile::untrusted`: at most 16 KiB, no `$ref`); one that fails is
    /// ignored with a warning.
    pub output_schema: Option<Value>,
    /// Every other frontmatter key, kept as written.
    pub metadata: Map<String, Value>,
    /// The file the agent came from, when it came from one.
    pub source: Option<PathBuf>,
    /// 1-based line of the `name` field in [`source`](Self::source), when known.
    pub name_line: Option<usize>,
    /// What loading the file warned about (lenient YAML, ignored fields and values), as in
    /// [`ParsedAgent::warnings`]; [`agent_load_warnings`](crate::agent_load_warnings) adds what
    /// depends on the host (tools, models, memory location).
    pub load_warnings: Vec<String>,
    /// The reference it was resolved from.
    pub reference: SubagentReference,
}

impl ClaudeAgentDefinition {
    /// A minimal definition (for tests and programmatic agents).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        prompt: impl Into<String>,
    ) -> Self {
        let name = name.into();
        Self {
            reference: SubagentReference::new(format!("embedded:{name}"), KIND),
            name,
            description: description.into(),
            prompt: prompt.into(),
            tools: None,
            disallowed_tools: Vec::new(),
            model: None,
            permission_mode: PermissionMode::Default,
            max_turns: None,
            skills: Vec::new(),
            mcp_servers: None,
            hooks: None,
            memory: None,
            background: None,
            effort: None,
            isolation: None,
            color: None,
            initial_prompt: None,
            omit_claude_md: false,
            budget: None,
            output_schema: None,
            metadata: Map::new(),
            source: None,
            name_line: None,
            load_warnings: Vec::new(),
        }
    }

    /// Replaces the reference (builder style).
    #[must_use]
    pub fn with_reference(mut self, reference: SubagentReference) -> Self {
        self.reference = reference;
        self
    }

    /// The system prompt (the Markdown body).
    pub fn system_prompt(&self) -> &str {
        &self.prompt
    }

    /// The name, safe to print on a terminal (see [`escape_for_terminal`](Self::escape_for_terminal)).
    /// Names loaded from files never need escaping; programmatic ones may.
    pub fn name_for_terminal(&self) -> Cow<'_, str> {
        escape_for_terminal(&self.name)
    }

    /// The description, safe to print on a terminal: like
    /// [`escape_for_terminal`](Self::escape_for_terminal) but keeping newlines and tabs, since
    /// descriptions often run over several lines.
    pub fn description_for_terminal(&self) -> Cow<'_, str> {
        escape_for_terminal_multiline(&self.description)
    }

    /// Renders `text` safe to print on a terminal: control characters (C0 including newline and
    /// tab, DEL, C1), Unicode bidirectional-text controls (U+061C, U+200E, U+200F,
    /// U+202A–U+202E, U+2066–U+2069), line/paragraph separators (U+2028, U+2029) and the
    /// invisible format characters that can hide or fake text (soft hyphen U+00AD, U+180E,
    /// zero-width space U+200B, U+2060–U+2064, U+206A–U+206F, U+FEFF, the Hangul fillers,
    /// U+FFF9–U+FFFB and the tag characters U+E0000–U+E007F) become visible `\u{..}` escapes
    /// (ESC is shown as `\u{1b}`). The zero-width joiners U+200C and U+200D stay: emoji
    /// sequences and several scripts need them. Text without any of these is borrowed as it
    /// is. Backslashes are not doubled, so the output is for people, not for parsing back.
    ///
    /// ```
    /// use subagent_claude::ClaudeAgentDefinition;
    /// assert_eq!(ClaudeAgentDefinition::escape_for_terminal("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    /// ```
    pub fn escape_for_terminal(text: &str) -> Cow<'_, str> {
        escape_for_terminal(text)
    }
}

/// True for characters that can change how a terminal shows text around them: control
/// characters and Unicode bidirectional-text controls, the line and paragraph separators, and
/// invisible format characters (soft hyphen, zero-width space, word joiner, BOM, tag characters...).
pub fn is_terminal_hazard(c: char) -> bool {
    c.is_control()
        || is_bidi_control(c)
        || matches!(c, '\u{2028}' | '\u{2029}')
        || is_invisible_format(c)
}

/// Characters that show nothing (or only at a line break) yet are part of the text, so they
/// can make two strings look the same or hide text in one: the soft hyphen, the Mongolian
/// vowel separator, the zero-width space, the word joiner and invisible operators
/// (U+2060–U+2064), the deprecated format controls (U+206A–U+206F), the byte order mark, the
/// Hangul fillers, the interlinear annotation controls and the tag characters. The zero-width
/// non-joiner and joiner (U+200C, U+200D) are not among them: emoji and several scripts need
/// them.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{180e}'
            | '\u{200b}'
            | '\u{2060}'..='\u{2064}'
            | '\u{206a}'..='\u{206f}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// Bidirectional-text controls: embeddings and overrides (U+202A–U+202E), isolates
/// (U+2066–U+2069) and the marks (U+200E, U+200F, U+061C).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

fn escape_where(text: &str, hazard: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(first) = text.find(&hazard) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if hazard(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Renders `text` safe to print on one line of a terminal; see
/// [`ClaudeAgentDefinition::escape_for_terminal`].
pub fn escape_for_terminal(text: &str) -> Cow<'_, str> {
    escape_where(text, is_terminal_hazard)
}

/// Like [`escape_for_terminal`], but newlines and tabs are kept (for multi-line text such as
/// descriptions).
pub fn escape_for_terminal_multiline(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c != '\n' && c != '\t' && is_terminal_hazard(c))
}

/// Why `name` (already trimmed) cannot be an agent or skill name, or `None` when it can.
///
/// Refused: control characters (NUL and every other [`char::is_control`]) and the bidi
/// embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069), which would corrupt
/// a terminal or make a name display as another. Everything else Claude Code accepts loads
/// (spaces, capitals, `/`, `\`, `.` and `..`, non-Latin scripts): a name never becomes a path
/// or URL segment as written, only through [`agent_slug`](crate::agent_slug).
pub(crate) fn unsafe_name_reason(name: &str) -> Option<String> {
    for c in name.chars() {
        let reason = match c {
            '\0' => "it contains a NUL byte (U+0000)".to_string(),
            c if c.is_control() => format!(
                "it contains the control character U+{:04X}, which would be sent raw to terminals",
                u32::from(c)
            ),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => format!(
                "it contains the bidirectional-text control U+{:04X}, which can make a name \
                 display as a different one",
                u32::from(c)
            ),
            _ => continue,
        };
        return Some(reason);
    }
    None
}

subagent_spi::impl_subagent_definition!(ClaudeAgentDefinition {
    /// `background: true`: a `Task` call that does not say otherwise starts the agent in the
    /// background.
    fn runs_in_background_by_default(&self) -> bool {
        self.background == Some(true)
    }

    /// `budget` (and `maxBudgetUsd`).
    fn budget(&self) -> Option<subagent_spi::BudgetLimits> {
        self.budget.clone().filter(|b| !b.is_unlimited())
    }

    /// `outputSchema`.
    fn output_schema(&self) -> Option<Value> {
        self.output_schema.clone()
    }
});

/// The colours Claude Code offers for an agent's `color` (shown in the command's live tree).
/// `magenta`, common in published agent files, is accepted too (shown like `purple`).
pub const AGENT_COLORS: [&str; 8] = [
    "red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan",
];

/// The frontmatter keys an agent file may set (compared after `fold_key`): Claude Code's and
/// ours (`budget`, `maxBudgetUsd`, `outputSchema`).
const AGENT_FIELDS: &[&str] = &[
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
    "omitClaudeMd",
    "budget",
    "maxBudgetUsd",
    "outputSchema",
];

/// The agent field `key` looks like a misspelling of (`tool` for `tools`, `permisionMode` for
/// `permissionMode`): at most two edits away once folded, for keys of four characters or more.
fn misspelled_field(key: &str) -> Option<&'static str> {
    let folded = frontmatter::fold_key(key);
    if folded.chars().count() < 4 {
        return None;
    }
    AGENT_FIELDS
        .iter()
        .map(|f| (*f, edit_distance(&folded, &frontmatter::fold_key(f))))
        .filter(|(_, d)| (1..=2).contains(d))
        .min_by_key(|(_, d)| *d)
        .map(|(f, _)| f)
}

/// Levenshtein distance of two short strings (keys), by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let swap = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + swap).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Warnings for the field values of `def` that will not be acted on and that a person would
/// want to know about: a key that looks like a misspelled agent field, hooks that cannot run,
/// unknown `memory`, `isolation` or `effort` values. As in Claude Code, other keys
/// (`category`, `version`...) are kept in [`metadata`](ClaudeAgentDefinition::metadata)
/// quietly, and an unknown `color` just leaves the name uncoloured.
pub(crate) fn field_warnings(def: &ClaudeAgentDefinition) -> Vec<String> {
    let mut w = Vec::new();
    for key in def.metadata.keys() {
        if let Some(field) = misspelled_field(key) {
            w.push(format!(
                "field `{key}` is not an agent field (did you mean `{field}`?); it has no effect"
            ));
        }
    }
    if let Some(hooks) = &def.hooks {
        let (_, hook_warnings) = crate::hooks::Hooks::from_frontmatter(hooks);
        w.extend(hook_warnings.into_iter().map(|h| format!("hooks: {h}")));
    }
    if let Err(e) = crate::memory::MemoryScope::from_value(def.memory.as_ref()) {
        w.push(e);
    }
    if let Err(e) = crate::extras::parse_isolation(def.isolation.as_deref()) {
        w.push(e);
    }
    if let Some(effort) = &def.effort
        && crate::extras::parse_effort(effort).is_none()
    {
        w.push(format!(
            "unknown `effort: {effort}` (low, medium, high, xhigh or max); the model's default \
             is used"
        ));
    }
    w
}

/// A parsed agent and the warnings its file produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ParsedAgent {
    /// The definition (its `reference` is a file reference to `path_for_errors`).
    pub definition: ClaudeAgentDefinition,
    /// Things worth telling the user: lenient YAML, odd names, ignored values. Values quoted from
    /// the file are shown with control and bidi characters escaped.
    pub warnings: Vec<String>,
}

/// Frontmatter read from a document: the fields, the body, and how it was read.
pub(crate) struct Document<'a> {
    pub fields: Map<String, Value>,
    pub body: &'a str,
    pub open_line: usize,
    /// 1-based line, in the file, of the `name` field when it was found.
    pub name_line: Option<usize>,
    /// Set when strict YAML failed (and the lenient reading was used).
    pub strict_failure: Option<frontmatter::YamlFailure>,
}

/// Splits and reads a document's frontmatter (strict YAML, then lenient). `text` must already
/// be normalized.
fn read_document<'a>(
    path: &Path,
    text: &'a str,
    warnings: &mut Vec<String>,
) -> Result<Document<'a>, ClaudeError> {
    let split = frontmatter::split(text).map_err(|e| match e {
        SplitError::NoFrontmatter => ClaudeError::NoFrontmatter {
            path: path.to_path_buf(),
        },
        SplitError::Unclosed(line) => ClaudeError::UnclosedFrontmatter {
            path: path.to_path_buf(),
            line,
        },
    })?;
    // yaml-rust2 reads a NUL as the end of the input: the fields after it would vanish
    // silently (a `permissionMode: plan` or `disallowedTools` line, say).
    if let Some(at) = split.front.find('\0') {
        return Err(nul_error(path, split.front, at, split.open_line));
    }
    let limit_error = |hit: frontmatter::LimitHit| ClaudeError::YamlLimit {
        path: path.to_path_buf(),
        line: hit.line.map(|l| l + split.open_line),
        limit: hit.limit,
        max: hit.max as u64,
        message: hit.message,
    };
    let (fields, strict_failure) = match frontmatter::strict(split.front, &mut Budget::default()) {
        Ok(fields) => (fields, None),
        Err(StrictError::Limit(hit)) => return Err(limit_error(hit)),
        Err(StrictError::Syntax(failure)) => {
            // A fresh budget: the failed strict reading's values are already dropped.
            let fields =
                frontmatter::lenient(split.front, &mut Budget::default()).map_err(limit_error)?;
            let file_line = failure.line.map(|l| l + split.open_line);
            if fields.map.is_empty() {
                return Err(ClaudeError::Yaml {
                    path: path.to_path_buf(),
                    line: file_line,
                    message: failure.message,
                });
            }
            warnings.push(format!(
                "frontmatter is not strict YAML ({}{}); read it leniently",
                failure.message,
                file_line
                    .map(|l| format!(" at line {l}"))
                    .unwrap_or_default()
            ));
            (fields, Some(failure))
        }
    };
    Ok(Document {
        name_line: fields.name_line.map(|l| l + split.open_line),
        fields: fields.map,
        body: split.body,
        open_line: split.open_line,
        strict_failure,
    })
}

/// The error for a NUL byte at byte `at` of the frontmatter: an unsafe name when it is on the
/// `name` line, a YAML error naming the line otherwise.
fn nul_error(path: &Path, front: &str, at: usize, open_line: usize) -> ClaudeError {
    let line_start = front[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = front[at..].find('\n').map_or(front.len(), |i| at + i);
    let line = open_line + 1 + front[..line_start].matches('\n').count();
    let text = &front[line_start..line_end];
    if let Some((key, value)) = text.split_once(':')
        && key.trim_end() == "name"
    {
        return ClaudeError::UnsafeName {
            path: path.to_path_buf(),
            line,
            name: frontmatter::unquote(value.trim()).to_string(),
            reason: "it contains a NUL byte (U+0000), where the YAML reader would stop reading"
                .to_string(),
        };
    }
    ClaudeError::Yaml {
        path: path.to_path_buf(),
        line: Some(line),
        message: "the frontmatter contains a NUL byte (U+0000); YAML does not allow it, and the \
                  reader would silently drop everything after it"
            .to_string(),
    }
}

/// A scalar as text (numbers and booleans are written out); `None` for null, lists and maps.
pub(crate) fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Reads a document (see [`read_document`]) and takes the fields agent and skill files both
/// require: a safe `name` ([`required_name`]) and a `description`.
pub(crate) fn read_named_document<'a>(
    path: &Path,
    text: &'a str,
    warnings: &mut Vec<String>,
) -> Result<(Document<'a>, String, String), ClaudeError> {
    let mut doc = read_document(path, text, warnings)?;
    let name = required_name(&mut doc, path)?;
    let description = required_text(&mut doc, path, "description")?;
    Ok((doc, name, description))
}

/// Takes a required text field, erroring with the path and line when absent or empty.
fn required_text(
    doc: &mut Document<'_>,
    path: &Path,
    field: &'static str,
) -> Result<String, ClaudeError> {
    match doc.fields.remove(field) {
        None | Some(Value::Null) => Err(missing(doc, path, field)),
        Some(v) => match scalar_text(&v) {
            Some(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(_) => Err(missing(doc, path, field)),
            None => Err(ClaudeError::InvalidField {
                path: path.to_path_buf(),
                field: field.to_string(),
                line: doc.open_line,
                message: "must be text, not a list or a map".to_string(),
            }),
        },
    }
}

/// Takes the required `name`, refusing names that hold control or bidi characters
/// ([`unsafe_name_reason`]).
fn required_name(doc: &mut Document<'_>, path: &Path) -> Result<String, ClaudeError> {
    let name = required_text(doc, path, "name")?;
    match unsafe_name_reason(&name) {
        None => Ok(name),
        Some(reason) => Err(ClaudeError::UnsafeName {
            path: path.to_path_buf(),
            line: doc.name_line.unwrap_or(doc.open_line),
            name,
            reason,
        }),
    }
}

/// Warnings quote values from the file (keys, `permissionMode`, list entries): control and bidi
/// characters in them are shown escaped.
pub(crate) fn terminal_safe(mut warnings: Vec<String>) -> Vec<String> {
    for w in &mut warnings {
        if let Cow::Owned(escaped) = escape_for_terminal(w) {
            *w = escaped;
        }
    }
    warnings
}

/// A warning when a description holds characters that would act on a terminal (newlines and
/// tabs are fine); it names up to three of them.
pub(crate) fn description_warning(description: &str) -> Option<String> {
    let mut found: Vec<String> = Vec::new();
    for c in description.chars() {
        if c != '\n' && c != '\t' && is_terminal_hazard(c) {
            let code = format!("U+{:04X}", u32::from(c));
            if !found.contains(&code) {
                found.push(code);
            }
            if found.len() == 3 {
                break;
            }
        }
    }
    if found.is_empty() {
        return None;
    }
    Some(format!(
        "`description` holds terminal control or bidi characters ({}); print it escaped \
         (ClaudeAgentDefinition::description_for_terminal)",
        found.join(", ")
    ))
}

fn missing(doc: &Document<'_>, path: &Path, field: &'static str) -> ClaudeError {
    // When strict YAML failed, the YAML error is the better explanation.
    if let Some(f) = &doc.strict_failure {
        return ClaudeError::Yaml {
            path: path.to_path_buf(),
            line: f.line.map(|l| l + doc.open_line),
            message: format!("{} (and no `{field}` could be read leniently)", f.message),
        };
    }
    ClaudeError::MissingField {
        path: path.to_path_buf(),
        field,
        line: doc.open_line,
    }
}

/// True for `lowercase-hyphen` names.
pub fn is_canonical_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Parses one agent file's text. `path_for_errors` names the file in errors and becomes the
/// definition's reference URI and `source`.
///
/// ```
/// let parsed = subagent_claude::parse_agent(
///     "agents/reviewer.md".as_ref(),
///     "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\n---\nYou review code.\n",
/// ).unwrap();
/// assert_eq!(parsed.definition.name, "reviewer");
/// assert_eq!(parsed.definition.prompt, "You review code.");
/// assert!(parsed.warnings.is_empty());
/// ```
pub fn parse_agent(path_for_errors: &Path, text: &str) -> Result<ParsedAgent, ClaudeError> {
    let normalized = frontmatter::normalize(text);
    let mut warnings = Vec::new();
    let (mut doc, name, description) =
        read_named_document(path_for_errors, &normalized, &mut warnings)?;
    warnings.extend(description_warning(&description));
    let reference = SubagentReference::new(path_for_errors.to_string_lossy().into_owned(), KIND);
    let mut def = ClaudeAgentDefinition::new(name, description, doc.body.trim());
    def.reference = reference;
    def.source = Some(path_for_errors.to_path_buf());
    def.name_line = doc.name_line;
    check_permission_mode(&doc, path_for_errors, &normalized)?;
    apply_fields(&mut def, std::mem::take(&mut doc.fields), &mut warnings);
    warnings.extend(field_warnings(&def));
    let warnings = terminal_safe(warnings);
    def.load_warnings = warnings.clone();
    Ok(ParsedAgent {
        definition: def,
        warnings,
    })
}

/// An unknown `permissionMode` is an error naming the file, the line and the valid modes (the
/// file is skipped like any invalid agent).
fn check_permission_mode(doc: &Document<'_>, path: &Path, text: &str) -> Result<(), ClaudeError> {
    let Some((key, value)) = doc
        .fields
        .iter()
        .find(|(k, _)| frontmatter::fold_key(k) == "permissionmode")
    else {
        return Ok(());
    };
    let Some(mode) = scalar_text(value).map(|s| s.trim().to_string()) else {
        return Ok(());
    };
    if mode.is_empty() || PermissionMode::parse(&mode).is_some() {
        return Ok(());
    }
    // The line of the key: the first line after the opening `---` that starts with it.
    let line = text
        .lines()
        .enumerate()
        .skip(doc.open_line)
        .find(|(_, l)| {
            l.split_once(':')
                .is_some_and(|(k, _)| k.trim() == key.as_str())
        })
        .map_or(doc.open_line, |(i, _)| i + 1);
    Err(ClaudeError::InvalidField {
        path: path.to_path_buf(),
        field: key.clone(),
        line,
        message: format!(
            "is `{}`, which is not a permission mode; valid modes: {}",
            escape_for_terminal(&mode),
            PermissionMode::VALID.join(", ")
        ),
    })
}

fn tool_rules(field: &str, v: Value, warnings: &mut Vec<String>) -> Option<Vec<ToolRule>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(parse_tool_list(&s)),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                match scalar_text(&item) {
                    Some(s) => out.extend(parse_tool_list(&s)),
                    None => warnings.push(format!("`{field}`: ignored a non-text entry {item}")),
                }
            }
            Some(out)
        }
        other => {
            warnings.push(format!(
                "`{field}` must be a comma-separated string or a list; ignored {other}"
            ));
            None
        }
    }
}

fn text_list(field: &str, v: Value, warnings: &mut Vec<String>) -> Vec<String> {
    let split = |s: &str| {
        s.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    match v {
        Value::Null => Vec::new(),
        Value::String(s) => split(&s),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| {
                let t = scalar_text(i);
                if t.is_none() {
                    warnings.push(format!("`{field}`: ignored a non-text entry {i}"));
                }
                t
            })
            .flat_map(|s| split(&s))
            .collect(),
        other => {
            warnings.push(format!(
                "`{field}` must be a string or a list; ignored {other}"
            ));
            Vec::new()
        }
    }
}

fn opt_text(field: &str, v: Value, warnings: &mut Vec<String>) -> Option<String> {
    if v.is_null() {
        return None;
    }
    let t = scalar_text(&v);
    if t.is_none() {
        warnings.push(format!("`{field}` must be text; ignored {v}"));
    }
    t.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn apply_fields(def: &mut ClaudeAgentDefinition, fields: Map<String, Value>, w: &mut Vec<String>) {
    for (key, value) in fields {
        match frontmatter::fold_key(&key).as_str() {
            "tools" => def.tools = tool_rules(&key, value, w),
            "disallowedtools" => {
                def.disallowed_tools = tool_rules(&key, value, w).unwrap_or_default()
            }
            "model" => {
                def.model = opt_text(&key, value, w).map(|m| {
                    if m.eq_ignore_ascii_case("inherit") {
                        ModelChoice::Inherit
                    } else {
                        ModelChoice::Named(m)
                    }
                })
            }
            "permissionmode" => {
                // Unknown modes were refused by `check_permission_mode`.
                if let Some(m) = opt_text(&key, value, w).and_then(|t| PermissionMode::parse(&t)) {
                    def.permission_mode = m;
                }
            }
            "maxturns" => {
                let n = match &value {
                    Value::Number(n) => n.as_u64(),
                    Value::String(s) => s.trim().parse::<u64>().ok(),
                    Value::Null => continue,
                    _ => None,
                };
                match n.and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0) {
                    Some(n) => def.max_turns = Some(n),
                    None => w.push(format!(
                        "`maxTurns` must be a positive whole number; ignored {value}"
                    )),
                }
            }
            "skills" => def.skills = text_list(&key, value, w),
            "mcpservers" => def.mcp_servers = Some(value).filter(|v| !v.is_null()),
            "hooks" => def.hooks = Some(value).filter(|v| !v.is_null()),
            "memory" => def.memory = Some(value).filter(|v| !v.is_null()),
            "background" => def.background = flag(&key, &value, w),
            "omitclaudemd" => def.omit_claude_md = flag(&key, &value, w).unwrap_or(false),
            "effort" => def.effort = opt_text(&key, value, w),
            "isolation" => def.isolation = opt_text(&key, value, w),
            "color" => def.color = opt_text(&key, value, w),
            "initialprompt" => def.initial_prompt = opt_text(&key, value, w),
            "budget" => read_budget(def, value, w),
            "outputschema" => def.output_schema = read_output_schema(&key, value, w),
            "maxbudgetusd" => {
                if let Some(usd) = budget_usd(&value) {
                    def.budget.get_or_insert_with(Default::default).usd = Some(usd);
                } else if !value.is_null() {
                    w.push(format!(
                        "`{key}` must be a positive amount of USD; ignored {value}"
                    ));
                }
            }
            _ => {
                def.metadata.insert(key, value);
            }
        }
    }
}

/// A `true`/`false` field (also written as text); `None` when absent, with a warning when it is
/// something else.
fn flag(key: &str, value: &Value, w: &mut Vec<String>) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Some(false),
        Value::Null => None,
        other => {
            w.push(format!("`{key}` must be true or false; ignored {other}"));
            None
        }
    }
}

/// `outputSchema`: a schema written inline (YAML, or JSON text), accepted under the strict
/// profile; anything else is ignored with a warning.
fn read_output_schema(key: &str, value: Value, w: &mut Vec<String>) -> Option<Value> {
    let schema = match value {
        Value::Null => return None,
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(v) => v,
            Err(e) => {
                w.push(format!(
                    "`{key}` must be a JSON Schema (a mapping, or JSON text); ignored: {e}"
                ));
                return None;
            }
        },
        other => other,
    };
    match subagent_schema::OutputSchema::compile(&schema, subagent_schema::Profile::untrusted()) {
        Ok(_) => Some(schema),
        Err(e) => {
            w.push(format!("`{key}` ignored: {e}"));
            None
        }
    }
}

/// A positive amount of USD: a number, or text such as `0.5` or `$0.5`.
fn budget_usd(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_start_matches('$').trim().parse::<f64>().ok(),
        _ => None,
    }?;
    (x.is_finite() && x > 0.0).then_some(x)
}

/// A positive whole number (a number or digits as text).
fn budget_count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().replace('_', "").parse::<u64>().ok(),
        _ => None,
    }
    .filter(|n| *n > 0)
}

/// A wall time: seconds as a number, or text with a unit (`500ms`, `90s`, `5m`, `1h`; no unit
/// means seconds).
fn budget_time(v: &Value) -> Option<std::time::Duration> {
    let secs = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => {
            let s = s.trim();
            let split = s
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: f64 = num.parse().ok()?;
            match unit.trim() {
                "" | "s" | "sec" | "secs" => n,
                "ms" => n / 1000.0,
                "m" | "min" | "mins" => n * 60.0,
                "h" => n * 3600.0,
                _ => return None,
            }
        }
        _ => return None,
    };
    // Up to a year: a bound any real budget is under, and safe for `Duration`.
    (secs.is_finite() && secs > 0.0 && secs <= 365.0 * 24.0 * 3600.0)
        .then(|| std::time::Duration::from_secs_f64(secs))
}

/// `budget: {tokens, turns, time, usd}` (also `time_secs`); a value that cannot be read is a
/// warning naming it, the rest of the budget still applies.
fn read_budget(def: &mut ClaudeAgentDefinition, value: Value, w: &mut Vec<String>) {
    let Value::Object(fields) = value else {
        if !value.is_null() {
            w.push(format!(
                "`budget` must be a map such as {{tokens: 50000, turns: 20, time: 5m, usd: 0.5}}; ignored {value}"
            ));
        }
        return;
    };
    let b = def.budget.get_or_insert_with(Default::default);
    for (k, v) in fields {
        let bad = |what: &str| format!("`budget.{k}` must be {what}; ignored {v}");
        match frontmatter::fold_key(&k).as_str() {
            "tokens" => match budget_count(&v) {
                Some(n) => b.tokens = Some(n),
                None => w.push(bad("a positive whole number of tokens")),
            },
            "turns" => match budget_count(&v).and_then(|n| u32::try_from(n).ok()) {
                Some(n) => b.turns = Some(n),
                None => w.push(bad("a positive whole number of turns")),
            },
            "time" | "timesecs" => match budget_time(&v) {
                Some(t) => b.time = Some(t),
                None => w.push(bad("a wall time such as 90, 90s, 5m or 1h")),
            },
            "usd" => match budget_usd(&v) {
                Some(x) => b.usd = Some(x),
                None => w.push(bad("a positive amount of USD")),
            },
            _ => w.push(format!(
                "`budget.{k}` is not a budget limit (tokens, turns, time, usd); ignored"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use subagent_spi::SubagentDefinition;

    #[test]
    fn a_budget_is_read_from_the_frontmatter_and_bad_values_are_warnings() {
        let p = parse(
            "---\nname: a\ndescription: d\nbudget: {tokens: 5000, turns: 10, time: 2m, usd: 0.5}\n---\n",
        );
        let b = p.definition.budget().expect("a budget");
        assert_eq!(b.tokens, Some(5000));
        assert_eq!(b.turns, Some(10));
        assert_eq!(b.time, Some(std::time::Duration::from_secs(120)));
        assert_eq!(b.usd, Some(0.5));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);

        let p = parse(
            "---\nname: a\ndescription: d\nmaxBudgetUsd: 1.25\nbudget:\n  tokens: -3\n  time: soon\n  wallet: 9\n  turns: 4\n---\n",
        );
        let b = p.definition.budget().expect("a budget");
        assert_eq!(
            (b.usd, b.turns, b.tokens, b.time),
            (Some(1.25), Some(4), None, None)
        );
        let w = p.warnings.join("\n");
        assert!(
            w.contains("`budget.tokens` must be a positive whole number"),
            "{w}"
        );
        assert!(w.contains("`budget.time` must be a wall time"), "{w}");
        assert!(w.contains("`budget.wallet` is not a budget limit"), "{w}");

        let p = parse("---\nname: a\ndescription: d\nbudget: lots\n---\n");
        assert!(p.definition.budget().is_none());
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("`budget` must be a map"))
        );
        assert!(
            parse("---\nname: a\ndescription: d\n---\n")
                .definition
                .budget()
                .is_none()
        );
    }

    fn parse(text: &str) -> ParsedAgent {
        parse_agent(Path::new("t.md"), text).unwrap()
    }

    #[test]
    fn all_fields() {
        let p = parse(
            "---\nname: full\ndescription: d\ntools: Read, mcp__gh__*, Agent(a, b)\ndisallowedTools: [Write]\nmodel: inherit\npermissionMode: acceptEdits\nmaxTurns: 7\nskills: s1\nmcpServers:\n  gh: {command: x}\nhooks: {}\nmemory: project\nbackground: true\neffort: high\nisolation: worktree\ncolor: blue\ninitialPrompt: go\nversion: 2\n---\nbody\n",
        );
        let d = p.definition;
        assert_eq!(
            d.tools,
            Some(vec![
                ToolRule::Name("Read".into()),
                ToolRule::Prefix("mcp__gh__".into()),
                ToolRule::Scoped {
                    name: "Agent".into(),
                    spec: "a, b".into()
                }
            ])
        );
        assert_eq!(d.disallowed_tools, vec![ToolRule::Name("Write".into())]);
        assert_eq!(d.model, Some(ModelChoice::Inherit));
        assert_eq!(d.permission_mode, PermissionMode::AcceptEdits);
        assert_eq!(d.max_turns, Some(7));
        assert_eq!(d.skills, vec!["s1"]);
        assert!(d.mcp_servers.is_some());
        assert_eq!(d.memory, Some(Value::String("project".into())));
        assert_eq!(d.background, Some(true));
        assert_eq!(d.effort.as_deref(), Some("high"));
        assert_eq!(d.isolation.as_deref(), Some("worktree"));
        assert_eq!(d.color.as_deref(), Some("blue"));
        assert_eq!(d.initial_prompt.as_deref(), Some("go"));
        assert_eq!(d.metadata["version"], 2);
        assert_eq!(d.prompt, "body");
        assert!(d.runs_in_background_by_default());
        // Claude Code ignores other keys quietly; so do we (they stay in `metadata`).
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn unknown_keys_are_quiet_unless_they_look_like_a_misspelled_field() {
        let p = parse(
            "---\nname: a\ndescription: d\ncategory: dev\nversion: 2\ncolor: teal\n\
             author: x\ntool: Read\npermisionMode: plan\nomitClaudeMd: true\n---\n",
        );
        assert_eq!(p.definition.metadata["category"], "dev");
        assert!(p.definition.omit_claude_md);
        let mut w = p.warnings.clone();
        w.sort();
        assert_eq!(
            w,
            [
                "field `permisionMode` is not an agent field (did you mean `permissionMode`?); it has no effect",
                "field `tool` is not an agent field (did you mean `tools`?); it has no effect",
            ],
        );
        assert!(
            !parse("---\nname: a\ndescription: d\n---\n")
                .definition
                .omit_claude_md
        );
    }

    #[test]
    fn values_that_would_be_ignored_warn() {
        let p = parse(
            "---\nname: a\ndescription: d\nmemory: team\nisolation: remote\neffort: huge\nhooks:\n  Notification:\n    - hooks: [{type: command, command: x}]\nomitClaudeMd: maybe\n---\n",
        );
        let w = p.warnings.join("\n");
        for needle in [
            "memory",
            "isolation: remote",
            "effort: huge",
            "Notification",
            "omitClaudeMd",
        ] {
            assert!(w.contains(needle), "no warning names {needle}:\n{w}");
        }
        let p = parse(
            "---\nname: a\ndescription: d\nmemory: user\nisolation: worktree\neffort: xhigh\ncolor: Purple\nbackground: false\n---\n",
        );
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert!(!p.definition.runs_in_background_by_default());
    }

    #[test]
    fn manual_is_default_and_an_unknown_mode_is_an_error_naming_file_line_and_modes() {
        let p = parse("---\nname: a\ndescription: d\npermissionMode: manual\n---\n");
        assert_eq!(p.definition.permission_mode, PermissionMode::Default);
        let e = parse_agent(
            Path::new("agents/a.md"),
            "\n---\nname: a\ndescription: d\npermissionMode: yolo\n---\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("agents/a.md:5:"), "{e}");
        for needle in [
            "yolo",
            "default",
            "acceptEdits",
            "plan",
            "dontAsk",
            "bypassPermissions",
        ] {
            assert!(e.contains(needle), "{needle} in {e}");
        }
        assert_eq!("plan".parse::<PermissionMode>(), Ok(PermissionMode::Plan));
        assert!(
            "yolo"
                .parse::<PermissionMode>()
                .unwrap_err()
                .contains("acceptEdits")
        );
    }

    /// Behaviour change (issue 27): Claude Code loads such names silently, and they never
    /// become paths as written (`agent_slug`), so there is nothing to warn about.
    #[test]
    fn title_case_name_loads_without_a_warning() {
        let p = parse("---\nname: Code Reviewer\ndescription: d\n---\n");
        assert_eq!(p.definition.name, "Code Reviewer");
        assert_eq!(p.definition.name_line, Some(2));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn missing_fields_name_path_and_line() {
        let e = parse_agent(Path::new("x/y.md"), "\n---\ndescription: d\n---\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x/y.md:2: the frontmatter has no `name` (required)"
        );
        let e = parse_agent(Path::new("y.md"), "---\nname: n\n---\n").unwrap_err();
        assert!(matches!(
            e,
            ClaudeError::MissingField {
                field: "description",
                ..
            }
        ));
    }

    #[test]
    fn yaml_error_names_line() {
        let e = parse_agent(Path::new("y.md"), "---\n: : :\n  - [\n---\n").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("y.md:"), "{s}");
        assert!(matches!(e, ClaudeError::Yaml { line: Some(_), .. }), "{s}");
    }

    #[test]
    fn lenient_with_warning_and_crlf() {
        let p = parse(
            "\u{feff}\r\n---\r\nname: x\r\ndescription: Use it when: things\r\n---\r\nBody\r\n",
        );
        assert_eq!(p.definition.description, "Use it when: things");
        assert_eq!(p.definition.prompt, "Body");
        assert!(p.warnings[0].contains("leniently"), "{:?}", p.warnings);
    }

    #[test]
    fn lenient_multiline_description_with_examples() {
        let text = "\n\n---\nname: code-reviewer\ndescription: Use this agent after writing code. Examples:\n\n<example>\nContext: The user wrote a function.\nuser: \"Please review it\"\nassistant: \"I'll use the code-reviewer agent\"\n<commentary>\nreview: needed\n</commentary>\n</example>\n\nAlso proactively.\ntools: Read, Grep\nmodel: sonnet\ncolor: red\n---\nYou review code.\n";
        let p = parse(text);
        let d = &p.definition;
        assert!(p.warnings.iter().any(|w| w.contains("leniently")));
        assert!(
            d.description
                .starts_with("Use this agent after writing code. Examples:\n\n<example>")
        );
        assert!(d.description.contains("user: \"Please review it\""));
        assert!(d.description.contains("review: needed"));
        assert!(
            d.description.ends_with("</example>\n\nAlso proactively."),
            "{}",
            d.description
        );
        assert_eq!(d.tools.as_ref().map(Vec::len), Some(2));
        assert_eq!(d.model, Some(ModelChoice::Named("sonnet".into())));
        assert_eq!(d.color.as_deref(), Some("red"));
        assert!(d.metadata.is_empty(), "{:?}", d.metadata);
        assert_eq!(d.prompt, "You review code.");
    }

    #[test]
    fn tool_list_forms() {
        assert_eq!(
            parse_tool_list("Read Write, Bash(git:*),"),
            vec![
                ToolRule::Name("Read".into()),
                ToolRule::Name("Write".into()),
                ToolRule::Scoped {
                    name: "Bash".into(),
                    spec: "git:*".into()
                }
            ]
        );
        assert!(ToolRule::Name("Task".into()).matches("Agent"));
        assert!(ToolRule::Prefix("mcp__a__".into()).matches("mcp__a__b"));
        assert!(!ToolRule::Prefix("mcp__a__".into()).matches("mcp__b__c"));
    }

    #[test]
    fn bad_values_warn() {
        let p = parse("---\nname: a\ndescription: d\nmaxTurns: lots\nbackground: maybe\n---\n");
        assert_eq!(p.definition.max_turns, None);
        assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
    }

    #[test]
    fn name_as_list_is_invalid() {
        let e =
            parse_agent(Path::new("y.md"), "---\nname: [a]\ndescription: d\n---\n").unwrap_err();
        assert!(matches!(e, ClaudeError::InvalidField { .. }), "{e}");
    }

    #[test]
    fn output_schema_is_read_inline_and_checked() {
        use subagent_spi::SubagentDefinition as _;
        let p = parse(
            "---\nname: a\ndescription: d\noutputSchema:\n  type: object\n  properties:\n    n: {type: integer}\n  required: [n]\n---\nbody\n",
        );
        let want = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        assert_eq!(p.definition.output_schema, Some(want.clone()));
        assert_eq!(p.definition.output_schema(), Some(want));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert!(!p.definition.metadata.contains_key("outputSchema"));
        // JSON text works too
        let p =
            parse("---\nname: a\ndescription: d\noutput-schema: '{\"type\": \"array\"}'\n---\n");
        assert_eq!(
            p.definition.output_schema,
            Some(serde_json::json!({"type": "array"}))
        );
        // an agent file is not trusted with references, nor with a schema that is not one
        for bad in [
            "outputSchema:\n  $ref: 'https://example.com/s.json'\n",
            "outputSchema: 'not json'\n",
            "outputSchema:\n  type: no-such-type\n",
        ] {
            let p = parse(&format!("---\nname: a\ndescription: d\n{bad}---\n"));
            assert_eq!(p.definition.output_schema, None, "{bad}");
            assert!(
                p.warnings
                    .iter()
                    .any(|w| w.contains("outputSchema") || w.contains("output-schema")),
                "{bad}: {:?}",
                p.warnings
            );
        }
    }
}
