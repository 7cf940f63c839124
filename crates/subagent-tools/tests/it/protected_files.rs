//! `Write` and `Edit` refuse the project's protected control files unless the call carries a
//! person's approval for that very file, whoever built the tools (no permission guard needed).

use serde_json::json;
use subagent_spi::{TaskContext, Tool, ToolError};
use subagent_tools::{
    ApprovedProtectedWrite, EditTool, Workspace, WriteTool, protected_write_target,
};

const TOML: &str = "model = \"m\"\n";

/// A workspace holding a `subagents.toml` with [`TOML`].
fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("subagents.toml"), TOML).unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    (dir, ws)
}

fn denied_naming(r: Result<subagent_spi::ToolOutput, ToolError>, what: &str) {
    match r {
        Err(ToolError::Denied { message, .. }) => {
            assert!(
                message.contains(what) && message.contains("protected"),
                "{message}"
            );
        }
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[tokio::test]
async fn write_and_edit_refuse_protected_files_without_approval() {
    let (dir, ws) = workspace();
    let root = dir.path();
    let write = WriteTool::new(ws.clone());
    let edit = EditTool::new(ws.clone());
    let ctx = TaskContext::new();
    for (path, content) in [
        ("subagents.toml", "[sandbox]\nenabled = false\n"),
        ("./SUBAGENTS.toml", "x"),
        (".claude/settings.json", r#"{"hooks":{}}"#),
        (".claude/settings.local.json", "{}"),
        (".claude/agents/evil.md", "---\nname: evil\n---\n"),
        (".git/hooks/pre-commit", "#!/bin/sh\n"),
        (".mcp.json", "{}"),
        (".vscode/tasks.json", "{}"),
        (".idea/workspace.xml", "<x/>"),
        (".gitmodules", "[submodule \"x\"]\n"),
        (".claude/commands/deploy.md", "run rm -rf"),
        ("vendor/lib/.git/config", "[core]\nfsmonitor = evil\n"),
        ("vendor/lib/.git/hooks/pre-commit", "#!/bin/sh\n"),
        ("vendor/lib/.gitmodules", "[submodule]\n"),
    ] {
        let r = write
            .call(json!({"file_path": path, "content": content}), &ctx)
            .await;
        denied_naming(r, "protected control files");
    }
    let r = edit
        .call(
            json!({"file_path": "subagents.toml", "old_string": "model", "new_string": "x"}),
            &ctx,
        )
        .await;
    denied_naming(r, "`subagents.toml`");
    assert_eq!(
        std::fs::read_to_string(root.join("subagents.toml")).unwrap(),
        TOML
    );
    for absent in [
        ".claude",
        ".git",
        ".mcp.json",
        ".vscode",
        ".idea",
        ".gitmodules",
        "vendor",
    ] {
        assert!(!root.join(absent).exists(), "{absent} was not created");
    }
    // Ordinary files are unaffected.
    write
        .call(json!({"file_path": "notes.md", "content": "ok"}), &ctx)
        .await
        .expect("an ordinary file is written");
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_to_a_protected_file_is_the_protected_file() {
    let (dir, ws) = workspace();
    let root = dir.path();
    std::fs::create_dir(root.join("docs")).unwrap();
    std::os::unix::fs::symlink("../subagents.toml", root.join("docs/x")).unwrap();
    let r = WriteTool::new(ws.clone())
        .call(
            json!({"file_path": "docs/x", "content": "[sandbox]\nenabled = false\n"}),
            &TaskContext::new(),
        )
        .await;
    denied_naming(r, "`subagents.toml`");
    assert_eq!(
        std::fs::read_to_string(root.join("subagents.toml")).unwrap(),
        TOML
    );
    let target = tokio::task::spawn_blocking(move || {
        protected_write_target(&ws, &json!({"file_path": "docs/x"}))
    })
    .await
    .unwrap()
    .expect("protected");
    assert_eq!(target.entry, "subagents.toml");
    assert_eq!(target.shown, "subagents.toml");
}

#[tokio::test]
async fn an_approval_covers_its_file_only() {
    let (dir, ws) = workspace();
    let root = dir.path();
    let approved = ApprovedProtectedWrite::new(ws.root().join("subagents.toml"));
    let ctx = TaskContext::new().with_extension(approved);
    let write = WriteTool::new(ws.clone());
    write
        .call(
            json!({"file_path": "subagents.toml", "content": "model = \"n\"\n"}),
            &ctx,
        )
        .await
        .expect("the approved file is written");
    assert_eq!(
        std::fs::read_to_string(root.join("subagents.toml")).unwrap(),
        "model = \"n\"\n"
    );
    let r = write
        .call(json!({"file_path": ".mcp.json", "content": "{}"}), &ctx)
        .await;
    denied_naming(r, "`.mcp.json`");
}
