//! Interop with the official Python MCP SDK (2.x) as a real child process over stdio: a tool
//! that asks the user to confirm (SEP-2322 `input_required` on 2026-07-28) is answered from
//! our approval channel and completes. The venv is `<workspace>/target/py/mcp-2x` (made by
//! `.ci/setup-python.sh`) or the interpreter in `SUBAGENTS_MCP_PY`; without it the test says
//! so and passes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use subagent_mcp::{KIND, McpPool, mcp_subagent_type_with_pool};
use subagent_spi::{
    ApprovalDecision, ApprovalRequest, Approver, SubagentReference, TaskCall, TaskContext,
    async_trait,
};

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SUBAGENTS_MCP_PY") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/py/mcp-2x/bin/python");
    p.exists().then_some(p)
}

struct Yes(Mutex<Vec<String>>);

#[async_trait]
impl Approver for Yes {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        self.0.lock().unwrap().push(request.summary);
        ApprovalDecision::AllowOnce
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_sdk_tool_that_asks_is_answered_and_completes() {
    let Some(python) = python() else {
        eprintln!(
            "SKIPPED: no Python MCP SDK venv (run .ci/setup-python.sh or set SUBAGENTS_MCP_PY)"
        );
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/py_mcp_server.py");
    let uri = format!("stdio:'{}' '{}'", python.display(), script.display());
    let pool = McpPool::new();
    let kind = mcp_subagent_type_with_pool(pool.clone());
    let run = |tool: &'static str, prompt: &'static str, ctx: TaskContext| {
        let kind = kind.clone();
        let r = SubagentReference::new(uri.clone(), KIND).with_metadata("tool", tool);
        async move {
            let def = kind.resolver().resolve(&r).await.expect("resolves");
            kind.executor()
                .execute(TaskCall::new(tool, "t", prompt), def, ctx)
                .await
        }
    };
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        run("echo", "hi", TaskContext::new()),
    )
    .await
    .expect("within 60 s")
    .unwrap();
    assert_eq!(out.text, "py echo: hi");

    let yes = Arc::new(Yes(Mutex::new(Vec::new())));
    let ctx = TaskContext::new()
        .with_agent("lead")
        .with_approver(yes.clone() as Arc<dyn Approver>);
    let out = tokio::time::timeout(Duration::from_secs(60), run("deploy", "v2", ctx))
        .await
        .expect("within 60 s")
        .unwrap();
    assert_eq!(out.text, "deployed v2: confirm=True");
    let asked = yes.0.lock().unwrap().clone();
    assert_eq!(asked, ["Deploy v2?"]);
}
