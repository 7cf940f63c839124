//! W3C trace context (`traceparent`, `tracestate`) on A2A requests: the client writes the
//! current `tracing` span's context into the request headers, the server continues a caller's
//! trace by making it the parent of the span serving the request.
//!
//! One mechanism, shared with `subagent-mcp` (which carries the same two keys in `_meta`): the
//! OpenTelemetry *API*'s global text-map propagator and `tracing-opentelemetry`'s span
//! extension, behind the `otel` feature. The host (the `subagents` facade, when it exports
//! traces) installs the W3C propagator and the OpenTelemetry layer; without them, or without
//! the feature, both functions do nothing.

// A client-only or server-only build uses one of the two functions.
#![cfg_attr(not(all(feature = "client", feature = "server")), allow(dead_code))]

use http::HeaderMap;

/// Adds the current span's `traceparent` / `tracestate` to `headers` (nothing when no trace
/// is being recorded).
#[cfg(feature = "otel")]
pub(crate) fn inject(headers: &mut HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    struct Injector<'a>(&'a mut HeaderMap);
    impl opentelemetry::propagation::Injector for Injector<'_> {
        fn set(&mut self, key: &str, value: String) {
            if let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(key.as_bytes()),
                http::HeaderValue::from_str(&value),
            ) {
                self.0.insert(name, value);
            }
        }
    }
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&cx, &mut Injector(headers));
    });
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
#[inline(always)]
pub(crate) fn inject(_headers: &mut HeaderMap) {}

/// Makes the trace context in `headers` (if any) the parent of `span`, which must not have
/// been entered yet.
#[cfg(feature = "otel")]
pub(crate) fn continue_trace(headers: &HeaderMap, span: &tracing::Span) {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    struct Extractor<'a>(&'a HeaderMap);
    impl opentelemetry::propagation::Extractor for Extractor<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|v| v.to_str().ok())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(http::HeaderName::as_str).collect()
        }
    }
    if span.is_disabled() || !headers.contains_key("traceparent") {
        return;
    }
    let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Extractor(headers)));
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
#[inline(always)]
pub(crate) fn continue_trace(_headers: &HeaderMap, _span: &tracing::Span) {}
