//! W3C trace context in MCP's `_meta` (`traceparent`, `tracestate` keys): the client writes
//! the current `tracing` span's context into a `tools/call` request, the server continues a
//! caller's trace by making it the parent of the span serving the call.
//!
//! The same mechanism as `subagent-a2a`'s headers: the OpenTelemetry *API*'s global
//! text-map propagator and `tracing-opentelemetry`'s span extension, behind the `otel`
//! feature. The host (the `subagents` facade, when it exports traces) installs the W3C
//! propagator and the OpenTelemetry layer; without them, or without the feature, both
//! functions do nothing.

use rmcp::model::JsonObject;

/// Adds the current span's `traceparent` / `tracestate` to `meta` (nothing when no trace is
/// being recorded).
#[cfg(feature = "otel")]
pub(crate) fn inject(meta: &mut JsonObject) {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    struct Injector<'a>(&'a mut JsonObject);
    impl opentelemetry::propagation::Injector for Injector<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0
                .insert(key.to_owned(), serde_json::Value::String(value));
        }
    }
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&cx, &mut Injector(meta));
    });
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
#[inline(always)]
pub(crate) fn inject(_meta: &mut JsonObject) {}

/// Makes the trace context in `meta` (if any) the parent of `span`, which must not have been
/// entered yet.
#[cfg(feature = "otel")]
pub(crate) fn continue_trace(meta: &JsonObject, span: &tracing::Span) {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    struct Extractor<'a>(&'a JsonObject);
    impl opentelemetry::propagation::Extractor for Extractor<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(serde_json::Value::as_str)
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }
    if span.is_disabled() || !meta.contains_key("traceparent") {
        return;
    }
    let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Extractor(meta)));
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
#[inline(always)]
pub(crate) fn continue_trace(_meta: &JsonObject, _span: &tracing::Span) {}
