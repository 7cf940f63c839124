//! A third-party subagent kind written against the SPI alone (one `SubagentKind` impl, no
//! downcast), registered through the facade and driven through `Task` as a model would:
//! foreground, background + TaskOutput, TaskStop, resume. Lines after `Task ->` are what the
//! model sees. Run: `cargo run --example custom_kind`

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;
use subagents::spi::{
    Kind, ProgressKind, SubagentError, SubagentKind, SubagentReference, TaskCall, TaskContext,
    TaskOutcome, async_trait, impl_subagent_definition,
};
use subagents::{Subagents, TaskStatus, Tool};
use subagents_examples::{model_calls, session_in, task_id_in};
use tokio::sync::Mutex;

/// A recipe agent (URI `recipe:NAME`): an in-process function with a name and a description.
#[derive(Debug)]
struct Recipe {
    name: String,
    description: String,
    reference: SubagentReference,
}
impl_subagent_definition!(Recipe);

/// The `RECIPE` kind: three recipes, and the notebooks `resume` continues.
#[derive(Default)]
struct Recipes {
    notebooks: Mutex<HashMap<String, Vec<String>>>,
}

#[async_trait]
impl SubagentKind for Recipes {
    type Agent = Recipe;

    fn kind(&self) -> Kind {
        Kind::from_static("RECIPE")
    }

    async fn resolve(&self, r: &SubagentReference) -> Result<Recipe, SubagentError> {
        let name = r.uri.trim_start_matches("recipe:").to_string();
        let description = match name.as_str() {
            "word-count" => "Counts the words and lines of a text given in the prompt.",
            "slow-poet" => "Writes a poem one line at a time (slow: use it in the background).",
            "notebook" => "Keeps notes across calls: resume it with its session id to add more.",
            _ => return Err(SubagentError::resolution(&r.uri, "no such recipe")),
        };
        let (description, reference) = (description.to_string(), r.clone());
        Ok(Recipe {
            name,
            description,
            reference,
        })
    }

    async fn run(&self, agent: &Recipe, call: TaskCall, ctx: TaskContext) -> Outcome {
        let prompt = call.prompt;
        if agent.name == "word-count" {
            let (words, lines) = (prompt.split_whitespace().count(), prompt.lines().count());
            let text = format!("{words} words, {lines} lines");
            return Ok(TaskOutcome::completed(text));
        }
        if agent.name == "slow-poet" {
            let mut poem = String::new();
            for line in "Roses wait,|violets queue,|the task runs late,|and so do you.".split('|') {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(150)) => {}
                    // Cancelled: return what we have; the Task tool keeps it.
                    _ = ctx.cancel().cancelled() => return Ok(TaskOutcome::with_status(poem, TaskStatus::Cancelled)),
                }
                let text = format!("{line}\n");
                poem.push_str(&text);
                ctx.emit(ProgressKind::TextDelta { text });
            }
            return Ok(TaskOutcome::completed(poem.trim_end()));
        }
        let mut books = self.notebooks.lock().await;
        let known = call.resume.as_ref().is_none_or(|s| books.contains_key(s));
        let session = call
            .resume
            .unwrap_or_else(|| format!("notebook-{}", books.len() + 1));
        if !known {
            let reason = "no notebook has that session id".to_string();
            return Err(SubagentError::Resume { session, reason });
        }
        let notes = books.entry(session.clone()).or_default();
        notes.push(prompt);
        let text = format!("Notes so far ({}):\n- {}", notes.len(), notes.join("\n- "));
        Ok(TaskOutcome::completed(text).with_session(session))
    }
}

/// What a run returns.
type Outcome = Result<TaskOutcome, SubagentError>;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agents = Subagents::builder()
        .builtin_agents(false)
        .kind(Recipes::default())
        .references(
            ["word-count", "slow-poet", "notebook"]
                .map(|n| SubagentReference::new(format!("recipe:{n}"), "RECIPE")),
        )
        .build()
        .await?;
    let (tools, ctx) = (agents.tools(), TaskContext::new());
    let (task, output, stop) = (&tools.task, &tools.output, &tools.stop);
    println!("== The Task tool's description, as the model sees it ==");
    println!("{}", task.description());
    let call =
        |agent, prompt| json!({"description": "d", "prompt": prompt, "subagent_type": agent});

    println!("\n== Foreground; then an unknown agent (the model can correct itself) ==");
    model_calls(task, call("word-count", "the quick brown\nfox jumps"), &ctx).await;
    model_calls(task, call("wordcount", "x"), &ctx).await;

    println!("\n== Background + TaskOutput; then TaskStop ==");
    let bg = |prompt| json!({"description": "poem", "prompt": prompt, "subagent_type": "slow-poet", "run_in_background": true});
    let id = task_id_in(&model_calls(task, bg("about queues"), &ctx).await.content);
    model_calls(output, json!({"task_id": id, "timeout_ms": 100}), &ctx).await;
    model_calls(output, json!({"task_id": id}), &ctx).await;
    let id = task_id_in(&model_calls(task, bg("about stopping"), &ctx).await.content);
    tokio::time::sleep(Duration::from_millis(350)).await;
    model_calls(stop, json!({"task_id": id}), &ctx).await;

    println!("\n== Resume ==");
    let first = model_calls(task, call("notebook", "buy milk"), &ctx).await;
    for (prompt, resume) in [
        ("call mum", session_in(&first.content)),
        ("x", "notebook-99".into()),
    ] {
        let again = json!({"description": "notes", "prompt": prompt, "subagent_type": "notebook", "resume": resume});
        model_calls(task, again, &ctx).await;
    }
    Ok(())
}
