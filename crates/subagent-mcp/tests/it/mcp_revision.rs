//! The `MCP` kind on the 2026-07-28 revision and with a 2025-11-25 server, against the rmcp
//! test server as a real child process over stdio: the `server/discover` lifecycle and the
//! legacy fallback, SEP-2322 `input_required` answered through the approval channel, legacy
//! `elicitation/create` likewise, and SEP-2663 tasks followed, answered, cancelled and resumed.

use crate::server;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use subagent_core::FixedApprover;
use subagent_mcp::{KIND, McpPool, expand_reference, mcp_subagent_type_with_pool};
use subagent_spi::{
    ApprovalDecision, ApprovalRequest, Approver, ProgressEvent, ProgressKind, SubagentDefinition,
    SubagentError, SubagentReference, SubagentType, TaskCall, TaskContext, TaskOutcome, TaskStatus,
    async_trait,
};
use subagent_testkit::ProgressRecorder;

const BIN: &str = env!("CARGO_BIN_EXE_subagent-mcp-test-server");

fn uri() -> String {
    format!("stdio:'{BIN}'")
}

fn reference(tool: &str, legacy: bool) -> SubagentReference {
    let r = SubagentReference::new(uri(), KIND).with_metadata("tool", tool);
    if legacy {
        r.with_metadata(format!("env.{}", server::LEGACY_ENV), "1")
    } else {
        r
    }
}

/// `fut` within a generous guard, so a call that hangs fails the test instead of the run.
async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} did not return within 30 s"))
}

