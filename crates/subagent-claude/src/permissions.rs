//! Permission modes and rules enforced on tool calls, with Claude Code's meanings, and the
//! approval channel for calls that must be asked.
//!
//! | mode | reads | edits | commands, web |
//! |---|---|---|---|
//! | `default` | free | ask | ask |
//! | `acceptEdits` | free | free | ask |
//! | `plan` | free | refused | refused |
//! | `dontAsk` | free | denied (what would ask is denied) | denied |
//! | `bypassPermissions` | free | free | free |
//! | `auto` | free | free | free (Claude Code decides with a classifier; we have none) |
//!
//! Rules come first: a matching `deny` rule refuses the call in every mode; a matching `ask`
//! rule asks (except under `bypassPermissions` and `auto`, where nothing asks); a matching
//! `allow` rule runs it (except under `plan`, which stays read-only). "Ask" goes to the
//! [`Approver`] in the run's context; with none, the call is denied with a message the model
//! reads. Under `dontAsk`, what would ask is denied.
//!
//! A change to one of the project's protected control files (`subagents.toml`, `.mcp.json`,
//! `.claude/settings*.json`, `.claude/agents/`, `.claude/skills/`, `.git/hooks/`,
//! `.git/config`...: [`subagent_tools::PROTECTED_PATHS`]) by a file-changing tool always asks,
//! in every mode (`bypassPermissions`, `auto` and `acceptEdits` included), whatever allow rule
//! matches; the request is [person-only](ApprovalRequest::person_only) (never answered by
//! `--yes`, never remembered for the session); without a person (no approver, `dontAsk`,
//! `plan`) it is denied, naming the file. A deny rule still denies it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use subagent_spi::{
    ApprovalDecision, ApprovalRequest, Approver, TaskContext, Tool, ToolEffect, ToolError,
    ToolOutput,
};

use crate::definition::PermissionMode;
use crate::error::ClaudeError;
use crate::rules::{PermissionRule, PermissionRules, RuleAction, bash_session_rule, web_host};

/// What the mode and rules say about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run it.
    Allow,
    /// Ask the approver.
    Ask {
        /// Why, for the approver and for a denial message.
        reason: String,
        /// What "allow for the session" covers.
        session_rule: String,
    },
    /// Refuse it; the model reads the message.
    Deny(String),
}

/// The mode and rules one agent's tool calls obey, with Claude Code's meanings:
///
/// | mode | reads | edits | commands, web, MCP tools |
/// |---|---|---|---|
/// | `default` | run | ask | ask |
/// | `acceptEdits` | run | run | ask |
/// | `plan` | run | refused | refused |
/// | `dontAsk` | run | denied | denied |
/// | `bypassPermissions` | run | run | run |
/// | `auto` | run | run | run (no classifier here) |
///
/// A matching deny rule refuses the call in every mode; a matching ask rule asks (except under
/// `bypassPermissions` and `auto`); a matching allow rule runs it (except under `plan`). What
/// must be asked goes to the run's [`Approver`]; without one it is denied, and under `dontAsk`
/// it is denied without asking. [`guard_tools`] applies a policy to tools.
///
/// With a [`workspace`](Self::with_workspace), a file-changing call (effect
/// [`ToolEffect::Edit`]) that targets one of its protected control files always asks a person
/// (see the module documentation); the built-in `Write` and `Edit` refuse such a file unless
/// the guard approved the call, so without a workspace here they are simply refused.
#[derive(Debug, Clone)]
pub struct PermissionPolicy {
    mode: PermissionMode,
    rules: Arc<PermissionRules>,
    workspace: Option<subagent_tools::Workspace>,
}

impl PermissionPolicy {
    /// A policy of a mode and rules.
    pub fn new(mode: PermissionMode, rules: Arc<PermissionRules>) -> Self {
        Self {
            mode,
            rules,
            workspace: None,
        }
    }

    /// The workspace whose protected control files the policy guards (builder style).
    #[must_use]
    pub fn with_workspace(mut self, workspace: subagent_tools::Workspace) -> Self {
        self.workspace = Some(workspace);
        self
    }

