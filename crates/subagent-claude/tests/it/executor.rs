//! The Claude executor against the scripted model server (real HTTP, OpenAI wire format):
//! tool filtering, model routing, skills, maxTurns, resume, permission modes, depth.

use crate::common::landlock;

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use subagent_claude::{
    ClaudeAgentDefinition, ClaudeExecutor, ClaudeSubagentType, PermissionMode, PermissionRules,
    RuleAction, parse_agent,
};
use subagent_core::SessionApprover;
use subagent_providers::OpenAiModel;
use subagent_runtime::ModelRegistry;
use subagent_spi::{
    ApprovalDecision, Approver, SubagentDefinition, SubagentError, TaskCall, TaskContext,
    TaskStatus, Tool, ToolEffect, ToolOutput,
};
use subagent_testkit::{
    FnTool, RecordedRequest, Reply, SCRIPT_EXHAUSTED_DENIAL, ScriptedApprover, ScriptedModelServer,
};

/// A stand-in for the host's delegation handle, as the `Task` tool puts it into each child's
/// context.
#[derive(Debug)]
struct FakeDelegation(u32);

impl subagent_spi::Delegation for FakeDelegation {
    fn max_depth(&self) -> u32 {
        self.0
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        // A stand-in for the host's `Task` tool: the executor only filters it by name.
        vec![Arc::new(
            FnTool::new(
                "Task",
                "Delegate to a subagent",
                json!({"type": "object", "properties": {"prompt": {"type": "string"}}}),
                |_| Ok(ToolOutput::text("delegated")),
            )
            .with_effect(ToolEffect::Delegate),
        )]
    }
    fn agent_names(&self) -> Vec<String> {
        vec!["test-agent".into()]
    }
}

struct Harness {
    server: ScriptedModelServer,
    dir: tempfile::TempDir,
}

fn model(server: &ScriptedModelServer, id: &str) -> Arc<dyn subagent_spi::ChatModel> {
    Arc::new(
        OpenAiModel::builder()
            .base_url(server.openai_base_url())
            .api_key("test-key")
            .model(id)
            .max_retries(0)
            .build()
            .unwrap(),
    )
}

impl Harness {
    async fn new() -> Self {
        let server = ScriptedModelServer::start().await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hello notes\n").unwrap();
        // Confined Bash cannot create files directly in the workspace root (they could be its
        // protected control files): commands write here.
        std::fs::create_dir(dir.path().join("out")).unwrap();
        let skill = dir.path().join("skills/release-notes");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: release-notes\ndescription: Writes release notes\n---\nALWAYS group changes by crate.\n",
        )
        .unwrap();
        Self { server, dir }
    }

    /// A harness whose model server answers with `replies`, in order, and its executor.
    async fn scripted(replies: impl IntoIterator<Item = Reply>) -> (Self, Arc<ClaudeExecutor>) {
        let h = Self::new().await;
        for reply in replies {
            h.server.push(reply);
        }
        let ex = h.executor();
        (h, ex)
    }

    fn registry(&self) -> ModelRegistry {
        ModelRegistry::new()
            .with_model("model-a", model(&self.server, "model-a"))
            .with_model("model-b", model(&self.server, "model-b"))
            .with_alias("sonnet", "model-b")
            .with_default("model-a")
    }

    /// An executor.
    fn executor(&self) -> Arc<ClaudeExecutor> {
        self.executor_with(PermissionRules::new(), None)
    }

    /// An executor with permission rules and a mode override.
    fn executor_with(
        &self,
        rules: PermissionRules,
        mode: Option<PermissionMode>,
    ) -> Arc<ClaudeExecutor> {
        let mut b = ClaudeSubagentType::builder()
            .models(self.registry())
            .workspace(self.dir.path())
            .skill_dir(self.dir.path().join("skills"))
            .permission_rules(rules);
        if let Some(m) = mode {
            b = b.permission_mode(m);
        }
        b.build_with_executor().1
    }

    fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }
}

fn agent(front: &str, body: &str) -> Arc<dyn SubagentDefinition> {
    let text = format!("---\n{front}\n---\n{body}\n");
    Arc::new(
        parse_agent(Path::new("test-agent.md"), &text)
            .unwrap()
            .definition,
    )
}

