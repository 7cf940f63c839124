//! W3C trace context in MCP's `_meta`, as SEP-414 defines it: the keys `traceparent`,
//! `tracestate` and `baggage` (no vendor prefix) at the top of a request's `params._meta`,
//! their values in the W3C Trace Context and Baggage formats. The client writes the current
//! `tracing` span's context into its requests (`tools/call`, and the `tasks/*` requests that
//! follow a task), the server continues a caller's trace by making it the parent of the span
//! serving the call. A malformed or oversized `traceparent` / `tracestate` / `baggage` is
//! ignored, never an error: the request is served in a new trace.
//!
//! The same mechanism as `subagent-a2a`'s headers: the OpenTelemetry *API*'s global
//! text-map propagator and `tracing-opentelemetry`'s span extension, behind the `otel`
//! feature. The host (the `subagents` facade, when it exports traces) installs the W3C
//! propagator and the OpenTelemetry layer; without them, or without the feature, both
//! functions do nothing.

use rmcp::model::{JsonObject, RequestMetaObject};

/// The longest `tracestate` value continued (W3C: at most 32 members of 256 bytes; 512 bytes
/// is the size every implementation must accept).
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
const MAX_TRACESTATE: usize = 512;
/// The longest `baggage` value continued (W3C Baggage: 8192 bytes).
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
const MAX_BAGGAGE: usize = 8192;

/// The `_meta` of a request: the current span's trace context (SEP-414), or `None` when no
/// trace is being recorded.
pub(crate) fn request_meta() -> Option<RequestMetaObject> {
    let mut meta = JsonObject::new();
    inject(&mut meta);
    (!meta.is_empty()).then(|| meta.into())
}

/// True when `value` is a W3C `traceparent`: `VERSION-TRACEID-PARENTID-FLAGS`, lower-case hex
/// of 2, 32, 16 and 2 digits, version not `ff`, trace and parent ids not all zeros.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) fn valid_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let not_zero = |s: &str| s.bytes().any(|b| b != b'0');
    match parts.as_slice() {
        [version, trace, parent, flags, rest @ ..] => {
            hex(version, 2)
                && *version != "ff"
                && (rest.is_empty() || *version != "00")
                && hex(trace, 32)
                && not_zero(trace)
                && hex(parent, 16)
                && not_zero(parent)
                && hex(flags, 2)
        }
        _ => false,
    }
}

/// The SEP-414 keys of `meta` that are well-formed and within the W3C sizes.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
fn carried(meta: &JsonObject, key: &str) -> Option<String> {
    let value = meta.get(key)?.as_str()?;
    let ok = match key {
        "traceparent" => valid_traceparent(value),
        "tracestate" => value.len() <= MAX_TRACESTATE && value.is_ascii(),
        "baggage" => value.len() <= MAX_BAGGAGE && value.is_ascii(),
        _ => false,
    };
    ok.then(|| value.to_string())
}

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
    struct Extractor(std::collections::BTreeMap<&'static str, String>);
    impl opentelemetry::propagation::Extractor for Extractor {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).map(String::as_str)
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().copied().collect()
        }
    }
    if span.is_disabled() || carried(meta, "traceparent").is_none() {
        return;
    }
    let keys = Extractor(
        ["traceparent", "tracestate", "baggage"]
            .into_iter()
            .filter_map(|k| carried(meta, k).map(|v| (k, v)))
            .collect(),
    );
    let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(&keys));
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// Without the `otel` feature: nothing.
#[cfg(not(feature = "otel"))]
#[inline(always)]
pub(crate) fn continue_trace(_meta: &JsonObject, _span: &tracing::Span) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_follows_the_w3c_format() {
        assert!(valid_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert!(!valid_traceparent(bad), "{bad}");
        }
        let mut meta = JsonObject::new();
        meta.insert("tracestate".into(), "x".repeat(MAX_TRACESTATE + 1).into());
        assert!(carried(&meta, "tracestate").is_none());
    }
}
