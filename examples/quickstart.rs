//! The facade in ten lines: a model, a directory of Markdown agents and a remote A2A agent,
//! then a delegating main agent over them. Needs a model (`SUBAGENTS_MODEL`, default
//! `ollama:qwen2.5`); the A2A agent is skipped with a warning when nothing listens there.
//!
//! Run: `cargo run --example quickstart -- "your question"`

use subagents::policy::UsageTreeText;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = std::env::var("SUBAGENTS_MODEL").unwrap_or_else(|_| "ollama:qwen2.5".into());
    let agents = subagents::Subagents::builder()
        .model(model)
        .agents_dir(".claude/agents")
        .a2a_agent("http://127.0.0.1:9000/researcher")
        .skip_unresolvable(true)
        .build()
        .await?;
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or("Summarise this repository".into());
    let answer = agents.main_agent().run(prompt).await?;
    println!(
        "{}\n\n{}",
        answer.text,
        answer.usage_tree("main", "MAIN", None).render()
    );
    Ok(())
}
