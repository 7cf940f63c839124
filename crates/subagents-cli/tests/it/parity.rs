//! Claude Code agent-file parity through the `subagents` binary, over real HTTP with the
//! scripted model server: hooks (settings and frontmatter), memory, `background`, worktree
//! isolation, `effort`, `run --agent` with `initialPrompt`, and `agents validate` warnings.

use crate::common;

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::{Value, json};
use subagent_testkit::{Reply, ScriptedModelServer, git, git_repo_with};

/// A project: an agents directory and a workspace, plus a temporary home.
struct Project {
    agents: tempfile::TempDir,
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        Self {
            agents: tempfile::tempdir().expect("agents dir"),
            ws: tempfile::tempdir().expect("workspace"),
            home: tempfile::tempdir().expect("home"),
        }
    }

    fn agent(&self, name: &str, text: &str) -> &Self {
        std::fs::write(self.agents.path().join(format!("{name}.md")), text).expect("agent file");
        self
    }

    /// The canonical workspace root.
    fn ws(&self) -> PathBuf {
        self.ws.path().canonicalize().expect("workspace path")
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.ws.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
        std::fs::write(p, text).expect("write");
    }

    /// Writes the workspace's `.claude/settings.json` with `hooks`, and approves it as its
    /// user would (`subagents trust`): a workspace file's hooks run only once approved.
    fn settings(&self, hooks: Value) {
        self.write(
            ".claude/settings.json",
            &serde_json::to_string_pretty(&json!({ "hooks": hooks })).expect("json"),
        );
        self.cmd()
            .args(["trust", "--workspace"])
            .arg(self.ws.path())
            .assert()
            .success();
    }

    /// `subagents` with a clean environment, this project's home, workspace and agents.
    fn cmd(&self) -> Command {
        let mut cmd = common::subagents_in(self.home.path());
        cmd.env_remove("NO_COLOR");
        cmd
    }

    /// `subagents run PROMPT --model ... --agents ... --workspace ...`.
    fn run(&self, server: &ScriptedModelServer, prompt: &str) -> Command {
        let mut cmd = self.cmd();
        // These tests are about hooks, memory and isolation, not approvals: `--yes`.
        cmd.args([
            "run",
            prompt,
            "--yes",
            "--model",
            &model(server),
            "--agents",
        ])
        .arg(self.agents.path())
        .arg("--workspace")
        .arg(self.ws.path());
        cmd
    }

    /// Scripts the main agent's delegation to `agent` ("please do it"), then `turns` (the
    /// child's, and any further ones), then the main agent's "done"; `run PROMPT` succeeded.
    fn delegate(&self, server: &ScriptedModelServer, agent: &str, turns: Vec<Reply>, prompt: &str) {
        server.push(Reply::task_call(agent, "please do it"));
        for reply in turns {
            server.push(reply);
        }
        server.push(Reply::text("done"));
        self.run(server, prompt).assert().success();
    }
}

fn model(server: &ScriptedModelServer) -> String {
    server.openai_model("team")
}