/// The context of a child of the main agent (depth 1), with a delegation handle of the
/// default nesting limit (3).
fn child_ctx() -> TaskContext {
    ctx_at(1, 3)
}

/// A context at `depth` whose delegation handle has the nesting limit `max_depth`.
fn ctx_at(depth: u32, max_depth: u32) -> TaskContext {
    TaskContext::new()
        .with_delegation(Arc::new(FakeDelegation(max_depth)))
        .with_depth(depth - 1)
        .child("test-agent", Some("task_1".into()))
}

async fn run(
    ex: &ClaudeExecutor,
    def: &Arc<dyn SubagentDefinition>,
    call: TaskCall,
    ctx: TaskContext,
) -> Result<subagent_spi::TaskOutcome, SubagentError> {
    subagent_spi::SubagentExecutor::execute(ex, call, def.clone(), ctx).await
}

fn call(prompt: &str) -> TaskCall {
    TaskCall::new("test-agent", "test", prompt)
}

/// Runs `test-agent`, whose frontmatter adds the lines `front` and whose prompt is `body`, on
/// `prompt` as a child of the main agent.
async fn run_child(
    ex: &ClaudeExecutor,
    front: &str,
    body: &str,
    prompt: &str,
) -> subagent_spi::TaskOutcome {
    run_child_in(ex, front, body, prompt, child_ctx()).await
}

/// A session approver (as the host runs one) over a recorder answering with `answers`: the
/// recorder, and the approver to run with.
fn session_over(
    answers: impl IntoIterator<Item = ApprovalDecision>,
) -> (Arc<ScriptedApprover>, Arc<dyn Approver>) {
    let recorder = ScriptedApprover::answering(answers);
    let session = Arc::new(SessionApprover::new(recorder.clone()));
    (recorder, session)
}

/// [`run_child`] in the context `ctx`.
async fn run_child_in(
    ex: &ClaudeExecutor,
    front: &str,
    body: &str,
    prompt: &str,
    ctx: TaskContext,
) -> subagent_spi::TaskOutcome {
    let def = agent(&format!("name: test-agent\ndescription: d\n{front}"), body);
    run(ex, &def, call(prompt), ctx).await.unwrap()
}

#[tokio::test]
async fn tool_list_reflects_tools_and_disallowed_tools() {
    let (h, ex) = Harness::scripted([Reply::text("one"), Reply::text("two")]).await;

    let out = run_child(
        &ex,
        "tools: Read, Grep, Write, LS, mcp__none__*\ndisallowedTools: Write",
        "You help.",
        "go",
    )
    .await;
    assert_eq!(out.text, "one");
    run_child(
        &ex,
        "disallowedTools: [Bash, WebFetch, TodoWrite]",
        "You help.",
        "go",
    )
    .await;

    let reqs = h.requests();
    assert_eq!(reqs[0].tool_names(), ["Grep", "Read"]);
    // `tools` omitted: every tool, Task included (offered by the context's handle at depth 1).
    assert_eq!(
        reqs[1].tool_names(),
        ["Edit", "Glob", "Grep", "Read", "Task", "Write"]
    );
}

