//! Running hook commands: the confined `sh -c` with the event on stdin, its output bounded
//! and read as Claude Code reads it ([`HookRunner`]).

use crate::definition::PermissionMode;
use derive_setters::Setters;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use subagent_spi::{CancellationToken, TaskContext};
use subagent_tools::{ConfinedCommand, SandboxPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// The hook session a tree of runs shares (`session_id` in hook input), kept in the context's
/// extensions so every run below the first sees the same one.
#[derive(Debug, Clone)]
pub(super) struct HookSession(String);

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

pub(super) fn session_id(ctx: &TaskContext) -> String {
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

    /// This runner with other hooks (same place, session and confinement).
    pub(super) fn replacing_hooks(self, hooks: Hooks) -> Self {
        Self { hooks, ..self }
    }

    /// The hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
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
pub(super) struct CommandResult {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// It could not start, timed out, or was cancelled.
    failure: Option<String>,
}

pub(super) fn interpret(
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

pub(super) fn push_block(v: &mut Verdict, msg: String) {
    match &mut v.block {
        Some(existing) => {
            existing.push('\n');
            existing.push_str(&msg);
        }
        None => v.block = Some(msg),
    }
}

pub(super) async fn read_capped(mut pipe: impl tokio::io::AsyncRead + Unpin) -> String {
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

pub(super) async fn run_command(
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
