//! The OpenTelemetry GenAI spans of a run, seen by a `tracing` layer: `invoke_agent` per run,
//! `chat` per model call, `execute_tool` per tool call, nested as the delegation tree.

#[path = "it/common/mod.rs"]
mod common;
use common::Built as _;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use subagent_testkit::{Reply, ScriptedModelServer};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[derive(Debug, Clone, Default)]
struct Rec {
    name: String,
    parent: Option<u64>,
    fields: HashMap<String, String>,
}

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<HashMap<u64, Rec>>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_string(),
            format!("{value:?}").trim_matches('"').to_string(),
        );
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S> Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut rec = Rec {
            name: attrs.metadata().name().to_string(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.id().into_u64()),
            ..Rec::default()
        };
        attrs.record(&mut Fields(&mut rec.fields));
        self.0.lock().unwrap().insert(id.into_u64(), rec);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(rec) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut rec.fields));
        }
    }
}

#[tokio::test]
async fn a_run_traces_as_its_delegation_tree_with_genai_attributes() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = ScriptedModelServer::start().await;
    server.push(Reply::task_call("leaf", "look it up").with_usage(11, 5));
    server.push(
        Reply::text("LEAF-42")
            .with_usage(7, 3)
            .with_model("leaf-model-v1"),
    );
    server.push(Reply::text("done").with_usage(20, 2));
    let agents = common::team_builder(&server).built().await;
    agents.main_agent().run("go").await.expect("runs");

    let all = spans.0.lock().unwrap().clone();
    let find = |name: &str, key: &str, value: &str| -> (u64, Rec) {
        all.iter()
            .find(|(_, r)| r.name == name && r.fields.get(key).map(String::as_str) == Some(value))
            .map(|(id, r)| (*id, r.clone()))
            .unwrap_or_else(|| panic!("no {name} span with {key}={value}: {all:#?}"))
    };
    let (main_id, main) = find("invoke_agent", "gen_ai.agent.name", "main");
    assert_eq!(main.parent, None, "main is the root of the trace");
    let (tool_id, tool) = find("execute_tool", "gen_ai.tool.name", "Task");
    assert_eq!(tool.parent, Some(main_id));
    assert_eq!(tool.fields["gen_ai.operation.name"], "execute_tool");
    let (leaf_id, leaf) = find("invoke_agent", "gen_ai.agent.name", "leaf");
    assert_eq!(
        leaf.parent,
        Some(tool_id),
        "the child's run nests in the Task call"
    );
    assert!(
        leaf.fields["gen_ai.agent.id"].starts_with("task_"),
        "{leaf:?}"
    );
    assert_eq!(leaf.fields["otel.name"], "invoke_agent leaf");
    let (_, chat) = find("chat", "gen_ai.response.model", "leaf-model-v1");
    assert_eq!(chat.parent, Some(leaf_id));
    assert_eq!(chat.fields["gen_ai.request.model"], "m");
    assert_eq!(chat.fields["gen_ai.usage.input_tokens"], "7");
    assert_eq!(chat.fields["gen_ai.usage.output_tokens"], "3");
    assert!(
        !chat.fields.contains_key("gen_ai.input.messages"),
        "no content unless opted in"
    );
    let main_chats = all
        .values()
        .filter(|r| r.name == "chat" && r.parent == Some(main_id))
        .count();
    assert_eq!(main_chats, 2, "the main agent's two model calls");
}