/// Answers every question with `decision` and keeps them.
struct Recording {
    decision: ApprovalDecision,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Recording {
    fn new(decision: ApprovalDecision) -> Arc<Self> {
        Arc::new(Self {
            decision,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Approver for Recording {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request);
        self.decision.clone()
    }
}

struct Agent {
    kind: SubagentType,
    def: Arc<dyn SubagentDefinition>,
}

impl Agent {
    async fn new(pool: &McpPool, tool: &str, legacy: bool) -> Self {
        Self::at(pool, reference(tool, legacy)).await
    }

    /// The agent `r` names.
    async fn at(pool: &McpPool, r: SubagentReference) -> Self {
        let kind = mcp_subagent_type_with_pool(pool.clone());
        let def = bounded("resolve", kind.resolver().resolve(&r))
            .await
            .unwrap_or_else(|e| panic!("resolving {r} failed: {e}"));
        Self { kind, def }
    }

    async fn run(&self, call: TaskCall, ctx: TaskContext) -> Result<TaskOutcome, SubagentError> {
        bounded(
            "a call",
            self.kind.executor().execute(call, self.def.clone(), ctx),
        )
        .await
    }

    async fn ask(&self, prompt: &str, ctx: TaskContext) -> Result<TaskOutcome, SubagentError> {
        self.run(TaskCall::new(self.def.name(), "test", prompt), ctx)
            .await
    }

    /// Asks `prompt`, every question answered `decision`: the outcome and the questions asked.
    async fn ask_answering(
        &self,
        prompt: &str,
        decision: ApprovalDecision,
    ) -> (Result<TaskOutcome, SubagentError>, Vec<ApprovalRequest>) {
        let recorder = Recording::new(decision);
        let out = self.ask(prompt, ctx_with(recorder.clone())).await;
        (out, recorder.asked())
    }
}

/// Asks `tool` (on the legacy server when `legacy`) `prompt` on a pool of its own, answering
/// every question yes: the outcome and the questions asked.
async fn ask_saying_yes(
    tool: &str,
    legacy: bool,
    prompt: &str,
) -> (Result<TaskOutcome, SubagentError>, Vec<ApprovalRequest>) {
    Agent::new(&McpPool::new(), tool, legacy)
        .await
        .ask_answering(prompt, ApprovalDecision::AllowOnce)
        .await
}

/// [`ask_saying_yes`] for a run that completes after one question: its text and the question.
async fn asked_once_saying_yes(
    tool: &str,
    legacy: bool,
    prompt: &str,
) -> (String, ApprovalRequest) {
    let (out, mut asked) = ask_saying_yes(tool, legacy, prompt).await;
    let out = out.expect("the run completes");
    assert_eq!(asked.len(), 1, "{asked:?}");
    (out.text, asked.remove(0))
}

fn ctx_with(approver: Arc<dyn Approver>) -> TaskContext {
    TaskContext::new()
        .with_agent("lead")
        .with_approver(approver)
}

/// The sessions the run announced, in order.
fn sessions(events: &ProgressRecorder) -> Vec<String> {
    let kinds = events.kinds().into_iter();
    kinds
        .filter_map(|k| match k {
            ProgressKind::Session { session_id } => Some(session_id),
            _ => None,
        })
        .collect()
}

/// The test server's counters (through its `stats` tool).
async fn stats(pool: &McpPool, legacy: bool) -> serde_json::Value {
    let out = Agent::new(pool, "stats", legacy)
        .await
        .ask("", TaskContext::new())
        .await
        .unwrap();
    serde_json::from_str(&out.text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_current_server_is_reached_on_2026_07_28_and_an_older_one_on_2025_11_25() {
    let pool = McpPool::new();
    let modern = Agent::new(&pool, "era", false).await;
    let out = modern.ask("", TaskContext::new()).await.unwrap();
    assert_eq!(out.text, "2026-07-28", "server/discover, no initialize");
    let legacy = Agent::new(&pool, "era", true).await;
    let out = legacy.ask("", TaskContext::new()).await.unwrap();
    assert_eq!(out.text, "2025-11-25", "the initialize fallback");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_is_asked_up_the_tree_and_answered_on_the_retried_call() {
    let pool = McpPool::new();
    let ask = Agent::new(&pool, "ask", false).await;

    let (out, asked) = ask
        .ask_answering("deploy", ApprovalDecision::AllowOnce)
        .await;
    let out = out.unwrap();
    assert_eq!(out.status, TaskStatus::Completed);
    assert_eq!(out.text, r#"answer: accept {"confirm":true}"#);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].tool, "input-required");
    assert_eq!(asked[0].agent_path, ["lead", "ask"]);
    assert!(asked[0].summary.contains("Deploy"), "{}", asked[0].summary);
    assert!(
        asked[0].reason.contains("MCP server"),
        "{}",
        asked[0].reason
    );

    let no = ApprovalDecision::deny("not today");
    let (out, asked) = ask.ask_answering("deploy", no).await;
    assert_eq!(out.unwrap().text, "answer: decline ");
    assert_eq!(asked.len(), 1);

    // Nobody to ask: declined, and the call still completes.
    let out = ask.ask("deploy", TaskContext::new()).await.unwrap();
    assert_eq!(out.text, "answer: decline ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_a_yes_cannot_fill_and_links_without_a_person_are_declined() {
    let pool = McpPool::new();
    // A free-text form: declined without asking anybody.
    let name = Agent::new(&pool, "ask_name", false).await;
    let (out, asked) = name.ask_answering("x", ApprovalDecision::AllowOnce).await;
    assert_eq!(out.unwrap().text, "answer: decline ");
    assert!(asked.is_empty());

    // A URL: shown to a person (with the URL), never accepted by a standing --yes.
    let url = Agent::new(&pool, "ask_url", false).await;
    let out = url
        .ask("x", ctx_with(Arc::new(FixedApprover::allow_all())))
        .await
        .unwrap();
    assert_eq!(out.text, "answer: decline ");
    let (out, asked) = url.ask_answering("x", ApprovalDecision::AllowOnce).await;
    assert_eq!(out.unwrap().text, "answer: accept ");
    assert!(asked[0].person_only);
    assert!(
        asked[0].summary.contains("https://example.com/login"),
        "{}",
        asked[0].summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_keeps_asking_is_stopped_after_eight_rounds() {
    let (err, asked) = ask_saying_yes("ask_forever", false, "x").await;
    let err = err.unwrap_err();
    assert!(err.to_string().contains("after 8 rounds"), "{err}");
    assert_eq!(asked.len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_server_elicitation_is_asked_up_the_tree() {
    let (text, asked) = asked_once_saying_yes("legacy_ask", true, "x").await;
    assert_eq!(text, r#"answer: accept {"confirm":true}"#);
    assert_eq!(asked.tool, "input-required");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_followed_to_its_end_and_resumes_by_its_handle() {
    let pool = McpPool::new();
    let task = Agent::new(&pool, "task_echo", false).await;
    let events = Arc::new(ProgressRecorder::new());
    let ctx = TaskContext::new().with_progress(events.clone());
    let out = task.ask("hi", ctx).await.unwrap();
    assert_eq!(out.text, "task: hi");
    let announced = sessions(&events);
    assert_eq!(announced.len(), 1, "{announced:?}");
    assert!(announced[0].starts_with("mcp-task:"), "{announced:?}");
    assert_eq!(out.session_id.as_deref(), Some(announced[0].as_str()));

    // Resuming follows the stored handle: no new tools/call.
    let calls = stats(&pool, false).await["calls"].as_u64().unwrap();
    let resumed = task
        .run(
            TaskCall::new("task_echo", "test", "ignored").resuming(announced[0].clone()),
            TaskContext::new(),
        )
        .await
        .unwrap();
    assert_eq!(resumed.text, "task: hi");
    assert_eq!(
        stats(&pool, false).await["calls"].as_u64().unwrap(),
        calls + 1,
        "only the stats call itself"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_asking_for_input_is_answered_with_tasks_update() {
    let (text, _) = asked_once_saying_yes("task_echo", false, "ask").await;
    assert_eq!(text, r#"task answer: accept {"confirm":true}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_task_cancels_it_on_the_server() {
    let pool = McpPool::new();
    let task = Agent::new(&pool, "task_wait", false).await;
    let announced = Arc::new(tokio::sync::Notify::new());
    let n = announced.clone();
    let ctx = TaskContext::new().with_progress(Arc::new(move |ev: ProgressEvent| {
        if matches!(ev.kind, ProgressKind::Session { .. }) {
            n.notify_one();
        }
    }));
    let cancel = ctx.cancel().clone();
    let stopper = tokio::spawn(async move {
        announced.notified().await;
        cancel.cancel();
    });
    let out = task.ask("w", ctx).await.unwrap();
    assert_eq!(out.status, TaskStatus::Cancelled);
    stopper.await.unwrap();
    // `tasks/cancel` is sent on its own task: wait (bounded) until the server saw it.
    bounded("the server's task to see tasks/cancel", async {
        while stats(&pool, false).await["tasks_cancelled"] != 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_many_tools_gives_many_agents_with_their_prompt_argument() {
    let pool = McpPool::new();
    let spec = subagent_mcp::agent_reference(&uri()).unwrap();
    let refs = bounded("expand", expand_reference(&pool, &spec)).await;
    let tools: Vec<&str> = refs.iter().filter_map(|r| r.metadata("tool")).collect();
    assert!(
        tools.contains(&"echo") && tools.contains(&"shout"),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"pair"),
        "two string arguments, none named: {tools:?}"
    );

    // `shout` takes its only string argument, `text`.
    let spec = |fragment: &str| subagent_mcp::agent_reference(&format!("{}#{fragment}", uri()));
    let shout = Agent::at(&pool, spec("tool=shout").unwrap()).await;
    let out = shout.ask("quiet", TaskContext::new()).await.unwrap();
    assert_eq!(out.text, "QUIET");
    // `pair` needs `argument`.
    let kind = mcp_subagent_type_with_pool(pool.clone());
    let err = kind
        .resolver()
        .resolve(&spec("tool=pair").unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("set metadata `argument`") && err.contains("a, b"),
        "{err}"
    );
    let pair = Agent::at(&pool, spec("tool=pair&argument=b").unwrap()).await;
    let out = pair.ask("x", TaskContext::new()).await.unwrap();
    assert_eq!(out.text, "+x");
}