#[tokio::test]
async fn model_follows_the_routing_order() {
    let h = Harness::new().await;
    let ex = h.executor();
    for _ in 0..5 {
        h.server.push(Reply::text("ok"));
    }
    let plain = agent("name: test-agent\ndescription: d", "p");
    let sonnet = agent("name: test-agent\ndescription: d\nmodel: sonnet", "p");
    let inherit = agent("name: test-agent\ndescription: d\nmodel: inherit", "p");

    // TaskCall.model beats the frontmatter.
    run(&ex, &sonnet, call("x").with_model("model-a"), child_ctx())
        .await
        .unwrap();
    // The frontmatter alias.
    run(&ex, &sonnet, call("x"), child_ctx()).await.unwrap();
    // inherit: the parent's model from the context.
    let ctx = TaskContext::new()
        .with_parent_model("sonnet")
        .child("t", None);
    run(&ex, &inherit, call("x"), ctx).await.unwrap();
    // inherit without a parent model, and no model at all: the default.
    run(&ex, &inherit, call("x"), child_ctx()).await.unwrap();
    run(&ex, &plain, call("x"), child_ctx()).await.unwrap();

    let models: Vec<_> = h
        .requests()
        .iter()
        .map(|r| r.model().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        models,
        ["model-a", "model-b", "model-b", "model-a", "model-a"]
    );

    // An agent whose model cannot be used runs on the session's (default) model, with one
    // progress notice naming the model, where it came from, why, and what runs instead.
    let fable = agent("name: test-agent\ndescription: d\nmodel: fable", "p");
    h.server.push(Reply::text("ran anyway"));
    let recorder = Arc::new(subagent_testkit::ProgressRecorder::new());
    let ctx = child_ctx().with_progress(recorder.clone());
    let out = run(&ex, &fable, call("x"), ctx).await.unwrap();
    assert_eq!(out.text, "ran anyway");
    assert_eq!(h.server.last_request().unwrap().model(), Some("model-a"));
    let notices = recorder.statuses();
    assert_eq!(notices.len(), 1, "{notices:?}");
    for needle in [
        "model `fable` unusable (unknown here)",
        "session's model `model-a`",
    ] {
        assert!(notices[0].contains(needle), "{needle}: {notices:?}");
    }

    // A Task call naming an unknown model is an error the calling model reads; nothing is sent.
    let sent = h.server.request_count();
    let err = run(&ex, &fable, call("x").with_model("fable"), child_ctx())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("`fable`"), "{err}");
    assert!(err.contains("model-a") && err.contains("sonnet"), "{err}");
    assert_eq!(h.server.request_count(), sent);

    // Strict models: the agent fails (an outcome, not an error: a failed child), nothing sent.
    let strict = ClaudeSubagentType::builder()
        .models(h.registry())
        .workspace(h.dir.path())
        .strict_models(true)
        .build_with_executor()
        .1;
    let out = run(&strict, &fable, call("x"), child_ctx()).await.unwrap();
    assert_eq!(out.status, TaskStatus::Failed);
    assert!(
        out.text.contains("`fable`")
            && out.text.contains("the agent's `model` field")
            && out.text.contains("strict"),
        "{}",
        out.text
    );
    assert_eq!(h.server.request_count(), sent);
}

#[tokio::test]
async fn a_stand_in_model_is_used_with_a_notice_for_the_agents_model_only() {
    let h = Harness::new().await;
    let mut reg = h.registry();
    reg.set_stand_in(Arc::new(|name: &str| {
        name.starts_with("claude-")
            .then(|| format!("`{name}` needs ANTHROPIC_API_KEY"))
    }));
    let ex = ClaudeSubagentType::builder()
        .models(reg)
        .workspace(h.dir.path())
        .build_with_executor()
        .1;
    let dated = agent(
        "name: test-agent\ndescription: d\nmodel: claude-sonnet-4-20250514",
        "p",
    );
    h.server.push(Reply::text("ok"));
    let recorder = Arc::new(subagent_testkit::ProgressRecorder::new());
    let ctx = child_ctx().with_progress(recorder.clone());
    run(&ex, &dated, call("x"), ctx).await.unwrap();
    assert_eq!(h.server.last_request().unwrap().model(), Some("model-a"));
    let notices = recorder.statuses();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("needs ANTHROPIC_API_KEY") && notices[0].contains("`model-a`"),
        "{notices:?}"
    );
    // Inherited from a parent that asked for it: the stand-in, silently.
    h.server.push(Reply::text("ok"));
    let inherit = agent("name: test-agent\ndescription: d\nmodel: inherit", "p");
    let recorder = Arc::new(subagent_testkit::ProgressRecorder::new());
    let ctx = TaskContext::new()
        .with_parent_model("claude-opus-4-1")
        .with_progress(recorder.clone())
        .child("t", None);
    run(&ex, &inherit, call("x"), ctx).await.unwrap();
    assert!(recorder.statuses().is_empty());
}

#[tokio::test]
async fn skills_text_is_in_the_system_prompt() {
    let (h, ex) = Harness::scripted([Reply::text("ok")]).await;
    run_child(
        &ex,
        "skills: [release-notes, not-there]",
        "You are the release manager.",
        "write notes",
    )
    .await;
    let req = h.server.last_request().unwrap();
    let msgs = req.messages();
    assert_eq!(msgs[0]["role"], "system");
    let system = msgs[0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are the release manager."),
        "{system}"
    );
    assert!(
        system.contains("ALWAYS group changes by crate."),
        "{system}"
    );
    assert_eq!(msgs[1]["role"], "user");
    assert_eq!(msgs[1]["content"], "write notes");
    assert_eq!(msgs.len(), 2, "fresh context: system + the prompt only");
}

