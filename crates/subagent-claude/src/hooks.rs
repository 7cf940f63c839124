//! Claude Code hooks: shell commands that run at points of an agent's life, configured in an
//! agent's frontmatter (`hooks:`) and in `.claude/settings.json` (`"hooks"`).
//!
//! Supported events (Claude Code's names and semantics):
//!
//! | event | when | matcher on | may |
//! |---|---|---|---|
//! | `PreToolUse` | before a tool call | tool name | block it (exit 2, or `permissionDecision: "deny"`), rewrite its input (`updatedInput`), add context |
//! | `PostToolUse` | after a successful call | tool name | feed text back to the model (exit 2 stderr, `decision: "block"` + `reason`, `additionalContext`) |
//! | `PostToolUseFailure` | after a failed call | tool name | add context |
//! | `SubagentStart` | before a subagent runs | agent name | add context to its system prompt |
//! | `SubagentStop` | when a subagent is about to finish | agent name | make it continue (exit 2 stderr, or `decision: "block"` + `reason`) |
//!
//! In an agent's frontmatter, `PreToolUse`/`PostToolUse`/`PostToolUseFailure` apply to that
//! agent's own tool calls, `Stop` (and a matcher-less `SubagentStop` written as `Stop`) runs
//! when that agent finishes, and `SubagentStart`/`SubagentStop` apply to the subagents it
//! starts. Settings hooks apply to every Markdown agent (and to the main agent's tool calls).
//!
//! Each command gets the event as JSON on stdin (`session_id`, `hook_event_name`, `cwd`,
//! `permission_mode`, `tool_name`, `tool_input`, `tool_response`, `agent_id`, `agent_type`,
//! `last_assistant_message`, `stop_hook_active`...), runs under `sh -c` in the run's workspace
//! with a scrubbed environment (`PATH`, `HOME`, `LANG`, `TERM`, `USER`, `TMPDIR` and
//! `CLAUDE_PROJECT_DIR` only, so API keys never reach it) in a process group of its own (a PID
//! namespace of its own under the namespace sandbox), and is killed, with everything it
//! started, after its `timeout` (seconds, default 60, at most 600). Exit code 0 reads JSON from
//! stdout; 2 is a blocking error whose stderr goes to the model; anything else is a
//! non-blocking error logged as a warning. Matching hooks of one event run concurrently;
//! identical commands run once.
//!
//! Hooks from agent files and from the workspace's settings files run confined like the `Bash`
//! tool of the run (see [`HookRunner::with_sandbox`]): their input is model-controlled and
//! their files can be in reach of a model. Only the user's own settings file
//! ([`Hooks::from_settings_files_with_user`]) gives unconfined hooks, as in Claude Code, and
//! only while the workspace files such a hook names are as they were when the session started
//! ([`Hooks::pin_workspace_scripts`]): a hook running `.claude/hooks/fmt.sh` that a model
//! rewrote runs confined.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use derive_setters::Setters;
use serde_json::{Map, Value, json};
use subagent_spi::{CancellationToken, TaskContext, Tool, ToolError, ToolOutput};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use subagent_tools::{ConfinedCommand, SandboxPolicy, ScriptPins};

use crate::definition::{PermissionMode, is_task_name};

/// The timeout of a hook that sets none: 60 seconds, as in Claude Code.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest timeout a hook may set (longer ones are cut to it, with a warning).
pub const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(600);
/// Command hooks kept from one configuration (an agent file or a settings file); the rest are
/// dropped with a warning.
pub const MAX_HOOKS: usize = 64;
/// Bytes of a hook's stdout, and of its stderr, that are read; the rest is discarded.
pub const MAX_HOOK_OUTPUT_BYTES: usize = 32 * 1024;
/// The longest hook command accepted, in bytes.
pub const MAX_HOOK_COMMAND_BYTES: usize = 16 * 1024;
/// The longest matcher accepted, in bytes (regular expressions are also size-limited).
pub const MAX_MATCHER_BYTES: usize = 1024;
/// How many times `SubagentStop` hooks may send an agent back to work before it stops anyway.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;
/// The largest settings file read, in bytes.
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// The environment variables a hook command inherits (plus `CLAUDE_PROJECT_DIR`).
const KEPT_ENV: [&str; 6] = ["PATH", "HOME", "LANG", "TERM", "USER", "TMPDIR"];

/// After a hook exits, how long its output pipes may stay open (a leftover background process)
/// before they are abandoned.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The hook events this crate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HookEvent {
    /// Before a tool call; may block it.
    PreToolUse,
    /// After a successful tool call.
    PostToolUse,
    /// After a failed tool call.
    PostToolUseFailure,
    /// Before a subagent runs.
    SubagentStart,
    /// When a subagent is about to finish; may make it continue.
    SubagentStop,
}

impl HookEvent {
    /// Every supported event.
    pub const ALL: [HookEvent; 5] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
    ];

    /// Claude Code's name of the event.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
        }
    }

    /// The event of that name (exact, as Claude Code spells it).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a group's `matcher` matches against (a tool name or an agent name).
#[derive(Debug, Clone)]
enum Matcher {
    /// `*`, empty or absent.
    All,
    /// Letters, digits, `_`, `-`, spaces: one name, or several separated by `|` (or `,`).
    Names(Vec<String>),
    /// Anything else: an unanchored regular expression.
    Regex(regex::Regex),
}

impl Matcher {
    fn compile(text: Option<&str>) -> Result<Self, String> {
        let t = text.unwrap_or("").trim();
        if t.is_empty() || t == "*" {
            return Ok(Matcher::All);
        }
        if t.len() > MAX_MATCHER_BYTES {
            return Err(format!(
                "the matcher is {} bytes long (at most {MAX_MATCHER_BYTES})",
                t.len()
            ));
        }
        if t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ',' | ' '))
        {
            let names: Vec<String> = t
                .split(['|', ','])
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect();
            return Ok(Matcher::Names(names));
        }
        regex::RegexBuilder::new(t)
            .size_limit(1 << 20)
            .dfa_size_limit(1 << 20)
            .build()
            .map(Matcher::Regex)
            .map_err(|e| format!("the matcher `{t}` is not a valid regular expression: {e}"))
    }

    /// True when the matcher covers `subject`. `Task` and `Agent` name the same tool.
    fn matches(&self, subject: &str) -> bool {
        let alias = match subject {
            "Task" => Some("Agent"),
            "Agent" => Some("Task"),
            _ => None,
        };
        let one = |s: &str| match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == s),
            Matcher::Regex(re) => re.is_match(s),
        };
        one(subject) || alias.is_some_and(one)
    }
}

/// One command hook: a shell command and its timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandHook {
    /// Run with `sh -c`.
    pub command: String,
    /// Killed after this long.
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
struct Group {
    event: HookEvent,
    matcher: Matcher,
    /// A frontmatter `Stop` hook: runs when the agent that declared it finishes.
    own_stop: bool,
    /// Runs confined like the `Bash` tool (every origin but the user's own settings file).
    confined: bool,
    hooks: Vec<CommandHook>,
}

