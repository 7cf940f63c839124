//! Task → Claude executor → scripted model server over real HTTP: what a Markdown agent's
//! frontmatter does to the requests its model receives.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use subagent_claude::{ClaudeSubagentReferences, ClaudeSubagentType};
use subagent_providers::OpenAiModel;
use subagent_runtime::ModelRegistry;
use subagent_spi::{ChatModel, TaskContext, Tool};
use subagent_testkit::{Reply, ScriptedModelServer};
use task_tool::TaskTool;

struct Rig {
    _dir: tempfile::TempDir,
    work: std::path::PathBuf,
    server: ScriptedModelServer,
    task: TaskTool,
}

fn model(server: &ScriptedModelServer, name: &str) -> Arc<dyn ChatModel> {
    Arc::new(
        OpenAiModel::builder()
            .base_url(server.openai_base_url())
            .model(name)
            .max_retries(0)
            .build()
            .expect("model"),
    )
}

/// Writes the agents, builds the Claude kind on the scripted server and the Task tool over it.
async fn rig(agents: &[(&str, &str)], max_depth: u32) -> Rig {
    let dir = tempfile::tempdir().expect("tmp");
    let agents_dir = dir.path().join("agents");
    let skills_dir = dir.path().join("skills/house-style");
    let work = dir.path().join("work");
    for d in [&agents_dir, &skills_dir, &work] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(
        skills_dir.join("SKILL.md"),
        "---\nname: house-style\ndescription: How we write.\n---\nAlways answer in haiku.\n",
    )
    .expect("skill");
    for (file, text) in agents {
        std::fs::write(agents_dir.join(file), text).expect("agent file");
    }
    let server = ScriptedModelServer::start().await;
    let registry = ModelRegistry::new()
        .with_model("main", model(&server, "main-model"))
        .with_model("other", model(&server, "other-model"))
        .with_default("main");
    let (kind, executor) = ClaudeSubagentType::builder()
        .models(registry)
        .workspace(&work)
        .skill_dir(dir.path().join("skills"))
        .build_with_executor();
    let (refs, skipped) = ClaudeSubagentReferences::from_dir(&agents_dir)
        .await
        .expect("scan");
    assert!(skipped.is_empty(), "{skipped:?}");
    // Children get the Task tool through their context, when their depth allows it.
    let _ = executor;
    let task = TaskTool::builder()
        .subagent_type(kind)
        .subagent_references(refs)
        .max_depth(max_depth)
        .build()
        .await
        .expect("Task tool builds");
    Rig {
        _dir: dir,
        work,
        server,
        task,
    }
}

async fn call(rig: &Rig, input: Value) -> subagent_spi::ToolOutput {
    rig.task
        .call(input, &TaskContext::new().with_parent_model("other"))
        .await
        .expect("Task never fails as a tool")
}

/// Calls `agent` through the Task tool with `prompt` (description "d").
async fn ask(rig: &Rig, agent: &str, prompt: &str) -> subagent_spi::ToolOutput {
    call(
        rig,
        json!({"description": "d", "prompt": prompt, "subagent_type": agent}),
    )
    .await
}