#[tokio::test]
async fn max_turns_stops_the_run() {
    let h = Harness::new().await;
    let ex = h.executor();
    for _ in 0..5 {
        h.server.push(Reply::tool_calls(vec![(
            "Read",
            json!({"file_path": "notes.txt"}),
        )]));
    }
    let out = run_child(&ex, "maxTurns: 2", "p", "loop").await;
    assert_eq!(out.status, TaskStatus::LimitReached);
    assert_eq!(
        out.limit.as_ref().map(ToString::to_string).as_deref(),
        Some("max_turns=2")
    );
    assert_eq!(h.server.request_count(), 2);
}

#[tokio::test]
async fn resume_sends_the_earlier_transcript() {
    let (h, ex) =
        Harness::scripted([Reply::text("the answer is 42"), Reply::text("yes, 42")]).await;
    let def = agent("name: test-agent\ndescription: d", "You answer.");
    let first = run(&ex, &def, call("what is the answer?"), child_ctx())
        .await
        .unwrap();
    let session = first.session_id.clone().expect("a session id");
    let second = run(
        &ex,
        &def,
        call("are you sure?").resuming(session.clone()),
        child_ctx(),
    )
    .await
    .unwrap();
    assert_eq!(second.text, "yes, 42");
    assert_eq!(second.session_id.as_deref(), Some(session.as_str()));
    let req = h.server.last_request().unwrap();
    let contents: Vec<_> = req
        .messages()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or(""),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        contents,
        [
            ("system", "You answer."),
            ("user", "what is the answer?"),
            ("assistant", "the answer is 42"),
            ("user", "are you sure?"),
        ]
    );

    let err = run(&ex, &def, call("hm").resuming("sess_unknown"), child_ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, SubagentError::Resume { .. }), "{err}");
}

#[tokio::test]
async fn plan_mode_refuses_write_with_a_readable_error() {
    let h = Harness::new().await;
    let ex = h.executor();
    h.server.push(Reply::tool_calls(vec![
        ("Write", json!({"file_path": "out.txt", "content": "x"})),
        ("Read", json!({"file_path": "notes.txt"})),
    ]));
    h.server.push(Reply::text("planned"));
    let out = run_child(&ex, "permissionMode: plan", "You plan.", "plan it").await;
    assert_eq!(out.text, "planned");
    assert!(!h.dir.path().join("out.txt").exists(), "Write must not run");
    let results = h.server.last_request().unwrap().tool_results();
    assert_eq!(results.len(), 2);
    assert!(
        results[0].contains("permission mode `plan`"),
        "{}",
        results[0]
    );
    assert!(results[0].contains("Write"), "{}", results[0]);
    assert!(
        results[1].contains("hello notes"),
        "reads still work: {}",
        results[1]
    );
}

fn write_call(file: &str) -> Reply {
    Reply::tool_calls(vec![("Write", json!({"file_path": file, "content": "x"}))])
}

fn bash_call(cmd: &str) -> Reply {
    Reply::tool_calls(vec![("Bash", json!({"command": cmd}))])
}

#[tokio::test]
async fn default_mode_asks_the_approver_and_accept_edits_allows_edits() {
    let h = Harness::new().await;
    let ex = h.executor();
    let approver = ScriptedApprover::answering(vec![]);
    let ctx = || child_ctx().with_approver(approver.clone());
    h.server.push(write_call("w.txt"));
    h.server.push(Reply::text("done"));
    h.server.push(write_call("w.txt"));
    h.server.push(bash_call("touch out/b.txt"));
    h.server.push(Reply::text("done"));

    run_child_in(&ex, "", "p", "w", ctx()).await;
    assert!(!h.dir.path().join("w.txt").exists());
    let results = h.server.last_request().unwrap().tool_results();
    assert!(
        results[0].contains("not approved") && results[0].contains(SCRIPT_EXHAUSTED_DENIAL),
        "{}",
        results[0]
    );
    assert_eq!(approver.summaries(), ["Write:w.txt"]);
    let req = approver.requests()[0].clone();
    assert_eq!(req.agent_path, ["test-agent"]);
    assert!(req.reason.contains("default"), "{}", req.reason);

    let accept = agent(
        "name: test-agent\ndescription: d\npermissionMode: acceptEdits",
        "p",
    );
    run(&ex, &accept, call("w"), ctx()).await.unwrap();
    assert!(
        h.dir.path().join("w.txt").exists(),
        "acceptEdits allows Write"
    );
    assert!(
        !h.dir.path().join("out/b.txt").exists(),
        "acceptEdits asks for Bash"
    );
    assert_eq!(
        approver.summaries(),
        ["Write:w.txt", "Bash:touch out/b.txt"],
        "no approval asked for an edit, one for the command"
    );
}