/// A set of command hooks, parsed from an agent's frontmatter or a settings file.
///
/// Cheap to clone. Parsing never fails: what cannot be used is reported in the warnings and
/// left out, so nothing is ignored silently.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    groups: Arc<Vec<Group>>,
    /// `disableAllHooks`: no hook runs, agents' own included.
    disabled: bool,
    /// The workspace files each unconfined command names, as they were at the session's start
    /// ([`Hooks::pin_workspace_scripts`]).
    pins: Arc<Vec<(String, Arc<ScriptPins>)>>,
}

/// Where a hooks configuration came from: it decides what `Stop` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Frontmatter,
    Settings,
    /// The user's own settings file (`~/.claude/settings.json`): its hooks run unconfined.
    UserSettings,
}

impl Hooks {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// The kill switch (Claude Code's `"disableAllHooks": true`): given as the settings hooks,
    /// no hook runs at all, agents' frontmatter hooks included.
    pub fn disabled() -> Self {
        Self {
            groups: Arc::new(Vec::new()),
            disabled: true,
            pins: Arc::default(),
        }
    }

    /// True for [`Hooks::disabled`] (and a merge with it).
    pub fn is_disabled(&self) -> bool {
        self.disabled
    }

    /// Parses an agent's `hooks` frontmatter value: `{EVENT: [{matcher, hooks: [{type:
    /// command, command, timeout}]}]}`. `Stop` becomes the agent's own `SubagentStop`.
    pub fn from_frontmatter(value: &Value) -> (Self, Vec<String>) {
        parse(value, Origin::Frontmatter)
    }

    /// Parses the `hooks` value of a Claude Code settings file (same shape). `Stop` there is
    /// the main session's, which this crate does not run (a warning says so).
    pub fn from_settings_value(value: &Value) -> (Self, Vec<String>) {
        parse(value, Origin::Settings)
    }

    /// Reads the hooks of Claude Code settings files, in order (missing files are skipped):
    /// typically `~/.claude/settings.json`, `<project>/.claude/settings.json` and
    /// `<project>/.claude/settings.local.json`. When any of them sets `"disableAllHooks":
    /// true`, no hooks are returned (and a warning says so). Warnings name the file.
    /// Their hooks run confined (see [`HookRunner::with_sandbox`]).
    pub async fn from_settings_files(paths: &[PathBuf]) -> (Self, Vec<String>) {
        Self::read_settings_files(None, paths).await
    }

    /// Like [`from_settings_files`](Self::from_settings_files) with the user's own settings
    /// file (`~/.claude/settings.json`) read first: its hooks, written by the user, run
    /// unconfined, as in Claude Code; the hooks of `paths` (the workspace's files) run
    /// confined like the `Bash` tool.
    pub async fn from_settings_files_with_user(
        user: &Path,
        paths: &[PathBuf],
    ) -> (Self, Vec<String>) {
        Self::read_settings_files(Some(user), paths).await
    }

    async fn read_settings_files(user: Option<&Path>, paths: &[PathBuf]) -> (Self, Vec<String>) {
        let mut all = Hooks::new();
        let mut warnings = Vec::new();
        let files = user
            .map(|u| (u, Origin::UserSettings))
            .into_iter()
            .chain(paths.iter().map(|p| (p.as_path(), Origin::Settings)));
        for (path, origin) in files {
            let text = match read_settings(path).await {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    warnings.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            let value: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    warnings.push(format!(
                        "{}: not valid JSON ({e}); its hooks are ignored",
                        path.display()
                    ));
                    continue;
                }
            };
            if value.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
                warnings.push(format!(
                    "{}: `disableAllHooks` is true, so no hooks run (agents' own included)",
                    path.display()
                ));
                return (Hooks::disabled(), warnings);
            }
            let Some(hooks) = value.get("hooks") else {
                continue;
            };
            let (parsed, w) = parse(hooks, origin);
            warnings.extend(w.into_iter().map(|w| format!("{}: {w}", path.display())));
            let dropped = all.merge(parsed);
            if dropped > 0 {
                warnings.push(format!(
                    "{}: {dropped} hook(s) dropped: at most {MAX_HOOKS} command hooks are kept \
                     from all settings files together",
                    path.display()
                ));
            }
        }
        (all, warnings)
    }

    /// Appends `other`'s hooks (up to [`MAX_HOOKS`] commands in all); returns how many
    /// commands were dropped.
    pub fn merge(&mut self, other: Hooks) -> usize {
        let mut groups = Vec::clone(&self.groups);
        let mut count: usize = groups.iter().map(|g| g.hooks.len()).sum();
        let mut dropped = 0;
        for mut g in Vec::clone(&other.groups) {
            let room = MAX_HOOKS.saturating_sub(count);
            if g.hooks.len() > room {
                dropped += g.hooks.len() - room;
                g.hooks.truncate(room);
            }
            count += g.hooks.len();
            if !g.hooks.is_empty() {
                groups.push(g);
            }
        }
        self.groups = Arc::new(groups);
        self.disabled |= other.disabled;
        if !other.pins.is_empty() {
            let mut pins = Vec::clone(&self.pins);
            pins.extend(other.pins.iter().cloned());
            self.pins = Arc::new(pins);
        }
        dropped
    }

    /// Pins the workspace files the unconfined hooks (the user's own settings hooks) name, as
    /// they are now ([`ScriptPins`]: `sh .claude/hooks/fmt.sh`, `python3 tools/x.py`, `make
    /// fmt`'s makefile, `$CLAUDE_PROJECT_DIR/...`): such a hook runs unconfined, as in Claude
    /// Code, while every file it names is unchanged; once one has changed (a model rewrote it,
    /// created it or removed it), the hook runs confined like the workspace's hooks, with a
    /// warning naming the file. Call it when the session starts, with the workspace `root`.
    /// Blocking (it reads the files).
    pub fn pin_workspace_scripts(&self, root: &Path) -> Hooks {
        let mut pins: Vec<(String, Arc<ScriptPins>)> = Vec::new();
        for g in self.groups.iter().filter(|g| !g.confined) {
            for h in &g.hooks {
                if pins.iter().any(|(c, _)| *c == h.command) {
                    continue;
                }
                let pinned = ScriptPins::of_shell(&h.command, root);
                if !pinned.is_empty() {
                    pins.push((h.command.clone(), Arc::new(pinned)));
                }
            }
        }
        Hooks {
            pins: Arc::new(pins),
            ..self.clone()
        }
    }

    /// The first workspace file unconfined `command` names that changed since it was pinned.
    async fn changed_script(&self, command: &str) -> Option<PathBuf> {
        let pins = self
            .pins
            .iter()
            .find(|(c, _)| c == command)
            .map(|(_, p)| p.clone())?;
        tokio::task::spawn_blocking(move || pins.changed().map(Path::to_path_buf))
            .await
            .unwrap_or_else(|_| Some(PathBuf::from("(the check failed)")))
    }

    /// True when there are no hooks.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The number of command hooks, all events together.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.hooks.len()).sum()
    }

    /// The number of command hooks configured for `event` (a frontmatter `Stop` counts as
    /// `SubagentStop`).
    pub fn count(&self, event: HookEvent) -> usize {
        self.groups
            .iter()
            .filter(|g| g.event == event)
            .map(|g| g.hooks.len())
            .sum()
    }

    /// The commands of `event` whose matcher covers `subject` (identical commands once).
    /// `own_stop` selects frontmatter `Stop` hooks (true) or the others (false).
    /// Each comes with whether it runs confined (an identical command from several origins
    /// runs confined when any of them is confined).
    fn matching(
        &self,
        event: HookEvent,
        subject: &str,
        own_stop: bool,
    ) -> Vec<(CommandHook, bool)> {
        let mut out: Vec<(CommandHook, bool)> = Vec::new();
        for g in self.groups.iter() {
            if g.event != event || g.own_stop != own_stop || !g.matcher.matches(subject) {
                continue;
            }
            for h in &g.hooks {
                match out.iter_mut().find(|(o, _)| o.command == h.command) {
                    Some((_, confined)) => *confined |= g.confined,
                    None => out.push((h.clone(), g.confined)),
                }
            }
        }
        out
    }

    /// A copy holding only the groups `keep` selects.
    fn filtered(&self, keep: impl Fn(&Group) -> bool) -> Hooks {
        Hooks {
            groups: Arc::new(self.groups.iter().filter(|g| keep(g)).cloned().collect()),
            disabled: self.disabled,
            pins: self.pins.clone(),
        }
    }
}

