//! The typed agent definition (its fields, tool rules, model choice and permission mode); the
//! parser that builds it from Markdown text is [`parse`], the key checks [`fields`].

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};
use subagent_spi::SubagentReference;

use crate::KIND;
use crate::frontmatter;
use crate::terminal::{escape_for_terminal, escape_for_terminal_multiline};

mod fields;
mod parse;

pub use parse::parse_agent;
pub(crate) use parse::read_named_document;

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

#[cfg(test)]
mod tests;