#[tokio::test]
async fn without_an_approver_ask_means_deny_with_a_readable_message() {
    let (h, ex) = Harness::scripted([bash_call("touch out/nobody.txt"), Reply::text("ok")]).await;
    run_child(&ex, "", "p", "x").await;
    assert!(!h.dir.path().join("out/nobody.txt").exists());
    let results = h.server.last_request().unwrap().tool_results();
    assert!(
        results[0].contains("no one is available to approve"),
        "{}",
        results[0]
    );
}

#[tokio::test]
async fn dont_ask_denies_and_bypass_runs_and_the_override_wins() {
    let h = Harness::new().await;
    h.server.push(bash_call("touch out/dont.txt"));
    h.server.push(Reply::text("ok"));
    h.server.push(bash_call("touch out/bypass.txt"));
    h.server.push(Reply::text("ok"));
    let approver = ScriptedApprover::answering(vec![ApprovalDecision::AllowOnce; 4]);
    let dont = agent(
        "name: test-agent\ndescription: d\npermissionMode: dontAsk",
        "p",
    );
    let ex = h.executor();
    let asking = child_ctx().with_approver(approver.clone());
    run(&ex, &dont, call("x"), asking).await.unwrap();
    assert!(!h.dir.path().join("out/dont.txt").exists());
    let results = h.server.last_request().unwrap().tool_results();
    assert!(results[0].contains("dontAsk"), "{}", results[0]);
    assert!(approver.summaries().is_empty(), "dontAsk never asks");
    // The type's override (--permission-mode) beats the agent's own mode.
    let ex = h.executor_with(
        PermissionRules::new(),
        Some(PermissionMode::BypassPermissions),
    );
    run(&ex, &dont, call("x"), child_ctx()).await.unwrap();
    assert!(h.dir.path().join("out/bypass.txt").exists());
}

#[tokio::test]
async fn an_allow_rule_allows_only_its_command_and_session_answers_are_remembered() {
    let h = Harness::new().await;
    let root = h.dir.path().to_path_buf();
    let rules = PermissionRules::new()
        .with_rule(RuleAction::Allow, "Bash(git status:*)", &root, "test")
        .unwrap()
        .with_rule(RuleAction::Deny, "Bash(rm:*)", &root, "test")
        .unwrap();
    let ex = h.executor_with(rules, None);
    let (recorder, session) =
        session_over([ApprovalDecision::AllowOnce, ApprovalDecision::AllowSession]);
    h.server.push(Reply::tool_calls(vec![
        ("Bash", json!({"command": "git status"})),
        (
            "Bash",
            json!({"command": "git status; touch out/sneaky.txt"}),
        ),
        ("Bash", json!({"command": "rm -f notes.txt"})),
    ]));
    h.server.push(bash_call("touch out/one.txt"));
    h.server.push(bash_call("touch out/two.txt"));
    h.server.push(Reply::text("ok"));
    run_child_in(&ex, "", "p", "x", child_ctx().with_approver(session)).await;
    let reqs = h.requests();
    let first = reqs[1].tool_results();
    assert!(
        !first[0].contains("approv"),
        "git status runs: {}",
        first[0]
    );
    assert!(first[2].contains("deny rule `Bash(rm:*)`"), "{}", first[2]);
    assert!(h.dir.path().join("notes.txt").exists(), "rm never ran");
    // Only the compound command (allowed once) and the first touch (allowed for the session)
    // were asked; the session answer for `touch` covered the second.
    assert_eq!(
        recorder.summaries(),
        [
            "Bash:git status; touch out/sneaky.txt",
            "Bash:touch out/one.txt"
        ]
    );
    assert!(
        h.dir.path().join("out/sneaky.txt").exists(),
        "allowed once by the session answer"
    );
    assert!(h.dir.path().join("out/one.txt").exists());
    assert!(
        h.dir.path().join("out/two.txt").exists(),
        "remembered for the session"
    );
}

