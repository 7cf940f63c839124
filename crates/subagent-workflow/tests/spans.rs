//! OpenTelemetry: one `workflow_call` span per call under the run's `invoke_workflow` span, and
//! the child's `invoke_agent` span under its call's span.
//!
//! A test binary of its own: `tracing`'s callsite interest is process-wide, and other tests'
//! threads registering the same callsites without a subscriber could hide them from this
//! test's scoped one.

#[path = "it/common.rs"]
#[allow(dead_code)]
mod common;

use std::sync::{Arc, Mutex};

use serde_json::json;
use subagent_workflow::WorkflowLimits;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use common::World;

/// Records every new span as (its name, its parent's name).
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(String, String)>>>);

impl<S> tracing_subscriber::Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        _attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span
            .parent()
            .map(|p| p.name().to_string())
            .unwrap_or_default();
        self.0
            .lock()
            .unwrap()
            .push((span.name().to_string(), parent));
    }
}

#[tokio::test]
async fn one_span_per_call_under_the_workflow_span() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let w = World::new(WorkflowLimits::default()).await;
    let out = w.run("await parallel([() => agent('echo', 'a'), () => agent('echo', 'b')]); return await agent('echo', 'c');").await;
    assert_eq!(out.result, Some(json!("echo:c")), "{:?}", out.error);
    let seen = spans.0.lock().unwrap().clone();
    let count = |name: &str, parent: &str| {
        seen.iter()
            .filter(|(n, p)| n == name && p == parent)
            .count()
    };
    assert_eq!(count("invoke_workflow", ""), 1, "{seen:?}");
    assert_eq!(count("workflow_call", "invoke_workflow"), 3, "{seen:?}");
    assert_eq!(count("invoke_agent", "workflow_call"), 3, "{seen:?}");
}