#[test]
fn a_pre_tool_use_hook_exiting_2_blocks_bash_and_the_model_reads_its_stderr() {
    let (_rt, server) = common::scripted();
    let p = Project::new();
    p.agent(
        "worker",
        "---\nname: worker\ndescription: Runs commands.\ntools: Bash\n---\nYou run commands.\n",
    );
    // Workspace hooks run confined like `Bash`, which creates no file directly in the
    // workspace root: they write under `out/`.
    p.write("out/.keep", "");
    p.settings(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
        "command": "cat > \"$CLAUDE_PROJECT_DIR/out/pre-event.json\"; echo 'HOOK-SAYS-NO: no touching here' >&2; exit 2"}]}]}));
    p.delegate(
        &server,
        "worker",
        vec![
            Reply::tool_calls(vec![("Bash", json!({"command": "touch TOUCHED"}))]),
            Reply::text("the hook refused"),
        ],
        "touch a file",
    );

    assert!(
        !p.ws.path().join("TOUCHED").exists(),
        "the blocked command did not run"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let results = reqs[2].tool_results();
    assert_eq!(results.len(), 1);
    assert!(
        results[0].contains("HOOK-SAYS-NO: no touching here"),
        "the hook's stderr is the tool error the model reads: {results:?}"
    );
    let event: Value = serde_json::from_str(
        &std::fs::read_to_string(p.ws.path().join("out/pre-event.json")).expect("the hook ran"),
    )
    .expect("the event is JSON");
    assert_eq!(event["hook_event_name"], "PreToolUse");
    assert_eq!(event["tool_name"], "Bash");
    assert_eq!(event["tool_input"]["command"], "touch TOUCHED");
    assert_eq!(event["agent_type"], "worker");
    assert!(event["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(event["cwd"], p.ws().display().to_string());
}

#[test]
fn a_frontmatter_hook_denies_with_json_and_no_hooks_turns_hooks_off() {
    let p = Project::new();
    p.write("out/.keep", "");
    p.write(
        "deny.sh",
        "cat > /dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \
         \"permissionDecision\": \"deny\", \"permissionDecisionReason\": \"FRONTMATTER-DENY\"}}'\n",
    );
    p.agent(
        "guarded",
        "---\nname: guarded\ndescription: Guarded.\ntools: Bash\nhooks:\n  PreToolUse:\n    - matcher: \"Bash|Write\"\n      hooks:\n        - type: command\n          command: sh \"$CLAUDE_PROJECT_DIR/deny.sh\"\n---\nYou run commands.\n",
    );
    let script = |server: &ScriptedModelServer| {
        server.push(Reply::task_call("guarded", "please do it"));
        server.push(Reply::tool_calls(vec![(
            "Bash",
            // Confined Bash cannot create files directly in the workspace root.
            json!({"command": "touch out/MADE"}),
        )]));
        server.push(Reply::text("ok"));
        server.push(Reply::text("done"));
    };
    let (rt, server) = common::scripted();
    script(&server);
    p.run(&server, "go").assert().success();
    assert!(!p.ws.path().join("out/MADE").exists());
    let results = server.requests()[2].tool_results();
    assert!(results[0].contains("FRONTMATTER-DENY"), "{results:?}");

    let server = rt.block_on(ScriptedModelServer::start());
    script(&server);
    p.run(&server, "go").arg("--no-hooks").assert().success();
    assert!(
        p.ws.path().join("out/MADE").exists(),
        "with --no-hooks the command runs"
    );
}

#[test]
fn a_subagent_stop_hook_runs_once_per_child_and_the_agents_own_stop_hook_too() {
    let (_rt, server) = common::scripted();
    let p = Project::new();
    // Hooks from agent files and the workspace run confined like `Bash`: they write in `out/`.
    p.write("out/.keep", "");
    p.agent(
        "worker",
        "---\nname: worker\ndescription: Works.\ntools: Read\nhooks:\n  Stop:\n    - hooks:\n        - type: command\n          command: echo own-stop >> \"$CLAUDE_PROJECT_DIR/out/own-stops.txt\"\n---\nYou work.\n",
    );
    p.settings(json!({"SubagentStop": [{"matcher": "worker", "hooks": [{"type": "command",
        "command": "cat >> \"$CLAUDE_PROJECT_DIR/out/stops.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/out/stops.jsonl\""}]}]}));
    p.delegate(
        &server,
        "worker",
        vec![
            Reply::text("first answer"),
            Reply::task_call("worker", "please do it"),
            Reply::text("second answer"),
        ],
        "twice",
    );

    let stops = std::fs::read_to_string(p.ws.path().join("out/stops.jsonl")).expect("hook ran");
    let events: Vec<Value> = stops
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(events.len(), 2, "once per child: {stops}");
    for (event, answer) in events.iter().zip(["first answer", "second answer"]) {
        assert_eq!(event["hook_event_name"], "SubagentStop");
        assert_eq!(event["agent_type"], "worker");
        assert_eq!(event["last_assistant_message"], answer);
        assert_eq!(event["stop_hook_active"], false);
        assert!(
            event["agent_id"]
                .as_str()
                .is_some_and(|s| s.starts_with("task_"))
        );
    }
    let own = std::fs::read_to_string(p.ws.path().join("out/own-stops.txt")).expect("own hook ran");
    assert_eq!(own.lines().count(), 2, "{own}");
}

#[test]
fn project_memory_is_in_the_system_prompt_and_writes_reach_only_the_memory_directory() {
    let (_rt, server) = common::scripted();
    let p = Project::new();
    p.agent(
        "keeper",
        "---\nname: keeper\ndescription: Remembers.\ntools: Read\nmemory: project\n---\nYou keep notes.\n",
    );
    p.write(
        ".claude/agent-memory/keeper/MEMORY.md",
        "REMEMBER-42: the answer is forty-two\n",
    );
    let dir = p.ws().join(".claude/agent-memory/keeper");
    p.delegate(&server, "keeper", vec![Reply::tool_calls(vec![
        (
            "Write",
            json!({"file_path": dir.join("notes.md").display().to_string(), "content": "learned today"}),
        ),
        (
            "Write",
            json!({"file_path": p.ws().join("outside.txt").display().to_string(), "content": "x"}),
        ),
    ]), Reply::text("saved")], "remember");

    let reqs = server.requests();
    let sys = reqs[1].system_prompt();
    assert!(
        sys.contains("REMEMBER-42"),
        "MEMORY.md is in the prompt:\n{sys}"
    );
    assert!(sys.contains(&dir.display().to_string()), "{sys}");
    assert_eq!(reqs[1].tool_names(), ["Edit", "Read", "Write"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.md")).expect("written"),
        "learned today"
    );
    assert!(
        !p.ws.path().join("outside.txt").exists(),
        "memory tools stay in the memory directory"
    );
    let results = reqs[2].tool_results();
    assert!(results[1].contains("not allowed"), "{results:?}");
}

#[test]
fn user_memory_lives_under_home_and_the_agents_write_tool_reaches_it() {
    let (_rt, server) = common::scripted();
    let p = Project::new();
    p.agent(
        "diarist",
        "---\nname: diarist\ndescription: Keeps a diary.\ntools: Read, Write\nmemory: user\n---\nYou keep a diary.\n",
    );
    let dir = p.home.path().join(".claude/agent-memory/diarist");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("MEMORY.md"), "USER-MEMORY-7\n").expect("memory");
    let dir = dir.canonicalize().expect("canonical");
    p.delegate(&server, "diarist", vec![Reply::tool_calls(vec![
        (
            "Write",
            json!({"file_path": dir.join("MEMORY.md").display().to_string(), "content": "USER-MEMORY-8\n"}),
        ),
        ("Write", json!({"file_path": "in-workspace.txt", "content": "y"})),
    ]), Reply::text("noted")], "note it");
    assert!(
        server.requests()[1]
            .system_prompt()
            .contains("USER-MEMORY-7")
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("MEMORY.md")).expect("memory"),
        "USER-MEMORY-8\n"
    );
    assert!(
        p.ws.path().join("in-workspace.txt").exists(),
        "the workspace is still reachable"
    );
}

#[test]
fn a_background_agent_returns_a_task_id_at_once() {
    let (_rt, server) = common::scripted();
    let p = Project::new();
    p.agent(
        "watcher",
        "---\nname: watcher\ndescription: Watches.\ntools: Read\nbackground: true\nmodel: slow\n---\nYou watch.\n",
    );
    let config = p.ws.path().join("subagents.toml");
    std::fs::write(
        &config,
        format!(
            "[models]\nslow = \"openai-compatible:slow@{}\"\n",
            server.openai_base_url()
        ),
    )
    .expect("config");
    server.push(Reply::task_call("watcher", "please do it"));
    server.push(Reply::text("started it"));
    server.push_for_model(
        "slow",
        Reply::text("WATCHER-ANSWER").with_delay(std::time::Duration::from_millis(200)),
    );
    p.run(&server, "watch")
        .arg("--config")
        .arg(&config)
        .assert()
        .success();
    let main = server.requests_for("team");
    assert_eq!(main.len(), 2);
    let results = main[1].tool_results();
    assert!(
        results[0].contains("in the background with task id task_"),
        "{results:?}"
    );
    assert!(
        !results[0].contains("WATCHER-ANSWER"),
        "the call did not wait for the agent"
    );
}

#[test]
fn worktree_isolation_leaves_the_main_tree_unchanged_and_reports_the_branch() {
    let (_rt, server) = common::scripted();
    let p = Project::new();
    let ws = p.ws();
    git_repo_with(&ws, &[("README.md", "hello\n")]);
    p.agent(
        "isolated",
        "---\nname: isolated\ndescription: Edits in isolation.\ntools: Write, Read\nisolation: worktree\n---\nYou edit.\n",
    );
    p.delegate(
        &server,
        "isolated",
        vec![
            Reply::tool_calls(vec![(
                "Write",
                json!({"file_path": "new.txt", "content": "from the worktree"}),
            )]),
            Reply::text("wrote it"),
        ],
        "edit",
    );

    assert!(!ws.join("new.txt").exists(), "the main tree is unchanged");
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    let results = server.requests()[3].tool_results();
    let text = &results[0];
    assert!(text.contains("[worktree]"), "{text}");
    assert!(text.contains("branch `subagents/isolated-"), "{text}");
    let path = text
        .split("path `")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .expect("the path is reported");
    let path = PathBuf::from(path);
    assert_eq!(
        std::fs::read_to_string(path.join("new.txt")).expect("kept"),
        "from the worktree"
    );
    let branch = text
        .split("branch `")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .expect("branch")
        .to_string();
    assert!(git(&ws, &["branch", "--list", &branch]).contains(&branch));
    git(
        &ws,
        &["worktree", "remove", "--force", &path.display().to_string()],
    );
    git(&ws, &["branch", "-D", &branch]);
}

#[test]
fn effort_high_is_sent_as_reasoning_effort() {
    let (_rt, server) = common::scripted();
    let p = Project::new();
    p.agent(
        "thinker",
        "---\nname: thinker\ndescription: Thinks hard.\ntools: Read\neffort: high\n---\nYou think.\n",
    );
    p.delegate(&server, "thinker", vec![Reply::text("thought")], "think");
    let reqs = server.requests();
    assert!(
        reqs[0].body.get("reasoning_effort").is_none(),
        "the main agent has no effort"
    );
    assert_eq!(reqs[1].body["reasoning_effort"], "high");
}

#[test]
fn run_agent_uses_the_agents_prompt_tools_and_initial_prompt() {
    let (_rt, server) = common::scripted();
    let p = Project::new();
    p.agent(
        "starter",
        "---\nname: starter\ndescription: Starts things.\ntools: Read\ninitialPrompt: INITIAL-PROMPT-TEXT\ncolor: green\n---\nSTARTER-SYSTEM-PROMPT\n",
    );
    p.agent(
        "plain",
        "---\nname: plain\ndescription: Plain.\n---\nPlain.\n",
    );
    server.push(Reply::text("STARTED"));
    let out = p
        .cmd()
        .args([
            "run",
            "--agent",
            "starter",
            "--json",
            "--model",
            &model(&server),
        ])
        .arg("--agents")
        .arg(p.agents.path())
        .arg("--workspace")
        .arg(p.ws.path())
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let json: Value = serde_json::from_str(&stdout).expect("JSON outcome");
    assert_eq!(json["text"], "STARTED", "{json}");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        !stderr.contains('\u{1b}'),
        "no colour off a terminal: {stderr}"
    );
    let reqs = server.requests();
    assert!(reqs[0].system_prompt().starts_with("STARTER-SYSTEM-PROMPT"));
    let user: Vec<&Value> = reqs[0]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(user[0]["content"], "INITIAL-PROMPT-TEXT");
    assert_eq!(reqs[0].tool_names(), ["Read"]);

    let out = p
        .cmd()
        .args(["run", "--agent", "plain", "--model", &model(&server)])
        .arg("--agents")
        .arg(p.agents.path())
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("initialPrompt"), "{stderr}");
    p.cmd()
        .args(["run", "--model", &model(&server)])
        .assert()
        .code(2);
}

