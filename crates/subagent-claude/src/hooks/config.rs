//! Which hooks there are: the `hooks:` of agent frontmatter and settings files parsed,
//! bounded and matched to events, tools and agents ([`Hooks`]).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use subagent_tools::ScriptPins;
use tokio::io::AsyncReadExt;

use super::*;

/// What a group's `matcher` matches against (a tool name or an agent name).
#[derive(Debug, Clone)]
pub(super) enum Matcher {
    /// `*`, empty or absent.
    All,
    /// Letters, digits, `_`, `-`, spaces: one name, or several separated by `|` (or `,`).
    Names(Vec<String>),
    /// Anything else: an unanchored regular expression.
    Regex(regex::Regex),
}

impl Matcher {
    pub(super) fn compile(text: Option<&str>) -> Result<Self, String> {
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
    pub(super) fn matches(&self, subject: &str) -> bool {
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
pub(super) struct Group {
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
pub(super) enum Origin {
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
    pub(super) async fn changed_script(&self, command: &str) -> Option<PathBuf> {
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
    pub(super) fn matching(
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

    /// The hooks a run hands its children: its `SubagentStart`/`SubagentStop` hooks (not its
    /// own `Stop`).
    pub(super) fn subagent_hooks(&self) -> Hooks {
        self.filtered(|g| {
            !g.own_stop && matches!(g.event, HookEvent::SubagentStart | HookEvent::SubagentStop)
        })
    }

    /// The tool hooks: `PreToolUse`, `PostToolUse`, `PostToolUseFailure`.
    pub(super) fn tool_hooks(&self) -> Hooks {
        self.filtered(|g| {
            matches!(
                g.event,
                HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PostToolUseFailure
            )
        })
    }

    /// A copy holding only the groups `keep` selects.
    pub(super) fn filtered(&self, keep: impl Fn(&Group) -> bool) -> Hooks {
        Hooks {
            groups: Arc::new(self.groups.iter().filter(|g| keep(g)).cloned().collect()),
            disabled: self.disabled,
            pins: self.pins.clone(),
        }
    }
}

pub(super) async fn read_settings(path: &Path) -> Result<Option<String>, String> {
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

pub(super) fn parse(value: &Value, origin: Origin) -> (Hooks, Vec<String>) {
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

pub(super) fn command_hook(
    event: &str,
    h: &Value,
    warnings: &mut Vec<String>,
) -> Option<CommandHook> {
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

pub(super) fn short(v: &Value) -> String {
    short_text(&v.to_string())
}

pub(super) fn short_text(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

// --- running hooks ---