fn write_with(file: &str, content: &str) -> Reply {
    Reply::tool_calls(vec![(
        "Write",
        json!({"file_path": file, "content": content}),
    )])
}

/// A change to a protected control file asks a person every time, in every mode, whatever
/// allow rule matches, and is never remembered; without a person it is denied.
#[tokio::test]
async fn protected_files_ask_a_person_every_time_in_every_mode() {
    let h = Harness::new().await;
    let root = h.dir.path().to_path_buf();
    let toml = root.join("subagents.toml");
    std::fs::write(&toml, "model = \"m\"\n").unwrap();
    let rules = PermissionRules::new()
        .with_rule(RuleAction::Allow, "Write", &root, "test")
        .unwrap();
    let ex = h.executor_with(rules, Some(PermissionMode::BypassPermissions));
    let (recorder, session) = session_over([
        ApprovalDecision::AllowSession,
        ApprovalDecision::deny("not this one."),
    ]);
    h.server
        .push(write_with("subagents.toml", "model = \"n\"\n"));
    h.server
        .push(write_with("subagents.toml", "[sandbox]\nenabled = false\n"));
    h.server.push(write_with("ordinary.txt", "free"));
    h.server.push(Reply::text("ok"));
    run_child_in(&ex, "", "p", "x", child_ctx().with_approver(session)).await;
    let asked = recorder.requests();
    assert_eq!(
        asked.len(),
        2,
        "asked for each write, the session answer not remembered"
    );
    assert!(
        asked
            .iter()
            .all(|r| r.person_only && r.session_rule.is_none())
    );
    assert!(asked[0].reason.contains("protected"), "{}", asked[0].reason);
    assert_eq!(
        std::fs::read_to_string(&toml).unwrap(),
        "model = \"n\"\n",
        "the first write was approved, the second not"
    );
    assert!(
        root.join("ordinary.txt").exists(),
        "bypassPermissions: no ask"
    );

    // Without an approver, and under dontAsk even with one: denied, naming the file.
    for (mode, approver) in [
        (PermissionMode::AcceptEdits, None),
        (
            PermissionMode::DontAsk,
            Some(ScriptedApprover::answering(vec![
                ApprovalDecision::AllowOnce,
            ])),
        ),
    ] {
        let ex = h.executor_with(PermissionRules::new(), Some(mode));
        h.server
            .push(write_with(".claude/settings.json", "{\"hooks\":{}}"));
        h.server.push(Reply::text("ok"));
        let mut ctx = child_ctx();
        if let Some(a) = &approver {
            ctx = ctx.with_approver(a.clone());
        }
        run_child_in(&ex, "", "p", "x", ctx).await;
        let results = h.server.last_request().unwrap().tool_results();
        assert!(
            results[0].contains("`.claude/settings.json`") && results[0].contains("denied"),
            "{mode}: {}",
            results[0]
        );
        assert!(!root.join(".claude/settings.json").exists(), "{mode}");
        if let Some(a) = approver {
            assert!(a.requests().is_empty(), "dontAsk asks no one");
        }
    }
}

#[tokio::test]
async fn task_is_offered_through_the_context_below_the_nesting_limit_only() {
    let h = Harness::new().await;
    for _ in 0..6 {
        h.server.push(Reply::text("ok"));
    }
    let lists = agent("name: test-agent\ndescription: d\ntools: Read, Task", "p");
    let omits = agent("name: test-agent\ndescription: d", "p");
    let leaf = agent("name: test-agent\ndescription: d\ntools: Read", "p");

    let ex = h.executor();
    // Depth 1 under the default limit 3: offered.
    run(&ex, &lists, call("x"), ctx_at(1, 3)).await.unwrap();
    // Depth 3 under limit 3: absent (and no warning-worthy error).
    run(&ex, &lists, call("x"), ctx_at(3, 3)).await.unwrap();
    // Max depth 1: a child is never offered Task.
    run(&ex, &lists, call("x"), ctx_at(1, 1)).await.unwrap();
    // Without a delegation handle in the context: nothing to offer.
    run(&ex, &lists, call("x"), TaskContext::new())
        .await
        .unwrap();
    // `tools` omitted inherits Task; a leaf whose `tools` omit Task is not offered it.
    run(&ex, &omits, call("x"), ctx_at(1, 3)).await.unwrap();
    run(&ex, &leaf, call("x"), ctx_at(1, 3)).await.unwrap();

    let reqs = h.requests();
    assert_eq!(reqs[0].tool_names(), ["Read", "Task"]);
    assert_eq!(reqs[1].tool_names(), ["Read"]);
    assert_eq!(reqs[2].tool_names(), ["Read"]);
    assert_eq!(reqs[3].tool_names(), ["Read"]);
    assert!(reqs[4].tool_names().contains(&"Task".to_string()));
    assert_eq!(reqs[5].tool_names(), ["Read"]);
}