async fn read_settings(path: &Path) -> Result<Option<String>, String> {
    let meta = match tokio::fs::metadata(path).await {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    if !meta.is_file() {
        return Err("not a regular file; ignored".to_string());
    }
    if meta.len() > MAX_SETTINGS_BYTES {
        return Err(format!(
            "{} bytes, more than the {MAX_SETTINGS_BYTES} read; ignored",
            meta.len()
        ));
    }
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("cannot read it: {e}"))?;
    let mut text = String::new();
    file.take(MAX_SETTINGS_BYTES)
        .read_to_string(&mut text)
        .await
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(Some(text))
}

fn parse(value: &Value, origin: Origin) -> (Hooks, Vec<String>) {
    let mut warnings = Vec::new();
    let mut groups = Vec::new();
    let mut count = 0usize;
    let map = match value {
        Value::Null => return (Hooks::new(), warnings),
        Value::Object(m) => m,
        other => {
            warnings.push(format!(
                "`hooks` must be a map of event names to lists; ignored {}",
                short(other)
            ));
            return (Hooks::new(), warnings);
        }
    };
    for (name, entries) in map {
        let (event, own_stop) = match (HookEvent::parse(name), name.as_str(), origin) {
            (Some(e), _, _) => (e, false),
            (None, "Stop", Origin::Frontmatter) => (HookEvent::SubagentStop, true),
            (None, "Stop", Origin::Settings | Origin::UserSettings) => {
                warnings.push(
                    "hook event `Stop` belongs to the main session, which runs no Stop hooks \
                     here (use `SubagentStop` for subagents); ignored"
                        .to_string(),
                );
                continue;
            }
            (None, other, _) => {
                warnings.push(format!(
                    "hook event `{other}` is not supported (supported: {}, and `Stop` in an \
                     agent file); its hooks are ignored",
                    HookEvent::ALL.map(HookEvent::as_str).join(", ")
                ));
                continue;
            }
        };
        let Value::Array(list) = entries else {
            warnings.push(format!(
                "hooks for `{name}` must be a list of {{matcher, hooks}} groups; ignored"
            ));
            continue;
        };
        for entry in list {
            let Value::Object(group) = entry else {
                warnings.push(format!(
                    "a `{name}` hook group must be a map with `hooks`; ignored {}",
                    short(entry)
                ));
                continue;
            };
            for key in group.keys() {
                if key != "matcher" && key != "hooks" {
                    warnings.push(format!(
                        "`{name}` hook group field `{key}` is not supported; ignored"
                    ));
                }
            }
            let matcher_text = match group.get("matcher") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.as_str()),
                Some(other) => {
                    warnings.push(format!(
                        "a `{name}` matcher must be text; the group is ignored ({})",
                        short(other)
                    ));
                    continue;
                }
            };
            if own_stop && matcher_text.is_some_and(|m| !m.trim().is_empty() && m != "*") {
                warnings.push(format!(
                    "`{name}` takes no matcher; `{}` is ignored",
                    matcher_text.unwrap_or_default()
                ));
            }
            let matcher = if own_stop {
                Matcher::All
            } else {
                match Matcher::compile(matcher_text) {
                    Ok(m) => m,
                    Err(e) => {
                        warnings.push(format!("`{name}`: {e}; the group is ignored"));
                        continue;
                    }
                }
            };
            let Some(Value::Array(handlers)) = group.get("hooks") else {
                warnings.push(format!(
                    "a `{name}` hook group needs a `hooks` list; the group is ignored"
                ));
                continue;
            };
            let mut hooks = Vec::new();
            for h in handlers {
                let Some(hook) = command_hook(name, h, &mut warnings) else {
                    continue;
                };
                if count >= MAX_HOOKS {
                    warnings.push(format!(
                        "more than {MAX_HOOKS} command hooks; `{}` and the rest are ignored",
                        short_text(&hook.command)
                    ));
                    break;
                }
                count += 1;
                hooks.push(hook);
            }
            if !hooks.is_empty() {
                groups.push(Group {
                    event,
                    matcher,
                    own_stop,
                    confined: origin != Origin::UserSettings,
                    hooks,
                });
            }
        }
    }
    (
        Hooks {
            groups: Arc::new(groups),
            disabled: false,
            pins: Arc::default(),
        },
        warnings,
    )
}

fn command_hook(event: &str, h: &Value, warnings: &mut Vec<String>) -> Option<CommandHook> {
    let Value::Object(h) = h else {
        warnings.push(format!(
            "a `{event}` hook must be a map with `type` and `command`; ignored {}",
            short(h)
        ));
        return None;
    };
    match h.get("type").and_then(Value::as_str) {
        None | Some("command") => {}
        Some(other) => {
            warnings.push(format!(
                "`{event}` hook type `{other}` is not supported (only `command` hooks run); ignored"
            ));
            return None;
        }
    }
    for key in h.keys() {
        match key.as_str() {
            "type" | "command" | "timeout" => {}
            "async" | "once" | "statusMessage" => warnings.push(format!(
                "`{event}` hook field `{key}` is not supported; the hook runs as a plain \
                 synchronous command"
            )),
            other => warnings.push(format!(
                "`{event}` hook field `{other}` is not supported; ignored"
            )),
        }
    }
    let command = match h.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        _ => {
            warnings.push(format!(
                "a `{event}` command hook has no `command`; ignored"
            ));
            return None;
        }
    };
    if command.len() > MAX_HOOK_COMMAND_BYTES || command.contains('\0') {
        warnings.push(format!(
            "a `{event}` hook command is longer than {MAX_HOOK_COMMAND_BYTES} bytes or holds a \
             NUL byte; ignored"
        ));
        return None;
    }
    let timeout = match h.get("timeout") {
        None | Some(Value::Null) => DEFAULT_HOOK_TIMEOUT,
        Some(v) => match v.as_f64().filter(|s| s.is_finite() && *s > 0.0) {
            Some(secs) if secs > MAX_HOOK_TIMEOUT.as_secs_f64() => {
                warnings.push(format!(
                    "`{event}` hook timeout {secs} s is above the maximum; using {} s",
                    MAX_HOOK_TIMEOUT.as_secs()
                ));
                MAX_HOOK_TIMEOUT
            }
            Some(secs) => Duration::from_secs_f64(secs),
            None => {
                warnings.push(format!(
                    "`{event}` hook timeout must be a positive number of seconds; using {} s \
                     instead of {}",
                    DEFAULT_HOOK_TIMEOUT.as_secs(),
                    short(v)
                ));
                DEFAULT_HOOK_TIMEOUT
            }
        },
    };
    Some(CommandHook { command, timeout })
}