#[test]
fn validate_names_every_field_value_that_is_not_acted_on() {
    let p = Project::new();
    p.agent(
        "odd",
        "---\nname: odd\ndescription: Odd.\nversion: 3\nisolation: remote\neffort: enormous\ncolor: teal\nmemory: team\nhooks:\n  Notification:\n    - hooks: [{type: command, command: x}]\n  PreToolUse:\n    - hooks: [{type: prompt, prompt: p}]\n---\nBody.\n",
    );
    let out = p
        .cmd()
        .args(["agents", "validate"])
        .arg(p.agents.path().join("odd.md"))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    // Claude Code ignores unknown keys and colours quietly; so does validate.
    assert!(
        !stdout.contains("version") && !stdout.contains("teal"),
        "{stdout}"
    );
    for needle in [
        "isolation: remote",
        "effort: enormous",
        "`memory`",
        "`Notification`",
        "type `prompt`",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains("warning:") && l.contains(needle)),
            "no warning names {needle}:\n{stdout}"
        );
    }
}

#[test]
fn an_agent_files_hooks_run_confined_and_the_users_own_settings_hooks_do_not() {
    let support = subagents::tools::landlock_support();
    if !support.confines() {
        eprintln!(
            "SKIPPED an_agent_files_hooks_run_confined_and_the_users_own_settings_hooks_do_not: \
             Landlock does not confine here ({support:?})"
        );
        return;
    }
    let (_rt, server) = common::scripted();
    let p = Project::new();
    p.write("out/.keep", "");
    // Outside the workspace and outside the temp directory the sandbox grants.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("outside");
    let o = outside.path().display();
    p.agent(
        "worker",
        &format!(
            "---\nname: worker\ndescription: Works.\ntools: Read\nhooks:\n  Stop:\n    - hooks:\n        - type: command\n          command: \"echo x > '{o}/agent-marker'; echo x > \\\"$CLAUDE_PROJECT_DIR/out/agent-inside\\\"\"\n---\nYou work.\n"
        ),
    );
    // The user's own ~/.claude/settings.json: written by the user, not confined.
    let user = p.home.path().join(".claude");
    std::fs::create_dir_all(&user).expect("home .claude");
    std::fs::write(
        user.join("settings.json"),
        json!({"hooks": {"SubagentStop": [{"matcher": "worker", "hooks": [{"type": "command",
            "command": format!("echo x > '{o}/user-marker'")}]}]}})
        .to_string(),
    )
    .expect("user settings");
    p.delegate(&server, "worker", vec![Reply::text("answer")], "go");

    assert!(
        p.ws.path().join("out/agent-inside").exists(),
        "the agent's hook ran and wrote in the workspace"
    );
    assert!(
        !outside.path().join("agent-marker").exists(),
        "an agent file's hook wrote outside the workspace"
    );
    assert!(
        outside.path().join("user-marker").exists(),
        "the user's own settings hook runs unconfined"
    );
}
