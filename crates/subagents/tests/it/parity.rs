//! Claude Code agent-file parity through the facade, over real HTTP with the scripted model
//! server: hook semantics the command-line tests do not reach (SubagentStop sending an agent
//! back to work, SubagentStart context, PostToolUse feedback, a parent's subagent hooks,
//! `disableAllHooks`), a worktree that changed nothing, and `MainAgent::agent`.

use std::path::PathBuf;

use crate::common;
use crate::common::Built as _;
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer, git, git_repo_with};
use subagents::{Subagents, TaskStatus};

/// A project: its agents in `DIR/agents`, its workspace `DIR/work` (as
/// [`common::write_agent`] lays them out).
struct Project(tempfile::TempDir);

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("project");
        for sub in ["agents", "work"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("project dirs");
        }
        Self(dir)
    }

    fn agent(&self, name: &str, text: &str) {
        common::write_agent(self.0.path(), name, text);
    }

    /// The canonical workspace root.
    fn ws(&self) -> PathBuf {
        self.0
            .path()
            .join("work")
            .canonicalize()
            .expect("workspace")
    }

    fn settings(&self, settings: Value) -> PathBuf {
        let path = self.ws().join("settings.json");
        std::fs::write(&path, settings.to_string()).expect("settings");
        path
    }

    async fn build(&self, server: &ScriptedModelServer, settings: Option<PathBuf>) -> Subagents {
        let b = Subagents::builder()
            .model(server.openai_model("team"))
            .agents_dir(self.0.path().join("agents"))
            .workspace(self.ws())
            // These tests are about hooks, memory and isolation, not approvals: approve all.
            .approver(std::sync::Arc::new(
                subagents::policy::FixedApprover::allow_all(),
            ));
        settings
            .into_iter()
            .fold(b, |b, s| b.settings_file(s))
            .built()
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_stop_hook_exiting_2_sends_the_agent_back_to_work_once() {
    let server = ScriptedModelServer::start().await;
    let p = Project::new();
    p.agent(
        "worker",
        "---\nname: worker\ndescription: Works.\ntools: Read\n---\nYou work.\n",
    );
    // Blocks the first stop (and records it), lets the second one through. Workspace hooks run
    // confined like `Bash`, which creates no file directly in the workspace root: `out/`.
    std::fs::create_dir(p.ws().join("out")).expect("out");
    let settings = p.settings(json!({"hooks": {"SubagentStop": [{"hooks": [{"type": "command",
        "command": "cat >> out/stops.jsonl; echo >> out/stops.jsonl; if [ ! -e out/seen ]; then touch out/seen; echo 'ADD-TESTS-FIRST' >&2; exit 2; fi"}]}]}}));
    server.push(Reply::task_call("worker", "do it"));
    server.push(Reply::text("draft"));
    server.push(Reply::text("final, with tests"));
    server.push(Reply::text("done"));
    let agents = p.build(&server, Some(settings)).await;
    let outcome = agents.main_agent().run("go").await.expect("runs");
    assert_eq!(outcome.status, TaskStatus::Completed);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        reqs[2].last_user_text(),
        "ADD-TESTS-FIRST",
        "the hook's stderr is the next message"
    );
    assert!(
        reqs[2].body.to_string().contains("draft"),
        "the agent continues its own conversation"
    );
    assert!(reqs[3].tool_results()[0].contains("final, with tests"));
    let stops = std::fs::read_to_string(p.ws().join("out/stops.jsonl")).expect("ran");
    let events: Vec<Value> = stops
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["stop_hook_active"], false);
    assert_eq!(events[1]["stop_hook_active"], true);
    assert_eq!(events[1]["last_assistant_message"], "final, with tests");
    assert_eq!(outcome.children[0].usage.turns, 2, "both segments count");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subagent_start_context_post_tool_use_feedback_and_a_parents_subagent_hooks() {
    let server = ScriptedModelServer::start().await;
    let p = Project::new();
    std::fs::write(p.ws().join("notes.txt"), "N").expect("file");
    // The coordinator's own SubagentStart hook applies to the agents it starts.
    p.agent(
        "coordinator",
        "---\nname: coordinator\ndescription: Coordinates.\ntools: Task\nhooks:\n  SubagentStart:\n    - matcher: leaf\n      hooks:\n        - type: command\n          command: echo '{\"hookSpecificOutput\":{\"hookEventName\":\"SubagentStart\",\"additionalContext\":\"FROM-THE-PARENT\"}}'\n---\nYou coordinate.\n",
    );
    p.agent(
        "leaf",
        "---\nname: leaf\ndescription: Reads.\ntools: Read\n---\nYou read.\n",
    );
    let settings = p.settings(json!({"hooks": {
        "SubagentStart": [{"matcher": "coordinator|leaf", "hooks": [{"type": "command",
            "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"SubagentStart\",\"additionalContext\":\"FROM-SETTINGS\"}}'"}]}],
        "PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command",
            "command": "echo '{\"decision\":\"block\",\"reason\":\"READ-FEEDBACK\"}'"}]}]
    }}));
    server.push(Reply::task_call("coordinator", "do it"));
    server.push(Reply::task_call("leaf", "do it"));
    server.push(Reply::tool_calls(vec![(
        "Read",
        json!({"file_path": "notes.txt"}),
    )]));
    server.push(Reply::text("leaf done"));
    server.push(Reply::text("coordinator done"));
    server.push(Reply::text("done"));
    let agents = p.build(&server, Some(settings)).await;
    agents.main_agent().run("go").await.expect("runs");
    let reqs = server.requests();
    let coordinator = reqs[1].system_prompt();
    assert!(coordinator.contains("FROM-SETTINGS"), "{coordinator}");
    assert!(!coordinator.contains("FROM-THE-PARENT"));
    let leaf = reqs[2].system_prompt();
    assert!(
        leaf.contains("FROM-SETTINGS") && leaf.contains("FROM-THE-PARENT"),
        "{leaf}"
    );
    let read = reqs[3].tool_results();
    assert!(
        read[0].contains("READ-FEEDBACK") && read[0].contains('N'),
        "the tool result keeps its output and gets the hook's reason: {read:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_all_hooks_turns_off_agents_own_hooks_too() {
    let server = ScriptedModelServer::start().await;
    let p = Project::new();
    p.agent(
        "worker",
        "---\nname: worker\ndescription: Works.\ntools: Bash\nhooks:\n  PreToolUse:\n    - hooks:\n        - type: command\n          command: exit 2\n---\nYou work.\n",
    );
    let settings = p.settings(json!({"disableAllHooks": true}));
    // Confined Bash cannot create files directly in the workspace root.
    std::fs::create_dir_all(p.ws().join("out")).unwrap();
    server.push(Reply::task_call("worker", "do it"));
    server.push(Reply::tool_calls(vec![(
        "Bash",
        json!({"command": "touch out/RAN"}),
    )]));
    server.push(Reply::text("ok"));
    server.push(Reply::text("done"));
    let agents = p.build(&server, Some(settings)).await;
    assert!(agents.settings_hooks().expect("local").is_disabled());
    agents.main_agent().run("go").await.expect("runs");
    assert!(p.ws().join("out/RAN").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_that_changed_nothing_is_removed_with_its_branch() {
    let server = ScriptedModelServer::start().await;
    let p = Project::new();
    let ws = p.ws();
    git_repo_with(&ws, &[("a.txt", "a")]);
    p.agent(
        "reader",
        "---\nname: reader\ndescription: Reads.\ntools: Read, Bash\nisolation: worktree\n---\nYou read.\n",
    );
    server.push(Reply::task_call("reader", "do it"));
    server.push(Reply::tool_calls(vec![("Bash", json!({"command": "pwd"}))]));
    server.push(Reply::text("looked"));
    server.push(Reply::text("done"));
    let agents = p.build(&server, None).await;
    agents.main_agent().run("go").await.expect("runs");
    let reqs = server.requests();
    let pwd = reqs[2].tool_results().remove(0);
    assert!(
        pwd.contains("subagents-worktrees"),
        "Bash runs in the worktree: {pwd}"
    );
    assert!(!reqs[3].tool_results()[0].contains("[worktree]"));
    assert_eq!(git(&ws, &["worktree", "list"]).lines().count(), 1);
    assert!(!git(&ws, &["branch", "--list"]).contains("subagents/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_markdown_agent_as_the_main_agent_may_delegate_and_prepends_its_initial_prompt() {
    let server = ScriptedModelServer::start().await;
    let p = Project::new();
    p.agent(
        "lead",
        "---\nname: lead\ndescription: Leads.\ntools: Read, Task\ninitialPrompt: Start with a plan.\n---\nLEAD-PROMPT\n",
    );
    p.agent(
        "helper",
        "---\nname: helper\ndescription: Helps.\ntools: Read\n---\nYou help.\n",
    );
    server.push(Reply::task_call("helper", "do it"));
    server.push(Reply::text("helped"));
    server.push(Reply::text("led"));
    let agents = p.build(&server, None).await;
    let outcome = agents
        .main_agent()
        .agent("lead")
        .run("and then the rest")
        .await
        .expect("runs");
    assert_eq!(outcome.text, "led");
    let reqs = server.requests();
    assert!(reqs[0].system_prompt().starts_with("LEAD-PROMPT"));
    assert_eq!(
        reqs[0].last_user_text(),
        "Start with a plan.\n\nand then the rest"
    );
    assert_eq!(reqs[1].system_prompt(), "You help.");
    assert_eq!(outcome.children[0].agent, "helper");
}