fn short(v: &Value) -> String {
    short_text(&v.to_string())
}

fn short_text(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

// --- running hooks ---

/// The hook session a tree of runs shares (`session_id` in hook input), kept in the context's
/// extensions so every run below the first sees the same one.
#[derive(Debug, Clone)]
struct HookSession(String);

/// Returns `ctx` with a hook session id (kept when it already has one). Hooks report it as
/// `session_id`; runs started below this one share it.
pub fn with_hook_session(ctx: TaskContext) -> TaskContext {
    if ctx.extensions().get::<HookSession>().is_some() {
        return ctx;
    }
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let id = format!("hooks_{:x}{:04x}{n:x}", nanos, std::process::id() & 0xffff);
    ctx.with_extension(HookSession(id))
}

fn session_id(ctx: &TaskContext) -> String {
    ctx.extensions()
        .get::<HookSession>()
        .map(|s| s.0.clone())
        .or_else(|| ctx.task_id().map(str::to_string))
        .unwrap_or_default()
}

/// Where and as whom hooks run for one agent run.
#[derive(Debug, Clone, Setters)]
#[setters(prefix = "with_")]
pub struct HookRunner {
    #[setters(skip)]
    hooks: Hooks,
    #[setters(skip)]
    project_dir: PathBuf,
    /// Sets the working directory of hook commands (default: the project directory).
    #[setters(into)]
    cwd: PathBuf,
    /// Sets the subagent the hooks run for (`agent_type` in hook input; none for the main
    /// agent).
    #[setters(strip_option, into)]
    agent: Option<String>,
    /// Sets the permission mode reported as `permission_mode`.
    permission_mode: PermissionMode,
    /// How confined hooks (all but the user's own settings hooks) are confined, and the
    /// workspace root that policy is for. None: [`SandboxPolicy::default`] for the project
    /// directory.
    #[setters(skip)]
    sandbox: Option<(SandboxPolicy, PathBuf)>,
}

/// The combined answer of the hooks of one event.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// A blocking message (exit 2 stderr, a deny, `decision: "block"`'s reason).
    pub block: Option<String>,
    /// `continue: false`: stop the agent (with `stopReason`).
    pub stop: Option<String>,
    /// `additionalContext` texts.
    pub context: Vec<String>,
    /// `updatedInput` (PreToolUse).
    pub updated_input: Option<Value>,
}

impl HookRunner {
    /// Hooks for a run: commands run in `cwd` with `CLAUDE_PROJECT_DIR` set to `project_dir`.
    pub fn new(hooks: Hooks, project_dir: impl Into<PathBuf>) -> Self {
        let project_dir = project_dir.into();
        Self {
            hooks,
            cwd: project_dir.clone(),
            project_dir,
            agent: None,
            permission_mode: PermissionMode::Default,
            sandbox: None,
        }
    }

    /// Confines the hooks from agent files and workspace settings files by `policy` (the
    /// run's `Bash` policy) for the workspace at `root`: they start the way `Bash` commands do
    /// ([`ConfinedCommand`]), may write only where those may, and get `TMPDIR` set to the temp
    /// directory they may write.
    /// [`SandboxPolicy::unconfined`] (`--no-sandbox`) runs them unconfined. The user's own
    /// settings hooks ([`Hooks::from_settings_files_with_user`]) are never confined. Without
    /// this call, confined hooks use [`SandboxPolicy::default`] for the project directory.
    #[must_use]
    pub fn with_sandbox(mut self, policy: SandboxPolicy, root: impl Into<PathBuf>) -> Self {
        self.sandbox = Some((policy, root.into()));
        self
    }

