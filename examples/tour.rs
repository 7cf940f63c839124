//! The tour: everything `subagents` does, with no API key and no network beyond 127.0.0.1.
//!
//! It starts two A2A servers on loopback with deterministic agents: one answering as A2A 1.0
//! (a forecaster and a slow researcher) and one as A2A 0.3 (a translator). It registers them,
//! plus an in-process kind of its own, through the facade, then drives the `Task` tool exactly
//! as a model would: foreground, background + TaskOutput, parallel fan-out, TaskStop, resume.
//! Every block after `-> model:` is the text a model would see. It ends with the usage tree.
//!
//! Run: `cargo run --release --example tour`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use subagents::a2a::client::A2aSubagentDefinition;
use subagents::a2a::server::{
    A2aHandler, A2aServer, AgentInfo, AgentMount, HandlerError, HandlerRequest, TaskEventSink,
    handler_fn,
};
use subagents::a2a::types::ProtocolVersion;
use subagents::policy::UsageTreeText;
use subagents::spi::{
    CancellationToken, Kind, SubagentError, SubagentKind, SubagentReference, SubagentType,
    TaskCall, TaskContext, TaskOutcome, Usage, UsageNode, async_trait,
};
use subagents::{Subagents, TaskStatus, Tool};
use subagents_examples::{model_calls, session_in, task_id_in};

// ---------------------------------------------------------------------------------------------
// Remote agents (A2A servers with deterministic handlers)
// ---------------------------------------------------------------------------------------------

const CITIES: [&str; 6] = ["Lisbon", "Porto", "Oslo", "Nairobi", "Lima", "Osaka"];

fn forecast(city: &str) -> String {
    let sky = ["sunny", "cloudy", "rainy", "windy"][city.len() % 4];
    let temp = 8 + city.bytes().map(u32::from).sum::<u32>() % 20;
    format!("{city}: {sky}, {temp} °C tomorrow.")
}

/// Forecasts the weather of a city, streaming its progress; asks for the city when missing.
/// A handler can be one async function ([`handler_fn`]); the researcher below implements
/// [`A2aHandler`] for its state.
async fn forecaster(
    req: HandlerRequest,
    events: TaskEventSink,
    _cancel: CancellationToken,
) -> Result<(), HandlerError> {
    let text = req.text();
    let city = CITIES
        .iter()
        .find(|c| text.to_lowercase().contains(&c.to_lowercase()))
        .copied();
    let Some(city) = city else {
        // The task becomes input-required; the client resumes it with the answer.
        events
            .require_input(format!("Which city? I know {}.", CITIES.join(", ")))
            .await
            .map_err(fail)?;
        return Ok(());
    };
    events
        .working_text(format!("Looking at the sky over {city}"))
        .await
        .map_err(fail)?;
    tokio::time::sleep(Duration::from_millis(80)).await;
    events
        .working_text("Reading the barometer")
        .await
        .map_err(fail)?;
    tokio::time::sleep(Duration::from_millis(80)).await;
    events
        .text_artifact(Some("forecast"), forecast(city))
        .await
        .map_err(fail)?;
    events.complete(None).await.map_err(fail)
}

/// Researches slowly, one step every 150 ms, and stops when its task is cancelled.
struct Researcher {
    saw_cancel: Arc<AtomicBool>,
}

#[async_trait]
impl A2aHandler for Researcher {
    async fn handle(
        &self,
        req: HandlerRequest,
        events: TaskEventSink,
        cancel: CancellationToken,
    ) -> Result<(), HandlerError> {
        let topic = req.text();
        for step in 1..=20 {
            events
                .working_text(format!("step {step}/20: reading source {step} on {topic}"))
                .await
                .map_err(fail)?;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(150)) => {}
                _ = cancel.cancelled() => {
                    self.saw_cancel.store(true, Ordering::SeqCst);
                    return Ok(());
                }
            }
        }
        events
            .text_artifact(Some("report"), format!("20 sources on {topic} agree."))
            .await
            .map_err(fail)?;
        events.complete(None).await.map_err(fail)
    }
}