#[tokio::test]
async fn builtin_explore_is_read_only() {
    let (h, ex) = Harness::scripted([Reply::text("found")]).await;
    let def: Arc<dyn SubagentDefinition> =
        Arc::new(subagent_claude::builtin_agent("Explore").unwrap());
    let out = run(&ex, &def, call("find main"), child_ctx())
        .await
        .unwrap();
    assert_eq!(out.text, "found");
    assert_eq!(
        h.server.last_request().unwrap().tool_names(),
        ["Glob", "Grep", "Read"]
    );
    let typed = def.downcast_ref::<ClaudeAgentDefinition>().unwrap();
    assert_eq!(typed.name, "Explore");
}

#[tokio::test]
async fn the_type_resolves_a_file_and_streams_through_its_executor() {
    let h = Harness::new().await;
    let file = h.dir.path().join("reviewer.md");
    std::fs::write(
        &file,
        "---\nname: reviewer\ndescription: Reviews\nmodel: sonnet\n---\nYou review.\n",
    )
    .unwrap();
    let ty = ClaudeSubagentType::builder()
        .models(h.registry())
        .workspace(h.dir.path())
        .stream(true)
        .build();
    assert_eq!(ty.kind(), "CLAUDE");
    let reference = subagent_claude::ClaudeSubagentReferences::file(&file);
    assert!(ty.resolver().can_resolve(&reference));
    let def = ty.resolver().resolve(&reference).await.unwrap();
    assert_eq!(def.name(), "reviewer");
    h.server.push(Reply::text("looks good"));
    let out = ty
        .executor()
        .execute(
            TaskCall::new("reviewer", "review", "review it"),
            def,
            child_ctx(),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "looks good");
    assert_eq!(out.status, TaskStatus::Completed);
    let req = h.server.last_request().unwrap();
    assert!(req.is_stream());
    assert_eq!(req.model(), Some("model-b"));
}

/// An agent whose own `Stop` hook writes a marker outside the workspace (in `outside`) and one
/// in the workspace's `out/`.
fn agent_with_writing_hook(outside: &Path) -> Arc<dyn SubagentDefinition> {
    agent(
        &format!(
            "name: test-agent\ndescription: d\nhooks:\n  Stop:\n    - hooks:\n        - type: command\n          command: \"echo x > '{}/marker'; echo y > out/inside\"",
            outside.display()
        ),
        "p",
    )
}

#[tokio::test]
async fn frontmatter_hooks_run_confined_like_bash() {
    if !landlock::confines("frontmatter_hooks_run_confined_like_bash") {
        return;
    }
    let h = Harness::new().await;
    // Outside the workspace and outside the temp directory the sandbox grants.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let def = agent_with_writing_hook(outside.path());
    h.server.push(Reply::text("done"));
    run(&h.executor(), &def, call("x"), child_ctx())
        .await
        .unwrap();
    assert!(
        !outside.path().join("marker").exists(),
        "an agent file's hook wrote outside the workspace"
    );
    assert!(
        h.dir.path().join("out/inside").exists(),
        "the hook still writes in the workspace"
    );

    // With the sandbox off (`--no-sandbox`), hooks run unconfined, as before.
    let ex = ClaudeSubagentType::builder()
        .models(h.registry())
        .workspace(h.dir.path())
        .sandbox(subagent_tools::SandboxPolicy::unconfined())
        .build_with_executor()
        .1;
    h.server.push(Reply::text("done"));
    run(&ex, &def, call("x"), child_ctx()).await.unwrap();
    assert!(outside.path().join("marker").exists());
}