    /// The hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// Wraps each tool so `PreToolUse`, `PostToolUse` and `PostToolUseFailure` hooks run around
    /// its calls. Tools are returned unwrapped when no tool hook is configured.
    pub fn wrap_tools(&self, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        let tool_events = [
            HookEvent::PreToolUse,
            HookEvent::PostToolUse,
            HookEvent::PostToolUseFailure,
        ];
        if tool_events.iter().all(|e| self.hooks.count(*e) == 0) {
            return tools;
        }
        let runner = Arc::new(self.clone());
        tools
            .into_iter()
            .map(|inner| {
                Arc::new(HookedTool {
                    inner,
                    runner: runner.clone(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }

    /// The fields every event carries.
    fn base_input(&self, event: HookEvent, ctx: &TaskContext) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("session_id".into(), json!(session_id(ctx)));
        m.insert("hook_event_name".into(), json!(event.as_str()));
        m.insert("cwd".into(), json!(self.cwd.to_string_lossy()));
        m.insert(
            "permission_mode".into(),
            json!(self.permission_mode.as_str()),
        );
        if let Some(agent) = &self.agent {
            m.insert("agent_type".into(), json!(agent));
            if let Some(id) = ctx.task_id() {
                m.insert("agent_id".into(), json!(id));
            }
        }
        m
    }

    /// Runs the hooks of `event` matching `subject` (own `Stop` hooks when `own_stop`).
    pub(crate) async fn fire(
        &self,
        event: HookEvent,
        subject: &str,
        own_stop: bool,
        extra: Map<String, Value>,
        ctx: &TaskContext,
    ) -> Verdict {
        let mut commands = self.hooks.matching(event, subject, own_stop);
        if commands.is_empty() {
            return Verdict::default();
        }
        // The user's own hook runs unconfined only while the workspace files it names are as
        // they were when the session started (Hooks::pin_workspace_scripts).
        for (hook, confined) in commands.iter_mut().filter(|(_, c)| !*c) {
            if let Some(changed) = self.hooks.changed_script(&hook.command).await {
                let message = format!(
                    "{event} hook `{}` runs `{}`, which changed since the session started: it \
                     runs confined",
                    short_text(&hook.command),
                    changed.display()
                );
                tracing::warn!("{message}");
                ctx.emit(subagent_spi::ProgressKind::Status { message });
                *confined = true;
            }
        }
        let mut input = self.base_input(event, ctx);
        input.extend(extra);
        let input = match serde_json::to_vec(&Value::Object(input)) {
            Ok(b) => Arc::new(b),
            Err(e) => {
                tracing::warn!("hook input for {event} cannot be encoded: {e}");
                return Verdict::default();
            }
        };
        let default_sandbox;
        let (policy, root) = match &self.sandbox {
            Some((policy, root)) => (policy, root.as_path()),
            None => {
                default_sandbox = SandboxPolicy::default();
                (&default_sandbox, self.project_dir.as_path())
            }
        };
        let runs = commands.iter().map(|(h, confined)| {
            let confine = confined.then_some((policy, root));
            run_command(
                h,
                input.clone(),
                &self.cwd,
                &self.project_dir,
                confine,
                ctx.cancel(),
            )
        });
        let results = futures::future::join_all(runs).await;
        let mut verdict = Verdict::default();
        for ((hook, _), result) in commands.iter().zip(results) {
            interpret(event, hook, result, &mut verdict, ctx);
        }
        verdict
    }
}

/// What one command did.
struct CommandResult {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// It could not start, timed out, or was cancelled.
    failure: Option<String>,
}

fn interpret(
    event: HookEvent,
    hook: &CommandHook,
    r: CommandResult,
    v: &mut Verdict,
    ctx: &TaskContext,
) {
    let name = short_text(&hook.command);
    if let Some(f) = r.failure {
        tracing::warn!(event = %event, hook = %name, "hook did not complete: {f}");
        ctx.emit(subagent_spi::ProgressKind::Status {
            message: format!("{event} hook `{name}` did not complete: {f}"),
        });
        return;
    }
    match r.code {
        Some(0) => {}
        Some(2) => {
            let msg = r.stderr.trim();
            let msg = if msg.is_empty() {
                format!("blocked by a {event} hook (it gave no reason)")
            } else {
                msg.to_string()
            };
            match event {
                HookEvent::SubagentStart | HookEvent::PostToolUseFailure => {
                    tracing::warn!(event = %event, hook = %name, "hook exited 2 (it cannot block this event): {msg}");
                }
                _ => push_block(v, msg),
            }
            return;
        }
        code => {
            let first = r.stderr.lines().next().unwrap_or("").trim().to_string();
            tracing::warn!(event = %event, hook = %name, code = ?code, "hook failed (non-blocking): {first}");
            ctx.emit(subagent_spi::ProgressKind::Status {
                message: format!(
                    "{event} hook `{name}` failed with {}: {first}",
                    code.map_or("a signal".to_string(), |c| format!("exit code {c}"))
                ),
            });
            return;
        }
    }
    let out = r.stdout.trim();
    if !out.starts_with('{') {
        if !out.is_empty() {
            tracing::debug!(event = %event, hook = %name, "hook output (not JSON): {out}");
        }
        return;
    }
    let Ok(Value::Object(json)) = serde_json::from_str::<Value>(out) else {
        tracing::warn!(event = %event, hook = %name, "hook printed something that looks like JSON but is not; ignored");
        return;
    };
    if let Some(msg) = json.get("systemMessage").and_then(Value::as_str) {
        tracing::warn!(event = %event, hook = %name, "{msg}");
        ctx.emit(subagent_spi::ProgressKind::Status {
            message: msg.to_string(),
        });
    }
    if json.get("continue").and_then(Value::as_bool) == Some(false) {
        let reason = json
            .get("stopReason")
            .and_then(Value::as_str)
            .unwrap_or("a hook stopped the agent");
        v.stop.get_or_insert_with(|| reason.to_string());
    }
    let reason = json.get("reason").and_then(Value::as_str);
    match json.get("decision").and_then(Value::as_str) {
        Some("block") if event != HookEvent::SubagentStart => push_block(
            v,
            reason
                .unwrap_or("blocked by a hook (it gave no reason)")
                .to_string(),
        ),
        _ => {}
    }
    let Some(specific) = json.get("hookSpecificOutput").and_then(Value::as_object) else {
        return;
    };
    if let Some(ctx_text) = specific.get("additionalContext").and_then(Value::as_str)
        && !ctx_text.trim().is_empty()
    {
        v.context.push(ctx_text.to_string());
    }
    if event == HookEvent::PreToolUse {
        if specific.get("permissionDecision").and_then(Value::as_str) == Some("deny") {
            let why = specific
                .get("permissionDecisionReason")
                .and_then(Value::as_str)
                .unwrap_or("denied by a PreToolUse hook");
            push_block(v, why.to_string());
        }
        if let Some(updated) = specific.get("updatedInput")
            && updated.is_object()
        {
            v.updated_input = Some(updated.clone());
        }
    }
}

fn push_block(v: &mut Verdict, msg: String) {
    match &mut v.block {
        Some(existing) => {
            existing.push('\n');
            existing.push_str(&msg);
        }
        None => v.block = Some(msg),
    }
}

async fn read_capped(mut pipe: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = MAX_HOOK_OUTPUT_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..room.min(n)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

async fn run_command(
    hook: &CommandHook,
    input: Arc<Vec<u8>>,
    cwd: &Path,
    project_dir: &Path,
    confine: Option<(&SandboxPolicy, &Path)>,
    cancel: &CancellationToken,
) -> CommandResult {
    let failed = |msg: String| CommandResult {
        code: None,
        stdout: String::new(),
        stderr: String::new(),
        failure: Some(msg),
    };
    let mut command = ConfinedCommand::new("sh").env_clear();
    for name in KEPT_ENV {
        if let Some(v) = std::env::var_os(name) {
            command = command.env(name, v);
        }
    }
    let unconfined = SandboxPolicy::unconfined();
    let (policy, root) = match confine {
        Some((policy, root)) if policy.confine_writes => {
            // The sandbox needs the real path; one that cannot be resolved fails the hook
            // rather than running it unconfined.
            let root = match tokio::fs::canonicalize(root).await {
                Ok(r) => r,
                Err(e) => {
                    return failed(format!(
                        "cannot confine it: workspace `{}`: {e}",
                        root.display()
                    ));
                }
            };
            command = command.env("TMPDIR", policy.temp_dir_for(&root));
            (policy, root)
        }
        _ => (&unconfined, project_dir.to_path_buf()),
    };
    // Confined or not, it runs in a process group (with namespaces, a PID namespace) of its
    // own, and what it starts dies with it (timeout, cancellation, or done). A root that cannot
    // be resolved fails the hook rather than running it unconfined.
    let mut child = match command
        .env("CLAUDE_PROJECT_DIR", project_dir)
        .arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn(policy, &root)
        .await
    {
        Ok(c) => c,
        Err(e) => return failed(e.to_string()),
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) = (
        child.child().stdin.take(),
        child.child().stdout.take(),
        child.child().stderr.take(),
    ) else {
        return failed("the hook's pipes are missing".to_string());
    };
    // Write stdin while reading the outputs, so a hook that prints before it reads (or never
    // reads) cannot deadlock against us.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
    });
    let out_reader = tokio::spawn(read_capped(stdout));
    let err_reader = tokio::spawn(read_capped(stderr));
    let status = tokio::select! {
        s = child.wait() => s.map_err(|e| format!("waiting for the hook failed: {e}")),
        () = tokio::time::sleep(hook.timeout) => Err(format!("timed out after {} s", hook.timeout.as_secs_f64())),
        () = cancel.cancelled() => Err("cancelled with its run".to_string()),
    };
    writer.abort();
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            child.kill();
            let _ = child.wait().await;
            out_reader.abort();
            err_reader.abort();
            return failed(e);
        }
    };
    let drain = |h: tokio::task::JoinHandle<String>| async move {
        let abort = h.abort_handle();
        match tokio::time::timeout(DRAIN_GRACE, h).await {
            Ok(Ok(s)) => s,
            _ => {
                abort.abort();
                String::new()
            }
        }
    };
    let (stdout, stderr) = tokio::join!(drain(out_reader), drain(err_reader));
    CommandResult {
        code: status.code(),
        stdout,
        stderr,
        failure: None,
    }
}

/// A tool with `PreToolUse`, `PostToolUse` and `PostToolUseFailure` hooks around its calls.
struct HookedTool {
    inner: Arc<dyn Tool>,
    runner: Arc<HookRunner>,
}

#[async_trait]
impl Tool for HookedTool {
    wrapped_tool_identity!();