/// Translates a few English words to French and answers with a plain message (no task).
async fn translator(
    req: HandlerRequest,
    events: TaskEventSink,
    _cancel: CancellationToken,
) -> Result<(), HandlerError> {
    let words = [
        ("good", "bon"),
        ("morning", "matin"),
        ("friends", "amis"),
        ("weather", "météo"),
        ("the", "le"),
        ("is", "est"),
        ("nice", "beau"),
    ];
    let out: Vec<String> = req
        .text()
        .split_whitespace()
        .map(|w| {
            let lw = w.to_lowercase();
            words
                .iter()
                .find(|(en, _)| *en == lw.trim_matches(|c: char| !c.is_alphanumeric()))
                .map_or(format!("[{w}]"), |(_, fr)| fr.to_string())
        })
        .collect();
    events.reply_text(out.join(" ")).await.map_err(fail)
}

fn fail(e: impl std::fmt::Display) -> HandlerError {
    HandlerError::failed(e.to_string())
}

/// Starts a server on an ephemeral loopback port; returns its base URL.
async fn start(server: A2aServer) -> Result<String, Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        if let Err(e) = server.serve(listener, std::future::pending::<()>()).await {
            eprintln!("A2A server stopped: {e}");
        }
    });
    Ok(url)
}

// ---------------------------------------------------------------------------------------------
// An in-process kind of our own, written against the SPI alone
// ---------------------------------------------------------------------------------------------

const LOCAL: &str = "LOCAL";

#[derive(Debug)]
struct WordCounter {
    name: String,
    description: String,
    reference: SubagentReference,
}

subagents::spi::impl_subagent_definition!(WordCounter);

/// The `LOCAL` kind: one typed trait, `SubagentKind`, resolves references into its own
/// definition type and runs tasks against it (the SPI derives the erased resolver and executor).
struct LocalKind;

#[async_trait]
impl SubagentKind for LocalKind {
    type Agent = WordCounter;

    fn kind(&self) -> Kind {
        Kind::from_static(LOCAL)
    }

    async fn resolve(&self, r: &SubagentReference) -> Result<WordCounter, SubagentError> {
        match r.uri.as_str() {
            "local:word-count" => Ok(WordCounter {
                name: "word-count".into(),
                description: "Counts the words and characters of a text (in-process, instant)."
                    .into(),
                reference: r.clone(),
            }),
            other => Err(SubagentError::resolution(other, "unknown local agent")),
        }
    }

    async fn run(
        &self,
        _agent: &WordCounter,
        call: TaskCall,
        _ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let words = call.prompt.split_whitespace().count();
        let usage = Usage::new().with_turns(1).with_tokens(words as u64, 0);
        Ok(TaskOutcome::completed(format!(
            "{words} words, {} characters",
            call.prompt.chars().count()
        ))
        .with_usage(usage))
    }
}

// ---------------------------------------------------------------------------------------------
// The tour
// ---------------------------------------------------------------------------------------------

