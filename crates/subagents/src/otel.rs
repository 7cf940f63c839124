//! Exporting the runs' spans over OTLP (feature `otel`).
//!
//! Runs emit `tracing` spans following the OpenTelemetry GenAI conventions whether or not
//! anything records them. [`OtelGuard::from_env`] turns them into an OTLP/HTTP (protobuf)
//! export when an endpoint is configured: `--otlp URL` (passed in as `endpoint`), else the
//! standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`. With neither
//! it returns `None` and nothing is installed, so spans cost what a disabled `tracing` span
//! costs. The service name is `subagents` unless `OTEL_SERVICE_NAME` says otherwise
//! (`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_EXPORTER_OTLP_TIMEOUT`
//! are honoured as the OpenTelemetry SDK reads them).
//!
//! With an export, the W3C trace-context propagator is installed too, so the A2A client sends
//! `traceparent`/`tracestate`, MCP calls carry them in `_meta`, and the A2A and MCP servers
//! continue a caller's trace: one trace across processes.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt as _;
//! use tracing_subscriber::util::SubscriberInitExt as _;
//!
//! let otel = subagents::otel::OtelGuard::from_env(None)?;
//! tracing_subscriber::registry()
//!     .with(otel.as_ref().map(|o| o.layer()))
//!     .init();
//! // ... run agents; dropping `otel` (or `shutdown()`) flushes the spans still buffered.
//! # Ok::<(), subagents::Error>(())
//! ```
//!
//! Header values (`OTEL_EXPORTER_OTLP_HEADERS`, e.g. API keys) are never printed; the
//! endpoint shown by [`OtelGuard::endpoint`] has any password in its URL replaced by `***`.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::filter::{Filtered, LevelFilter, Targets};
use tracing_subscriber::layer::Layer as _;
use tracing_subscriber::registry::LookupSpan;

use crate::Error;

/// The service name spans are exported under unless `OTEL_SERVICE_NAME` is set.
pub const SERVICE_NAME: &str = "subagents";

/// The layer [`OtelGuard::layer`] returns: spans of the `subagents` crates (info and above)
/// exported over OTLP.
pub type OtelLayer<S> = Filtered<OpenTelemetryLayer<S, SdkTracer>, Targets, S>;

/// An installed OTLP export: the tracer provider behind [`OtelGuard::layer`]. Dropping it
/// (or [`OtelGuard::shutdown`]) flushes the spans still buffered and stops the exporter;
/// keep it alive for as long as the program runs agents. Note that `std::process::exit` runs
/// no destructors: call `shutdown` first.
#[derive(Debug)]
pub struct OtelGuard {
    provider: Option<SdkTracerProvider>,
    endpoint: String,
}

impl OtelGuard {
    /// Sets up the export to `endpoint` (a base URL like `OTEL_EXPORTER_OTLP_ENDPOINT`:
    /// `/v1/traces` is appended unless already there), else to the endpoint of the standard
    /// environment variables; `Ok(None)` when neither is set (nothing installed). Also
    /// installs the W3C trace-context propagator (global), so traces cross A2A and MCP.
    pub fn from_env(endpoint: Option<&str>) -> Result<Option<Self>, Error> {
        let endpoint = endpoint.map(str::trim).filter(|e| !e.is_empty());
        let from_env = [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()));
        let shown = match (endpoint, &from_env) {
            (Some(e), _) => traces_url(e),
            (None, Some(e)) => e.clone(),
            (None, None) => return Ok(None),
        };
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(e) = endpoint {
            builder = builder.with_endpoint(traces_url(e));
        }
        let exporter = builder.build().map_err(|e| Error::Telemetry {
            endpoint: crate::models::redacted(&shown),
            source: Box::new(e),
        })?;
        // `OTEL_SERVICE_NAME`, when set, is read by the SDK's own resource detector.
        let mut resource = Resource::builder();
        if !std::env::var("OTEL_SERVICE_NAME").is_ok_and(|s| !s.trim().is_empty()) {
            resource = resource.with_service_name(SERVICE_NAME);
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        Ok(Some(Self {
            provider: Some(provider),
            endpoint: crate::models::redacted(&shown),
        }))
    }

    /// Where spans go (credentials in the URL replaced by `***`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The `tracing` layer exporting the spans of the `subagents` crates (info level and
    /// above; other crates' spans are not exported).
    pub fn layer<S>(&self) -> OtelLayer<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        let tracer = match &self.provider {
            Some(p) => p.tracer(SERVICE_NAME),
            // Only after `shutdown`: a tracer of a fresh provider exports nothing.
            None => SdkTracerProvider::builder().build().tracer(SERVICE_NAME),
        };
        let targets = Targets::new()
            .with_default(LevelFilter::OFF)
            .with_target("subagent", LevelFilter::INFO)
            .with_target("task_tool", LevelFilter::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(targets)
    }

    /// Flushes the buffered spans and stops the exporter (waits for the export, bounded by
    /// `OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default). Idempotent.
    pub fn shutdown(&mut self) {
        if let Some(p) = self.provider.take() {
            let _ = p.force_flush();
            if let Err(e) = p.shutdown() {
                tracing::debug!("OTLP exporter shutdown: {e}");
            }
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `base` as the traces endpoint: `/v1/traces` appended unless it ends with it.
fn traces_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_path_is_appended_once() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(traces_url("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(traces_url("http://h/v1/traces"), "http://h/v1/traces");
    }
}