    fn description(&self) -> String {
        self.inner.description()
    }

    async fn call(&self, input: Value, ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
        let name = self.inner.name().to_string();
        let tool_name = if is_task_name(&name) {
            "Task".to_string()
        } else {
            name.clone()
        };
        let mut extra = Map::new();
        extra.insert("tool_name".into(), json!(tool_name));
        extra.insert("tool_input".into(), input.clone());
        let pre = self
            .runner
            .fire(HookEvent::PreToolUse, &name, false, extra.clone(), ctx)
            .await;
        if let Some(reason) = &pre.stop {
            ctx.cancel().cancel();
            return Err(ToolError::denied(
                &name,
                format!("a PreToolUse hook stopped the agent: {reason}"),
            ));
        }
        if let Some(msg) = pre.block {
            return Err(ToolError::denied(
                &name,
                format!("blocked by a PreToolUse hook: {msg}"),
            ));
        }
        let input = match pre.updated_input {
            Some(updated) => {
                extra.insert("tool_input".into(), updated.clone());
                updated
            }
            None => input,
        };
        let result = self.inner.call(input, ctx).await;
        let failed = match &result {
            Ok(out) => out.is_error.then(|| out.content.clone()),
            Err(e) => Some(e.to_string()),
        };
        let post = match &failed {
            None => {
                let response = result
                    .as_ref()
                    .map(|o| o.content.clone())
                    .unwrap_or_default();
                extra.insert("tool_response".into(), json!(response));
                self.runner
                    .fire(HookEvent::PostToolUse, &name, false, extra, ctx)
                    .await
            }
            Some(error) => {
                extra.insert("error".into(), json!(error));
                extra.insert("is_interrupt".into(), json!(false));
                self.runner
                    .fire(HookEvent::PostToolUseFailure, &name, false, extra, ctx)
                    .await
            }
        };
        let mut notes: Vec<String> = pre.context;
        if let Some(block) = post.block {
            notes.push(block);
        }
        notes.extend(post.context);
        if let Some(reason) = post.stop {
            notes.push(format!("A hook stopped the agent: {reason}"));
            ctx.cancel().cancel();
        }
        if notes.is_empty() {
            return result;
        }
        let feedback = format!("\n\n[hook feedback]\n{}", notes.join("\n"));
        match result {
            Ok(mut out) => {
                out.content.push_str(&feedback);
                Ok(out)
            }
            Err(e) => Ok(ToolOutput::error(format!("{e}{feedback}"))),
        }
    }
}

// --- subagent lifecycle ---

/// The frontmatter `SubagentStart`/`SubagentStop` hooks of the agent that started this run:
/// they apply to its children, so the parent's run puts them into its context.
#[derive(Debug, Clone)]
struct ParentHooks(HookRunner);

/// The hooks around one Markdown agent run: its own (frontmatter), the settings ones, and its
/// parent's `SubagentStart`/`SubagentStop`.
#[derive(Debug, Clone)]
pub(crate) struct RunHooks {
    /// Frontmatter hooks of this agent (tool hooks, own Stop).
    own: HookRunner,
    /// Settings hooks.
    settings: HookRunner,
    /// The parent's frontmatter subagent hooks, when there is a parent that has some.
    parent: Option<HookRunner>,
    /// True for a subagent (depth ≥ 1): `SubagentStart`/`SubagentStop` apply.
    is_subagent: bool,
    agent: String,
}

/// Where one run's hooks run: the project (`CLAUDE_PROJECT_DIR`), the run's root (their
/// working directory and the workspace their confinement is for) and the run's `Bash` policy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunPlace<'a> {
    pub project_dir: &'a Path,
    pub cwd: &'a Path,
    pub sandbox: &'a SandboxPolicy,
}

impl RunHooks {
    /// Builds the hooks of one run. `warnings` gets what the frontmatter value could not use.
    pub(crate) fn new(
        frontmatter: Option<&Value>,
        settings: &Hooks,
        ctx: &TaskContext,
        agent: &str,
        mode: PermissionMode,
        place: RunPlace<'_>,
    ) -> (Self, Vec<String>) {
        let RunPlace {
            project_dir,
            cwd,
            sandbox,
        } = place;
        let (own, mut warnings) = match frontmatter {
            Some(v) => Hooks::from_frontmatter(v),
            None => (Hooks::new(), Vec::new()),
        };
        let own = if settings.is_disabled() && !own.is_empty() {
            warnings.push(
                "`disableAllHooks` is set in the settings, so this agent's hooks do not run"
                    .to_string(),
            );
            Hooks::new()
        } else {
            own
        };
        let is_subagent = ctx.depth() > 0;
        let runner = |hooks: Hooks| {
            let r = HookRunner::new(hooks, project_dir)
                .with_cwd(cwd)
                .with_permission_mode(mode)
                .with_sandbox(sandbox.clone(), cwd);
            if is_subagent { r.with_agent(agent) } else { r }
        };
        let parent = ctx.extensions().get::<ParentHooks>().map(|p| {
            let mut r = p.0.clone();
            r.cwd = cwd.to_path_buf();
            r.sandbox = Some((sandbox.clone(), cwd.to_path_buf()));
            r.permission_mode = mode;
            r.agent = Some(agent.to_string());
            r
        });
        (
            Self {
                own: runner(own),
                settings: runner(settings.clone()),
                parent,
                is_subagent,
                agent: agent.to_string(),
            },
            warnings,
        )
    }

    /// The context for this run: a hook session, and this agent's subagent hooks for its
    /// children (replacing its parent's).
    pub(crate) fn child_context(&self, ctx: TaskContext) -> TaskContext {
        let ctx = with_hook_session(ctx);
        let mine = self.own.hooks.filtered(|g| {
            !g.own_stop && matches!(g.event, HookEvent::SubagentStart | HookEvent::SubagentStop)
        });
        let runner = HookRunner {
            hooks: mine,
            ..self.own.clone()
        };
        ctx.with_extension(ParentHooks(runner))
    }

    /// Wraps the run's tools with the settings' and the agent's own tool hooks.
    pub(crate) fn wrap_tools(&self, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        let own = self.own.hooks.filtered(|g| {
            matches!(
                g.event,
                HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PostToolUseFailure
            )
        });
        let mut all = self.settings.hooks.filtered(|g| {
            matches!(
                g.event,
                HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PostToolUseFailure
            )
        });
        let dropped = all.merge(own);
        if dropped > 0 {
            tracing::warn!(
                agent = %self.agent,
                "{dropped} of the agent's tool hooks dropped: at most {MAX_HOOKS} run per agent, \
                 settings hooks first"
            );
        }
        HookRunner {
            hooks: all,
            ..self.own.clone()
        }
        .wrap_tools(tools)
    }

    /// `SubagentStart`: the settings' and the parent's hooks for this agent. Returns the
    /// additional context they gave (for the system prompt).
    pub(crate) async fn start(&self, ctx: &TaskContext) -> Vec<String> {
        let mut context = Vec::new();
        for runner in self.subagent_runners() {
            let v = runner
                .fire(
                    HookEvent::SubagentStart,
                    &self.agent,
                    false,
                    Map::new(),
                    ctx,
                )
                .await;
            context.extend(v.context);
        }
        context
    }