    /// Decides a call of the file-changing `tool` that targets a protected file: a deny rule,
    /// `plan` and `dontAsk` refuse it (`Err`, the message); otherwise it asks (`Ok`, why), in
    /// every other mode and whatever allow rule matches.
    pub(crate) fn evaluate_protected(
        &self,
        tool: &str,
        input: &Value,
        target: &subagent_tools::ProtectedTarget,
    ) -> Result<String, String> {
        use PermissionMode as M;
        if let Some(rule) = self.rules.denied_by(tool, input) {
            return Err(format!(
                "Permission denied: `{tool}` is refused by the deny rule `{rule}` ({}). Do not \
                 retry it; continue without it or explain what you would have done.",
                rule.source()
            ));
        }
        let why = protected_reason(target);
        if matches!(self.mode, M::Plan | M::DontAsk) {
            return Err(format!(
                "Permission denied: {why}, and permission mode `{}` asks no one. Do not retry it \
                 with another tool; tell the user what change you would make and why.",
                self.mode
            ));
        }
        Ok(why)
    }

    /// The mode.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// Decides one call of `tool` (whose effect is `effect`) with `input`.
    pub(crate) fn evaluate(&self, tool: &str, effect: ToolEffect, input: &Value) -> Verdict {
        use PermissionMode as M;
        if let Some(rule) = self.rules.denied_by(tool, input) {
            return Verdict::Deny(format!(
                "Permission denied: `{tool}` is refused by the deny rule `{rule}` ({}). Do not \
                 retry it; continue without it or explain what you would have done.",
                rule.source()
            ));
        }
        let safe = matches!(effect, ToolEffect::ReadOnly | ToolEffect::Delegate);
        if self.mode == M::Plan && !safe {
            return Verdict::Deny(format!(
                "permission mode `plan` allows only read-only tools, and `{tool}` {}. Do not \
                 retry; describe the change in your answer instead.",
                effect_phrase(effect)
            ));
        }
        if matches!(self.mode, M::BypassPermissions | M::Auto) {
            return Verdict::Allow;
        }
        let session_rule = session_rule(tool, effect, input);
        let ask = if let Some(rule) = self.rules.asked_by(tool, input) {
            Some((
                format!("the ask rule `{rule}` ({})", rule.source()),
                rule.text().to_string(),
            ))
        } else if self.rules.allows(tool, input) || safe {
            None
        } else {
            match (self.mode, effect) {
                (M::AcceptEdits, ToolEffect::Edit) => None,
                (mode, effect) => Some((
                    format!(
                        "permission mode `{mode}`: {}",
                        match effect {
                            ToolEffect::Edit => "file edits ask",
                            _ => "commands and web fetches ask",
                        }
                    ),
                    session_rule,
                )),
            }
        };
        match ask {
            None => Verdict::Allow,
            Some((reason, _)) if self.mode == M::DontAsk => Verdict::Deny(format!(
                "Permission denied: `{tool}` would need approval ({reason}), and permission mode \
                 `dontAsk` denies whatever is not allowed by a rule. Do not retry it; continue \
                 without it or explain what you would have done."
            )),
            Some((reason, session_rule)) => Verdict::Ask {
                reason,
                session_rule,
            },
        }
    }
}

/// Why a change to a protected file asks.
fn protected_reason(target: &subagent_tools::ProtectedTarget) -> String {
    format!(
        "`{}` is one of the project's protected control files (`{}`): changing it can lift the \
         sandbox or the permissions, or run commands, in later runs, so a person approves each \
         write, in every permission mode",
        target.shown, target.entry
    )
}

/// What "allow for the session" covers for a call.
fn session_rule(tool: &str, effect: ToolEffect, input: &Value) -> String {
    if tool == "Bash" {
        let command = input.get("command").and_then(Value::as_str).unwrap_or("");
        return bash_session_rule(command);
    }
    if tool == "WebFetch"
        && let Some(host) = web_host(input)
    {
        return format!("WebFetch(domain:{host})");
    }
    if effect == ToolEffect::Edit {
        return "Edit".to_string();
    }
    tool.to_string()
}

fn effect_phrase(effect: ToolEffect) -> &'static str {
    match effect {
        ToolEffect::Edit => "changes files",
        ToolEffect::Execute => "runs commands or reaches the network",
        _ => "is not read-only",
    }
}