const FILTERED: &str = "---\nname: filtered\ndescription: Has a filtered tool set.\ntools: Read, Grep, Write, Task\ndisallowedTools: Grep\n---\nYou are filtered.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_and_disallowed_tools_shape_the_request_and_children_never_get_task() {
    let rig = rig(&[("filtered.md", FILTERED)], 1).await;
    rig.server.push(Reply::text("ok"));
    let out = ask(&rig, "filtered", "p").await;
    assert!(!out.is_error, "{}", out.content);
    let reqs = rig.server.requests();
    assert_eq!(
        reqs[0].tool_names(),
        ["Read", "Write"],
        "Grep disallowed, Task withheld at depth 1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deeper_max_depth_lets_a_child_delegate() {
    let rig = rig(&[("filtered.md", FILTERED)], 2).await;
    rig.server.push(Reply::text("ok"));
    ask(&rig, "filtered", "p").await;
    assert_eq!(
        rig.server.requests()[0].tool_names(),
        [
            "Read",
            "SendMessage",
            "Task",
            "TaskOutput",
            "TaskStop",
            "Write"
        ],
        "a child that may delegate gets Task's companions, SendMessage among them"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_follows_call_then_frontmatter_then_inherit() {
    let rig = rig(
        &[
            (
                "pinned.md",
                "---\nname: pinned\ndescription: Pinned to main.\nmodel: main\n---\nPinned.\n",
            ),
            (
                "inheriting.md",
                "---\nname: inheriting\ndescription: Inherits.\nmodel: inherit\n---\nInherits.\n",
            ),
        ],
        1,
    )
    .await;
    for _ in 0..3 {
        rig.server.push(Reply::text("ok"));
    }
    ask(&rig, "pinned", "p").await;
    call(
        &rig,
        json!({"description": "d", "prompt": "p", "subagent_type": "pinned", "model": "other"}),
    )
    .await;
    ask(&rig, "inheriting", "p").await;
    let models: Vec<String> = rig
        .server
        .requests()
        .iter()
        .map(|r| r.model().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models, ["main-model", "other-model", "other-model"]);
    let unknown = call(
        &rig,
        json!({"description": "d", "prompt": "p", "subagent_type": "pinned", "model": "gpt-nine"}),
    )
    .await;
    assert!(unknown.is_error);
    assert!(
        unknown.content.contains("gpt-nine") && unknown.content.contains("main"),
        "{}",
        unknown.content
    );
}

const POET: &str = "---\nname: poet\ndescription: Writes.\nskills: house-style\n---\nYou write.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_preloaded_into_the_system_prompt() {
    let rig = rig(&[("poet.md", POET)], 1).await;
    rig.server.push(Reply::text("five seven five"));
    ask(&rig, "poet", "p").await;
    let system = rig.server.requests()[0].messages()[0].to_string();
    assert!(system.contains("You write."), "{system}");
    assert!(system.contains("Always answer in haiku."), "{system}");
}

const LOOPER: &str =
    "---\nname: looper\ndescription: Loops.\ntools: Read\nmaxTurns: 1\n---\nLoop.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_turns_stops_the_run_through_task() {
    let rig = rig(&[("looper.md", LOOPER)], 1).await;
    rig.server.push(Reply::tool_calls(vec![(
        "Read",
        json!({"file_path": "nothing.txt"}),
    )]));
    let out = ask(&rig, "looper", "p").await;
    assert!(
        out.content.contains("status: limit_reached"),
        "{}",
        out.content
    );
    assert!(out.content.contains("max_turns=1"), "{}", out.content);
    assert_eq!(rig.server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_refuses_write_with_a_readable_tool_error() {
    let rig = rig(
        &[("planner.md", "---\nname: planner\ndescription: Plans.\ntools: Read, Write\npermissionMode: plan\n---\nPlan.\n")],
        1,
    )
    .await;
    rig.server.push(Reply::tool_calls(vec![(
        "Write",
        json!({"file_path": "plan.txt", "content": "step 1"}),
    )]));
    rig.server
        .push(Reply::text("I could not write, here is the plan instead"));
    let out = ask(&rig, "planner", "p").await;
    assert!(
        out.content.starts_with("I could not write"),
        "{}",
        out.content
    );
    assert!(
        !Path::new(&rig.work.join("plan.txt")).exists(),
        "nothing was written"
    );
    let second = &rig.server.requests()[1];
    let tool_msg = second
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the refusal went back to the model")
        .to_string();
    assert!(
        tool_msg.to_lowercase().contains("plan"),
        "the error names the mode: {tool_msg}"
    );
}

const CHAT: &str = "---\nname: chat\ndescription: Chats.\n---\nChat.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_through_task_sends_the_earlier_transcript() {
    let rig = rig(&[("chat.md", CHAT)], 1).await;
    rig.server.push(Reply::text("first answer"));
    rig.server.push(Reply::text("second answer"));
    let first = ask(&rig, "chat", "first question").await;
    let session = first
        .content
        .split("session: ")
        .nth(1)
        .and_then(|s| s.split([' ', ']']).next())
        .expect("a session id in the footer")
        .to_string();
    let second = call(&rig, json!({"description": "d", "prompt": "follow-up", "subagent_type": "chat", "resume": session})).await;
    assert!(
        second.content.starts_with("second answer"),
        "{}",
        second.content
    );
    let msgs = rig.server.requests()[1].body["messages"].to_string();
    for part in ["first question", "first answer", "follow-up"] {
        assert!(
            msgs.contains(part),
            "resumed request carries `{part}`: {msgs}"
        );
    }
}