    /// The runners of the `Subagent*` events beyond the agent's own: the settings' and the
    /// parent's, and only when the agent runs as a subagent.
    fn subagent_runners(&self) -> impl Iterator<Item = &HookRunner> {
        std::iter::once(&self.settings)
            .chain(self.parent.as_ref())
            .filter(|_| self.is_subagent)
    }

    /// `SubagentStop` (and the agent's own `Stop`) when the run is about to end with
    /// `last_message`. Returns the reason to continue, when a hook blocks the stop.
    pub(crate) async fn stop(
        &self,
        last_message: &str,
        stop_hook_active: bool,
        ctx: &TaskContext,
    ) -> Option<String> {
        let mut extra = Map::new();
        extra.insert("stop_hook_active".into(), json!(stop_hook_active));
        extra.insert("last_assistant_message".into(), json!(last_message));
        let mut reasons: Vec<String> = Vec::new();
        let mut stop = false;
        // The agent's own frontmatter `Stop` hooks first, then the settings' and the parent's.
        let runners = std::iter::once((&self.own, true))
            .chain(self.subagent_runners().map(|runner| (runner, false)));
        for (runner, own_stop) in runners {
            let v = runner
                .fire(
                    HookEvent::SubagentStop,
                    &self.agent,
                    own_stop,
                    extra.clone(),
                    ctx,
                )
                .await;
            stop |= v.stop.is_some();
            reasons.extend(v.block);
        }
        if stop || reasons.is_empty() {
            None
        } else {
            Some(reasons.join("\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_follow_claude_code() {
        let all = Matcher::compile(None).unwrap();
        assert!(all.matches("Bash"));
        assert!(Matcher::compile(Some("*")).unwrap().matches("x"));
        let names = Matcher::compile(Some("Edit|Write")).unwrap();
        assert!(names.matches("Write") && names.matches("Edit"));
        assert!(!names.matches("WriteFile"), "plain names match exactly");
        assert!(!Matcher::compile(Some("Bash")).unwrap().matches("bash"));
        let re = Matcher::compile(Some("mcp__gh__.*")).unwrap();
        assert!(re.matches("mcp__gh__issue") && !re.matches("mcp__x__y"));
        assert!(
            Matcher::compile(Some("^Notebook"))
                .unwrap()
                .matches("NotebookEdit")
        );
        assert!(Matcher::compile(Some("Agent")).unwrap().matches("Task"));
        assert!(Matcher::compile(Some("(")).is_err());
        assert!(Matcher::compile(Some(&"a".repeat(MAX_MATCHER_BYTES + 1))).is_err());
    }

    #[test]
    fn parses_and_warns() {
        let v: Value = serde_json::json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "done"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "y"}]}],
            "PostToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "z"}]},
                            {"hooks": [{"type": "prompt", "prompt": "p"}]}]
        });
        let (h, w) = Hooks::from_frontmatter(&v);
        assert_eq!(h.count(HookEvent::PreToolUse), 1);
        assert_eq!(h.count(HookEvent::SubagentStop), 1);
        assert_eq!(h.count(HookEvent::PostToolUse), 0);
        assert_eq!(
            h.matching(HookEvent::PreToolUse, "Bash", false)[0]
                .0
                .timeout,
            Duration::from_secs(5)
        );
        assert_eq!(h.matching(HookEvent::SubagentStop, "any", true).len(), 1);
        assert!(w.iter().any(|w| w.contains("UserPromptSubmit")), "{w:?}");
        assert!(w.iter().any(|w| w.contains("regular expression")), "{w:?}");
        assert!(w.iter().any(|w| w.contains("`prompt`")), "{w:?}");
        let (_, w) = Hooks::from_settings_value(&v);
        assert!(w.iter().any(|w| w.contains("`Stop`")), "{w:?}");
    }

    #[test]
    fn hook_count_is_bounded() {
        let many: Vec<Value> = (0..MAX_HOOKS + 5)
            .map(|i| serde_json::json!({"type": "command", "command": format!("echo {i}")}))
            .collect();
        let v = serde_json::json!({"PreToolUse": [{"hooks": many}]});
        let (h, w) = Hooks::from_settings_value(&v);
        assert_eq!(h.count(HookEvent::PreToolUse), MAX_HOOKS);
        assert!(w.iter().any(|w| w.contains("more than")));
        let mut merged = h.clone();
        assert_eq!(merged.merge(h), MAX_HOOKS);
    }

    #[tokio::test]
    async fn a_command_gets_the_event_and_a_scrubbed_environment() {
        let dir = tempfile::tempdir().unwrap();
        // Settings hooks run confined like `Bash`, which cannot create files directly in the
        // workspace root: they write into a subdirectory.
        std::fs::create_dir(dir.path().join("out")).unwrap();
        let v = serde_json::json!({"PreToolUse": [{"hooks": [{"type": "command",
            "command": "cat > out/event.json; env > out/env.txt; echo nope >&2; exit 2"}]}]});
        let (hooks, _) = Hooks::from_settings_value(&v);
        let runner = HookRunner::new(hooks, dir.path()).with_agent("worker");
        let ctx = with_hook_session(TaskContext::new().with_task_id("task_1").with_depth(1));
        let mut extra = Map::new();
        extra.insert("tool_name".into(), json!("Bash"));
        let verdict = runner
            .fire(HookEvent::PreToolUse, "Bash", false, extra, &ctx)
            .await;
        assert_eq!(verdict.block.as_deref(), Some("nope"));
        let event: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("out/event.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(event["hook_event_name"], "PreToolUse");
        assert_eq!(event["tool_name"], "Bash");
        assert_eq!(event["agent_type"], "worker");
        assert_eq!(event["agent_id"], "task_1");
        assert!(event["session_id"].as_str().unwrap().starts_with("hooks_"));
        let env = std::fs::read_to_string(dir.path().join("out/env.txt")).unwrap();
        assert!(env.contains("CLAUDE_PROJECT_DIR="), "{env}");
        for line in env.lines() {
            let name = line.split('=').next().unwrap_or("");
            assert!(
                KEPT_ENV.contains(&name)
                    || matches!(
                        name,
                        "CLAUDE_PROJECT_DIR" | "PWD" | "SHLVL" | "_" | "OLDPWD"
                    ),
                "unexpected variable {name}"
            );
        }
    }

    #[tokio::test]
    async fn timeouts_and_json_decisions() {
        let dir = tempfile::tempdir().unwrap();
        let v = serde_json::json!({"PreToolUse": [
            {"matcher": "Slow", "hooks": [{"type": "command", "command": "sleep 30", "timeout": 0.2}]},
            {"matcher": "Json", "hooks": [{"type": "command", "command":
                "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"deny\", \"permissionDecisionReason\": \"not today\"}}'"}]}
        ]});
        let (hooks, w) = Hooks::from_settings_value(&v);
        assert!(w.is_empty(), "{w:?}");
        let runner = HookRunner::new(hooks, dir.path());
        let ctx = TaskContext::new();
        let started = std::time::Instant::now();
        let slow = runner
            .fire(HookEvent::PreToolUse, "Slow", false, Map::new(), &ctx)
            .await;
        assert!(slow.block.is_none(), "a timeout does not block");
        assert!(started.elapsed() < Duration::from_secs(20));
        let json = runner
            .fire(HookEvent::PreToolUse, "Json", false, Map::new(), &ctx)
            .await;
        assert_eq!(json.block.as_deref(), Some("not today"));
    }

    /// A directory outside the workspace and outside the temp directory the sandbox grants:
    /// under the build's `target/`, else (a checkout inside the temp directory, such as a
    /// `mktemp -d` clone) under `$HOME/.cache`; `None` when both are inside the temp directory.
    fn outside_dir() -> Option<tempfile::TempDir> {
        let temp = std::env::temp_dir().canonicalize().unwrap();
        let candidates = [
            Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/hook-tests")),
            std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/subagents-hook-tests")),
        ];
        candidates.into_iter().flatten().find_map(|base| {
            std::fs::create_dir_all(&base).ok()?;
            let dir = tempfile::tempdir_in(&base).ok()?;
            (!dir.path().canonicalize().ok()?.starts_with(&temp)).then_some(dir)
        })
    }

    /// A hook that writes a marker outside the workspace and one in its `out/` subdirectory.
    fn writer_hooks(outside: &Path) -> Value {
        let command = format!(
            "echo x > '{}/marker'; echo y > out/inside",
            outside.display()
        );
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]})
    }

    #[test]
    fn only_the_users_own_settings_hooks_are_unconfined() {
        let v = json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]});
        let confined = |h: &Hooks| h.matching(HookEvent::PreToolUse, "Bash", false)[0].1;
        assert!(confined(&Hooks::from_frontmatter(&v).0));
        assert!(confined(&Hooks::from_settings_value(&v).0));
        assert!(!confined(&parse(&v, Origin::UserSettings).0));
        // The same command from the user's file and a workspace file runs confined.
        let mut both = parse(&v, Origin::UserSettings).0;
        both.merge(Hooks::from_settings_value(&v).0);
        assert!(confined(&both));
    }

    #[tokio::test]
    async fn settings_files_mark_the_users_file_unconfined() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.json");
        let project = dir.path().join("project.json");
        let body = |cmd: &str| {
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": cmd}]}]}})
                .to_string()
        };
        std::fs::write(&user, body("from-user")).unwrap();
        std::fs::write(&project, body("from-project")).unwrap();
        let (h, w) =
            Hooks::from_settings_files_with_user(&user, std::slice::from_ref(&project)).await;
        assert!(w.is_empty(), "{w:?}");
        let found = h.matching(HookEvent::PreToolUse, "Bash", false);
        let by = |c: &str| found.iter().find(|(h, _)| h.command == c).unwrap().1;
        assert!(!by("from-user"), "the user's own hooks run unconfined");
        assert!(by("from-project"), "workspace settings hooks run confined");
        // Without the explicit user file, every file's hooks are confined.
        let (h, _) = Hooks::from_settings_files(&[user, project]).await;
        assert!(
            h.matching(HookEvent::PreToolUse, "Bash", false)
                .iter()
                .all(|(_, confined)| *confined)
        );
    }

    #[tokio::test]
    async fn frontmatter_hooks_run_confined_like_bash() {
        let support = subagent_tools::landlock_support();
        if !support.confines() {
            eprintln!(
                "SKIPPED frontmatter_hooks_run_confined_like_bash: Landlock does not confine here ({support:?})"
            );
            return;
        }
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("out")).unwrap();
        let Some(outside) = outside_dir() else {
            eprintln!(
                "SKIPPED frontmatter_hooks_run_confined_like_bash: no directory outside the temp directory to write to"
            );
            return;
        };
        let (hooks, w) = Hooks::from_frontmatter(&writer_hooks(outside.path()));
        assert!(w.is_empty(), "{w:?}");
        let ctx = TaskContext::new();
        // Through a run's hooks, with the run's Bash policy, and through a bare runner (the
        // default policy).
        let (run, _) = RunHooks::new(
            Some(&writer_hooks(outside.path())),
            &Hooks::new(),
            &ctx,
            "worker",
            PermissionMode::Default,
            RunPlace {
                project_dir: ws.path(),
                cwd: ws.path(),
                sandbox: &SandboxPolicy::default(),
            },
        );
        let runners = [run.own.clone(), HookRunner::new(hooks, ws.path())];
        for runner in runners {
            let _ = std::fs::remove_file(ws.path().join("out/inside"));
            runner
                .fire(HookEvent::PreToolUse, "Bash", false, Map::new(), &ctx)
                .await;
            assert!(
                !outside.path().join("marker").exists(),
                "a confined hook wrote outside the workspace"
            );
            assert_eq!(
                std::fs::read_to_string(ws.path().join("out/inside")).unwrap(),
                "y\n",
                "a confined hook still writes in the workspace"
            );
        }
    }

    #[tokio::test]
    async fn a_users_hook_runs_confined_once_a_workspace_file_it_names_changed() {
        let ws = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::create_dir_all(root.join("tools")).unwrap();
        // The script says where it may write temporary files: a confined hook gets the
        // sandbox's temp directory, an unconfined one ours.
        let script = "printf '%s' \"$TMPDIR\" > \"$CLAUDE_PROJECT_DIR/out/tmpdir\"\n";
        std::fs::write(root.join("tools/h.sh"), script).unwrap();
        let v = json!({"PreToolUse": [{"hooks": [{"type": "command",
            "command": "sh \"$CLAUDE_PROJECT_DIR/tools/h.sh\""}]}]});
        let hooks = parse(&v, Origin::UserSettings)
            .0
            .pin_workspace_scripts(&root);
        let policy = SandboxPolicy::default();
        let runner = HookRunner::new(hooks, &root).with_sandbox(policy.clone(), &root);
        let ctx = TaskContext::new();
        let tmpdir = || runner.fire(HookEvent::PreToolUse, "Bash", false, Map::new(), &ctx);
        tmpdir().await;
        let unconfined = std::env::var("TMPDIR").unwrap_or_default();
        let wrote = || std::fs::read_to_string(root.join("out/tmpdir")).unwrap();
        assert_eq!(
            wrote(),
            unconfined,
            "unchanged: the user's hook runs unconfined"
        );
        std::fs::write(root.join("tools/h.sh"), format!("# edited\n{script}")).unwrap();
        tmpdir().await;
        assert_eq!(
            wrote(),
            policy.temp_dir_for(&root).display().to_string(),
            "changed since pinned: the hook runs confined"
        );
    }

    #[tokio::test]
    async fn unconfined_hooks_write_anywhere() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("out")).unwrap();
        let Some(outside) = outside_dir() else {
            eprintln!(
                "SKIPPED unconfined_hooks_write_anywhere: no directory outside the temp directory to write to"
            );
            return;
        };
        let v = writer_hooks(outside.path());
        let ctx = TaskContext::new();
        // The user's own settings hooks, and any hook with the sandbox off (`--no-sandbox`).
        let runners = [
            HookRunner::new(parse(&v, Origin::UserSettings).0, ws.path()),
            HookRunner::new(Hooks::from_frontmatter(&v).0, ws.path())
                .with_sandbox(SandboxPolicy::unconfined(), ws.path()),
        ];
        for runner in runners {
            let _ = std::fs::remove_file(outside.path().join("marker"));
            runner
                .fire(HookEvent::PreToolUse, "Bash", false, Map::new(), &ctx)
                .await;
            assert!(outside.path().join("marker").exists());
            assert!(ws.path().join("out/inside").exists());
        }
    }
}
