//! A third-party subagent kind written against the SPI alone, registered through the facade,
//! and driven through `Task` exactly as a model would: foreground, background + TaskOutput,
//! TaskStop, and resume. Every line after `Task ->` is the text the model would see.
//!
//! Run: `cargo run --example custom_kind`

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use subagents::spi::{
    ProgressKind, SubagentDefinition, SubagentError, SubagentExecutor, SubagentReference,
    SubagentResolver, SubagentType, TaskCall, TaskContext, TaskOutcome, Usage, async_trait,
};
use subagents::{Subagents, TaskStatus, Tool};
use subagents_examples::{model_calls, session_in, task_id_in};

/// The kind's name, as used in references.
const KIND: &str = "RECIPE";

/// A "recipe" agent: an in-process function with a name and a description. The URI is
/// `recipe:NAME`.
#[derive(Debug)]
struct RecipeDefinition {
    name: String,
    description: String,
    reference: SubagentReference,
}

subagents::spi::impl_subagent_definition!(RecipeDefinition);

/// Resolver and executor in one: knows three recipes, and keeps notebooks for `resume`.
#[derive(Default)]
struct RecipeKind {
    /// session id -> lines collected so far (the "transcript" of the notebook agent).
    notebooks: Mutex<HashMap<String, Vec<String>>>,
    next_session: Mutex<u32>,
}

fn describe(name: &str) -> Option<&'static str> {
    Some(match name {
        "word-count" => "Counts the words and lines of a text given in the prompt.",
        "slow-poet" => "Writes a poem one line at a time (slow: use it in the background).",
        "notebook" => "Keeps notes across calls: resume it with its session id to add more.",
        _ => return None,
    })
}

#[async_trait]
impl SubagentResolver for RecipeKind {
    fn can_resolve(&self, r: &SubagentReference) -> bool {
        r.is_kind(KIND) && r.uri.starts_with("recipe:")
    }

    async fn resolve(
        &self,
        r: &SubagentReference,
    ) -> Result<Arc<dyn SubagentDefinition>, SubagentError> {
        let name = r.uri.trim_start_matches("recipe:");
        let description = describe(name).ok_or_else(|| {
            SubagentError::resolution(&r.uri, format!("there is no recipe named `{name}`"))
        })?;
        Ok(Arc::new(RecipeDefinition {
            name: name.to_string(),
            description: description.to_string(),
            reference: r.clone(),
        }))
    }
}

#[async_trait]
impl SubagentExecutor for RecipeKind {
    async fn execute(
        &self,
        call: TaskCall,
        def: Arc<dyn SubagentDefinition>,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let usage = |turns| {
            Usage::new()
                .with_turns(turns)
                .with_tokens(call.prompt.split_whitespace().count() as u64, 0)
        };
        match def.name() {
            "word-count" => {
                let words = call.prompt.split_whitespace().count();
                let lines = call.prompt.lines().count();
                Ok(
                    TaskOutcome::completed(format!("{words} words, {lines} lines"))
                        .with_usage(usage(1)),
                )
            }
            "slow-poet" => {
                let mut poem = String::new();
                for (i, line) in [
                    "Roses wait,",
                    "violets queue,",
                    "the task runs late,",
                    "and so do you.",
                ]
                .iter()
                .enumerate()
                {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(150)) => {}
                        _ = ctx.cancel().cancelled() => {
                            // Cancelled: return what we have; the Task tool keeps it.
                            return Ok(TaskOutcome::with_status(poem, TaskStatus::Cancelled).with_usage(usage(i as u32)));
                        }
                    }
                    poem.push_str(line);
                    poem.push('\n');
                    ctx.emit(ProgressKind::TextDelta {
                        text: format!("{line}\n"),
                    });
                }
                Ok(TaskOutcome::completed(poem.trim_end()).with_usage(usage(4)))
            }
            "notebook" => {
                let session = match &call.resume {
                    Some(s) => {
                        if !self
                            .notebooks
                            .lock()
                            .map_err(|_| poisoned())?
                            .contains_key(s)
                        {
                            return Err(SubagentError::Resume {
                                session: s.clone(),
                                reason: "no notebook has that session id".into(),
                            });
                        }
                        s.clone()
                    }
                    None => {
                        let mut n = self.next_session.lock().map_err(|_| poisoned())?;
                        *n += 1;
                        format!("notebook-{n}")
                    }
                };
                let mut books = self.notebooks.lock().map_err(|_| poisoned())?;
                let notes = books.entry(session.clone()).or_default();
                notes.push(call.prompt.clone());
                let text = format!("Notes so far ({}):\n- {}", notes.len(), notes.join("\n- "));
                Ok(TaskOutcome::completed(text)
                    .with_session(session)
                    .with_usage(usage(1)))
            }
            other => Err(SubagentError::execution(other, "unknown recipe")),
        }
    }
}

fn poisoned() -> SubagentError {
    SubagentError::execution("notebook", "internal lock poisoned")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kind = Arc::new(RecipeKind::default());
    let agents = Subagents::builder()
        .builtin_agents(false)
        .kind(SubagentType::new(KIND, kind.clone(), kind))
        .agent("recipe:word-count", KIND)
        .agent("recipe:slow-poet", KIND)
        .agent("recipe:notebook", KIND)
        .build()
        .await?;
    let tools = agents.tools();
    let (task, output, stop) = (&tools.task, &tools.output, &tools.stop);
    let ctx = TaskContext::new();

    println!(
        "== The Task tool's description, as the model sees it ==\n{}",
        task.description()
    );

    println!("\n== Foreground ==");
    model_calls(task, json!({"description": "count words", "prompt": "the quick brown fox\njumps over", "subagent_type": "word-count"}), &ctx).await;

    println!("\n== Unknown agent (the model can correct itself) ==");
    model_calls(
        task,
        json!({"description": "oops", "prompt": "x", "subagent_type": "wordcount"}),
        &ctx,
    )
    .await;

    println!("\n== Background + TaskOutput ==");
    let started = model_calls(task, json!({"description": "write a poem", "prompt": "about queues", "subagent_type": "slow-poet", "run_in_background": true}), &ctx).await;
    let id = task_id_in(&started.content);
    model_calls(output, json!({"task_id": id, "timeout_ms": 100}), &ctx).await;
    model_calls(output, json!({"task_id": id}), &ctx).await;

    println!("\n== TaskStop ==");
    let started = model_calls(task, json!({"description": "another poem", "prompt": "about stopping", "subagent_type": "slow-poet", "run_in_background": true}), &ctx).await;
    tokio::time::sleep(Duration::from_millis(350)).await;
    model_calls(stop, json!({"task_id": task_id_in(&started.content)}), &ctx).await;

    println!("\n== Resume ==");
    let first = model_calls(
        task,
        json!({"description": "start notes", "prompt": "buy milk", "subagent_type": "notebook"}),
        &ctx,
    )
    .await;
    let session = session_in(&first.content);
    model_calls(task, json!({"description": "more notes", "prompt": "call mum", "subagent_type": "notebook", "resume": session}), &ctx).await;
    model_calls(task, json!({"description": "bad resume", "prompt": "x", "subagent_type": "notebook", "resume": "notebook-99"}), &ctx).await;
    Ok(())
}