/// A short, single-line summary of a call's input, for an approval prompt.
pub fn summarize_input(tool: &str, input: &Value) -> String {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    let text = match tool {
        "Bash" => field("command").map(str::to_string),
        "WebFetch" => field("url").map(str::to_string),
        "Grep" | "Glob" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p} in {path}"),
            None => p.to_string(),
        }),
        _ => field("file_path")
            .or_else(|| field("path"))
            .map(str::to_string),
    }
    .unwrap_or_else(|| input.to_string());
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 200 {
        format!("{}…", one_line.chars().take(200).collect::<String>())
    } else {
        one_line
    }
}

/// A tool wrapped so its calls obey a [`PermissionPolicy`]. A refused call is a
/// [`ToolError::Denied`] the model reads as an error result.
struct GuardedTool {
    inner: Arc<dyn Tool>,
    policy: PermissionPolicy,
    agent: String,
    fallback: Option<Arc<dyn Approver>>,
}

#[async_trait]
impl Tool for GuardedTool {
    wrapped_tool_identity!();

    fn description(&self) -> String {
        self.inner.description()
    }

    async fn call(
        &self,
        input: serde_json::Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        let name = self.inner.name();
        let effect = self.inner.effect();
        if effect == ToolEffect::Edit
            && let Some(ws) = self.policy.workspace.clone()
        {
            let probe = input.clone();
            let target = tokio::task::spawn_blocking(move || {
                subagent_tools::protected_write_target(&ws, &probe)
            })
            .await
            .ok()
            .flatten();
            if let Some(target) = target {
                return self.call_protected(target, input, ctx).await;
            }
        }
        match self.policy.evaluate(name, effect, &input) {
            Verdict::Allow => {}
            Verdict::Deny(message) => return Err(ToolError::denied(name, message)),
            Verdict::Ask {
                reason,
                session_rule,
            } => {
                let request = self
                    .approval_request(name, &input, &reason, ctx)
                    .with_session_rule(session_rule);
                let Some(approver) = ctx.approver().or(self.fallback.as_ref()) else {
                    return Err(ToolError::denied(
                        name,
                        format!(
                            "`{name}` needs approval ({reason}), and no one is available to \
                             approve it here, so it was denied. Do not retry the same call; \
                             continue without it or explain what you would have done."
                        ),
                    ));
                };
                if !approver.granted(&request) {
                    let decision = decide(approver, request, name, ctx).await?;
                    if let ApprovalDecision::Deny { message } = decision {
                        return Err(ToolError::denied(
                            name,
                            format!(
                                "The call was not approved (it asks because of {reason}): \
                                 {message} Do not retry the same call; continue without it or \
                                 explain what you would have done."
                            ),
                        ));
                    }
                }
            }
        }
        self.inner.call(input, ctx).await
    }
}

/// Asks `approver` about `request`, giving up with [`ToolError::Cancelled`] when the task is
/// cancelled while it waits.
async fn decide(
    approver: &Arc<dyn Approver>,
    request: ApprovalRequest,
    name: &str,
    ctx: &TaskContext,
) -> Result<ApprovalDecision, ToolError> {
    tokio::select! {
        d = approver.request(request) => Ok(d),
        () = ctx.cancel().cancelled() => Err(ToolError::Cancelled { tool: name.to_string() }),
    }
}

impl GuardedTool {
    /// The request for a person to approve calling `name` with `input` for `reason`, naming
    /// the agent path (this agent when the context has none) and the task.
    fn approval_request(
        &self,
        name: &str,
        input: &Value,
        reason: &str,
        ctx: &TaskContext,
    ) -> ApprovalRequest {
        let mut path = ctx.agent_path();
        if path.is_empty() {
            path.push(self.agent.clone());
        }
        let request = ApprovalRequest::new(path, name, summarize_input(name, input), reason);
        match ctx.task_id() {
            Some(id) => request.with_task_id(id),
            None => request,
        }
    }