fn heading(s: &str) {
    println!(
        "\n\n=== {s} {}",
        "=".repeat(70usize.saturating_sub(s.len()))
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    heading("1. Two A2A servers on 127.0.0.1");
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let v1_server = A2aServer::builder()
        .mount(AgentMount::new(
            "/forecaster",
            AgentInfo::new("forecaster", "Forecasts tomorrow's weather for a city.")
                .with_streaming(true),
            handler_fn(forecaster),
        ))
        .mount(AgentMount::new(
            "/researcher",
            AgentInfo::new(
                "researcher",
                "Researches a topic thoroughly (slow: run it in the background).",
            )
            .with_streaming(true),
            Researcher {
                saw_cancel: saw_cancel.clone(),
            },
        ))
        .build()?;
    let v03_server = A2aServer::builder()
        // This server's agent-card.json is a 0.3 card, as a 0.3-only agent would publish.
        .agent_card_version(ProtocolVersion::V03)
        .mount(AgentMount::new(
            "/translator",
            AgentInfo::new(
                "translator",
                "Translates short English phrases into French.",
            ),
            handler_fn(translator),
        ))
        .build()?;
    let v1_url = start(v1_server).await?;
    let v03_url = start(v03_server).await?;
    println!("A2A 1.0 server: {v1_url} (forecaster, researcher)");
    println!("A2A 0.3 server: {v03_url} (translator)");

    heading("2. Register them and an in-process kind through the facade");
    let agents = Subagents::builder()
        .builtin_agents(false)
        .kind(SubagentType::from(LocalKind))
        .agent("local:word-count", LOCAL)
        .a2a_agent(format!("{v1_url}/forecaster"))
        .a2a_agent(format!("{v1_url}/researcher"))
        .a2a_agent(format!("{v03_url}/translator"))
        .build()
        .await?;
    for a in agents.agents() {
        let how = match a.downcast_ref::<A2aSubagentDefinition>() {
            Some(d) => format!(
                "A2A {} over {} at {}",
                d.endpoint().version.as_str(),
                d.endpoint().binding.as_str(),
                d.endpoint().url
            ),
            None => format!(
                "{} (in-process)",
                agents
                    .task()
                    .kind_of(a.name())
                    .map(|k| k.as_str())
                    .unwrap_or("?")
            ),
        };
        println!("- {:<11} {how}", a.name());
    }
    let tools = agents.tools();
    let (task, output, stop) = (&tools.task, &tools.output, &tools.stop);
    let ctx = TaskContext::new().with_parent_model("tour");
    let mut usage: Vec<UsageNode> = Vec::new();

    heading("3. The Task tool, as the model sees it");
    println!("{}", task.description());

    heading("4. Foreground: a 0.3 agent answers with a message");
    let out = model_calls(task, json!({"description": "translate", "prompt": "good morning friends", "subagent_type": "translator"}), &ctx).await;
    usage.extend(out.children);

    heading("5. Background + TaskOutput: a 1.0 agent streams a task");
    let started = model_calls(task, json!({"description": "forecast Lisbon", "prompt": "What will the weather be in Lisbon?", "subagent_type": "forecaster", "run_in_background": true}), &ctx).await;
    let id = task_id_in(&started.content);
    let out = model_calls(output, json!({"task_id": id}), &ctx).await;
    usage.extend(out.children);

    heading("6. Parallel fan-out: three agents at once");
    let calls = [
        json!({"description": "forecast Oslo", "prompt": "Oslo please", "subagent_type": "forecaster"}),
        json!({"description": "translate", "prompt": "the weather is nice", "subagent_type": "translator"}),
        json!({"description": "count", "prompt": "the weather is nice in Oslo", "subagent_type": "word-count"}),
    ];
    println!("\nmodel -> 3 x Task in one reply");
    let results = futures::future::join_all(calls.iter().map(|c| task.call(c.clone(), &ctx))).await;
    for (c, r) in calls.iter().zip(results) {
        let r = r?;
        println!(
            "Task({}) -> model:\n{}",
            c["subagent_type"],
            subagents_examples::indent(&r.content)
        );
        usage.extend(r.children);
    }

    heading("7. TaskStop: cancel a slow remote agent");
    let started = model_calls(task, json!({"description": "research", "prompt": "sea otters", "subagent_type": "researcher", "run_in_background": true}), &ctx).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let out = model_calls(stop, json!({"task_id": task_id_in(&started.content)}), &ctx).await;
    usage.extend(out.children);
    println!(
        "(the researcher's handler saw its A2A task cancelled: {})",
        saw_cancel.load(Ordering::SeqCst)
    );

    heading("8. Resume: the agent asks a question, the model answers it");
    let asked = model_calls(task, json!({"description": "forecast", "prompt": "What's the weather tomorrow?", "subagent_type": "forecaster"}), &ctx).await;
    usage.extend(asked.children);
    let session = session_in(&asked.content);
    let out = model_calls(task, json!({"description": "answer", "prompt": "Porto", "subagent_type": "forecaster", "resume": session}), &ctx).await;
    usage.extend(out.children);

    heading("9. Usage tree");
    let root = UsageNode::new("main", "TOUR", TaskStatus::Completed, Usage::default())
        .with_children(usage);
    print!("{}", root.render());
    let total = root.total();
    println!(
        "total: {} subagent runs, {} turns, {} input tokens",
        root.children.len(),
        total.turns,
        total.input_tokens
    );
    Ok(())
}