    /// A call that would change a protected file: asks a person (person-only, never
    /// remembered), then runs it with the approval the tool checks.
    async fn call_protected(
        &self,
        target: subagent_tools::ProtectedTarget,
        input: Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        let name = self.inner.name();
        let reason = self
            .policy
            .evaluate_protected(name, &input, &target)
            .map_err(|message| ToolError::denied(name, message))?;
        let request = self
            .approval_request(name, &input, &reason, ctx)
            .person_only();
        let Some(approver) = ctx.approver().or(self.fallback.as_ref()) else {
            return Err(ToolError::denied(
                name,
                format!(
                    "{reason}, and no one is available to approve it here, so it was denied. Do \
                     not retry it with another tool; tell the user what change you would make \
                     and why."
                ),
            ));
        };
        let decision = decide(approver, request, name, ctx).await?;
        if let ApprovalDecision::Deny { message } = decision {
            return Err(ToolError::denied(
                name,
                format!(
                    "The call was not approved ({reason}): {message} Do not retry it with another \
                     tool; tell the user what change you would make and why."
                ),
            ));
        }
        let approved = ctx
            .clone()
            .with_extension(subagent_tools::ApprovedProtectedWrite::new(target.path));
        self.inner.call(input, &approved).await
    }
}

/// Wraps tools so their calls obey `policy`. `fallback` is asked when a run's context has no
/// approver. Tools the policy lets through unconditionally are still wrapped (rules may name
/// them); wrapping costs one check per call.
pub fn guard_tools(
    tools: Vec<Arc<dyn Tool>>,
    policy: &PermissionPolicy,
    agent: &str,
    fallback: Option<&Arc<dyn Approver>>,
) -> Vec<Arc<dyn Tool>> {
    tools
        .into_iter()
        .map(|t| {
            Arc::new(GuardedTool {
                inner: t,
                policy: policy.clone(),
                agent: agent.to_string(),
                fallback: fallback.cloned(),
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// Permission settings read from Claude Code's `.claude/settings.json` and
/// `.claude/settings.local.json`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PermissionSettings {
    /// The rules of every file read.
    pub rules: PermissionRules,
    /// `permissions.defaultMode` (the last file that sets it wins).
    pub default_mode: Option<PermissionMode>,
    /// The files read.
    pub files: Vec<PathBuf>,
    /// Rules that can never match, and other things worth telling.
    pub warnings: Vec<String>,
}

impl PermissionSettings {
    /// Reads `<project>/.claude/settings.json` then `<project>/.claude/settings.local.json`,
    /// those that exist. Relative path rules are relative to `project`. A file that is not
    /// JSON, a rule that cannot be read or an unknown mode is an error naming the file.
    pub fn load(project: &Path) -> Result<Self, ClaudeError> {
        Self::load_with(project, |_| true)
    }

    /// [`load`](Self::load), applying the settings that lift a limit (`permissions.allow`
    /// rules, a `defaultMode` of `acceptEdits`, `bypassPermissions` or `auto`) only from the
    /// files `trusted` accepts; the other settings (ask and deny rules, a stricter mode) of
    /// every file apply. What was left out is in the warnings, naming the file.
    pub fn load_with(project: &Path, trusted: impl Fn(&Path) -> bool) -> Result<Self, ClaudeError> {
        let mut out = Self::default();
        for name in ["settings.json", "settings.local.json"] {
            let path = project.join(".claude").join(name);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(ClaudeError::Io { path, source }),
            };
            if trusted(&path) {
                out.read_json(&path, &text, project)?;
            } else {
                out.read_json_limited(&path, &text, project)?;
            }
        }
        out.warnings.extend(out.rules.warnings());
        Ok(out)
    }

    /// Reads one settings file's text leaving out what lifts a limit: allow rules, and a
    /// `defaultMode` weaker than `default`. A warning names the file and what was left out.
    pub fn read_json_limited(
        &mut self,
        path: &Path,
        text: &str,
        project: &Path,
    ) -> Result<(), ClaudeError> {
        let mut full = Self::default();
        full.read_json(path, text, project)?;
        self.files.append(&mut full.files);
        let mut left_out = Vec::new();
        let allows = full.rules.rules(RuleAction::Allow).len();
        if allows > 0 {
            left_out.push(format!("{allows} permissions.allow rule(s)"));
        }
        for action in [RuleAction::Ask, RuleAction::Deny] {
            for rule in full.rules.rules(action) {
                self.rules.push(action, rule.clone());
            }
        }
        match full.default_mode {
            Some(m) if m.lifts_limits() => {
                left_out.push(format!("permissions.defaultMode `{m}`"));
            }
            Some(m) => self.default_mode = Some(m),
            None => {}
        }
        if !left_out.is_empty() {
            self.warnings.push(format!(
                "{}: not applied (the file is not approved): {}",
                path.display(),
                left_out.join(", ")
            ));
        }
        Ok(())
    }

    /// Reads one settings file's text (`path` names it in errors).
    pub fn read_json(
        &mut self,
        path: &Path,
        text: &str,
        project: &Path,
    ) -> Result<(), ClaudeError> {
        let bad = |message: String| ClaudeError::Settings {
            path: path.to_path_buf(),
            message,
        };
        let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        self.files.push(path.to_path_buf());
        let Some(perms) = v.get("permissions") else {
            return Ok(());
        };
        if !perms.is_object() {
            return Err(bad("`permissions` must be an object".into()));
        }
        let source = path.display().to_string();
        for (key, action) in [
            ("allow", RuleAction::Allow),
            ("ask", RuleAction::Ask),
            ("deny", RuleAction::Deny),
        ] {
            match perms.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        let Some(text) = item.as_str() else {
                            return Err(bad(format!(
                                "`permissions.{key}` must hold strings, not {item}"
                            )));
                        };
                        let rule = PermissionRule::parse(text, project, &source)
                            .map_err(|e| bad(format!("`permissions.{key}`: {e}")))?;
                        self.rules.push(action, rule);
                    }
                }
                Some(other) => {
                    return Err(bad(format!(
                        "`permissions.{key}` must be a list of rules, not {other}"
                    )));
                }
            }
        }
        if let Some(mode) = perms.get("defaultMode").and_then(Value::as_str) {
            self.default_mode = Some(PermissionMode::parse(mode).ok_or_else(|| {
                bad(format!(
                    "unknown `permissions.defaultMode` `{mode}`; valid modes: {}",
                    PermissionMode::VALID.join(", ")
                ))
            })?);
        }
        Ok(())
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Allow => f.write_str("allow"),
            Verdict::Ask { reason, .. } => write!(f, "ask ({reason})"),
            Verdict::Deny(m) => write!(f, "deny ({m})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(mode: PermissionMode, rules: &[(RuleAction, &str)]) -> PermissionPolicy {
        let mut r = PermissionRules::new();
        for (a, t) in rules {
            r.push(
                *a,
                PermissionRule::parse(t, Path::new("/p"), "test").unwrap(),
            );
        }
        PermissionPolicy::new(mode, Arc::new(r))
    }

    fn kind(v: &Verdict) -> &'static str {
        match v {
            Verdict::Allow => "allow",
            Verdict::Ask { .. } => "ask",
            Verdict::Deny(_) => "deny",
        }
    }

    #[test]
    fn modes_have_claude_codes_meanings() {
        use PermissionMode as M;
        use ToolEffect as E;
        let i = json!({"command": "touch x", "file_path": "x"});
        let table = [
            (M::Default, ["allow", "allow", "ask", "ask"]),
            (M::AcceptEdits, ["allow", "allow", "allow", "ask"]),
            (M::Plan, ["allow", "allow", "deny", "deny"]),
            (M::DontAsk, ["allow", "allow", "deny", "deny"]),
            (M::BypassPermissions, ["allow", "allow", "allow", "allow"]),
            (M::Auto, ["allow", "allow", "allow", "allow"]),
        ];
        for (mode, expected) in table {
            let p = policy(mode, &[]);
            let got: Vec<_> = [
                ("Read", E::ReadOnly),
                ("Task", E::Delegate),
                ("Write", E::Edit),
                ("Bash", E::Execute),
            ]
            .iter()
            .map(|(t, e)| kind(&p.evaluate(t, *e, &i)))
            .collect();
            assert_eq!(got, expected, "mode {mode}");
        }
    }

    #[test]
    fn deny_wins_then_ask_then_allow() {
        use PermissionMode as M;
        let git = json!({"command": "git status"});
        let p = policy(
            M::Default,
            &[
                (RuleAction::Allow, "Bash(git:*)"),
                (RuleAction::Deny, "Bash(git status:*)"),
            ],
        );
        assert_eq!(kind(&p.evaluate("Bash", ToolEffect::Execute, &git)), "deny");
        let p = policy(
            M::Default,
            &[
                (RuleAction::Allow, "Bash(git:*)"),
                (RuleAction::Ask, "Bash(git status:*)"),
            ],
        );
        match p.evaluate("Bash", ToolEffect::Execute, &git) {
            Verdict::Ask { session_rule, .. } => assert_eq!(session_rule, "Bash(git status:*)"),
            v => panic!("{v}"),
        }
        let p = policy(M::Default, &[(RuleAction::Allow, "Bash(git status:*)")]);
        assert_eq!(
            kind(&p.evaluate("Bash", ToolEffect::Execute, &git)),
            "allow"
        );
        let touch = json!({"command": "touch x"});
        assert_eq!(
            kind(&p.evaluate("Bash", ToolEffect::Execute, &touch)),
            "ask"
        );
        // Deny rules hold under bypassPermissions; allow rules do not lift plan.
        let p = policy(M::BypassPermissions, &[(RuleAction::Deny, "Bash(rm:*)")]);
        assert_eq!(
            kind(&p.evaluate("Bash", ToolEffect::Execute, &json!({"command": "rm -rf x"}))),
            "deny"
        );
        let p = policy(M::Plan, &[(RuleAction::Allow, "Bash")]);
        assert_eq!(kind(&p.evaluate("Bash", ToolEffect::Execute, &git)), "deny");
        // dontAsk: an allow rule runs, whatever would ask is denied.
        let p = policy(M::DontAsk, &[(RuleAction::Allow, "Bash(git status:*)")]);
        assert_eq!(
            kind(&p.evaluate("Bash", ToolEffect::Execute, &git)),
            "allow"
        );
        assert_eq!(
            kind(&p.evaluate("Bash", ToolEffect::Execute, &touch)),
            "deny"
        );
        // Read rules can ask for reads.
        let p = policy(M::AcceptEdits, &[(RuleAction::Ask, "Read(./secrets/**)")]);
        assert_eq!(
            kind(&p.evaluate(
                "Read",
                ToolEffect::ReadOnly,
                &json!({"file_path": "secrets/k"})
            )),
            "ask"
        );
    }

    #[test]
    fn settings_files_are_read_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join(".claude");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::write(
            claude.join("settings.json"),
            r#"{"permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(./secrets/**)"], "defaultMode": "acceptEdits"}}"#,
        )
        .unwrap();
        std::fs::write(
            claude.join("settings.local.json"),
            r#"{"permissions": {"ask": ["WebFetch(domain:example.com)"]}}"#,
        )
        .unwrap();
        let s = PermissionSettings::load(dir.path()).unwrap();
        assert_eq!(s.files.len(), 2);
        assert_eq!(s.default_mode, Some(PermissionMode::AcceptEdits));
        assert_eq!(s.rules.rules(RuleAction::Allow).len(), 1);
        assert_eq!(s.rules.rules(RuleAction::Deny).len(), 1);
        assert_eq!(s.rules.rules(RuleAction::Ask).len(), 1);

        std::fs::write(
            claude.join("settings.local.json"),
            r#"{"permissions": {"defaultMode": "yolo"}}"#,
        )
        .unwrap();
        let e = PermissionSettings::load(dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("settings.local.json") && e.contains("yolo") && e.contains("acceptEdits"),
            "{e}"
        );
        std::fs::write(
            claude.join("settings.local.json"),
            r#"{"permissions": {"allow": ["Bash(x"]}}"#,
        )
        .unwrap();
        let e = PermissionSettings::load(dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("settings.local.json") && e.contains("Bash(x"),
            "{e}"
        );
        std::fs::write(claude.join("settings.local.json"), "{nope").unwrap();
        assert!(PermissionSettings::load(dir.path()).is_err());
    }

    #[test]
    fn summaries_are_one_short_line() {
        assert_eq!(
            summarize_input("Bash", &json!({"command": "echo a\necho b"})),
            "echo a echo b"
        );
        assert_eq!(
            summarize_input("Write", &json!({"file_path": "a.txt", "content": "x"})),
            "a.txt"
        );
        assert!(
            summarize_input("Bash", &json!({"command": "x".repeat(500)}))
                .chars()
                .count()
                <= 201
        );
    }
}
