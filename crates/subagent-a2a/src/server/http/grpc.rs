//! The gRPC binding (1.0) of the server: `lf.a2a.v1.A2AService` on tonic, over the same
//! agents, engine, credential check and stream caps as JSON-RPC and HTTP+JSON. This module only
//! converts prost messages to and from the 1.0 wire types and maps errors to gRPC statuses
//! (with the A2A `ErrorInfo` detail).
//!
//! Agents are told apart by the requests' `tenant` field: an agent mounted at `/a/b` is tenant
//! `a/b` (its card's GRPC interface says so); an empty tenant names the agent at the root, or
//! the only agent when just one is mounted.

use std::future::Future as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

use super::calls::{
    await_reply, create_push_config, delete_push_config, extended_card, first_event,
    get_push_config, list_push_configs, send_options, streaming_unsupported,
};
use super::sse::{PEER, StreamPermit, acquire_stream};
use super::{Hosted, Shared};
use crate::grpc::proto::a2a_service_server::{A2aService, A2aServiceServer};
use crate::grpc::{convert, error_status, proto};
use crate::server::engine::{ApiError, Event, SendParams, trim_history};
use crate::types::jsonrpc::codes;
use crate::types::{ProtocolVersion, v1};

/// The `A2AService` implementation over a server's agents.
pub(crate) struct GrpcService {
    shared: Arc<Shared>,
}

/// What an answer to `SendMessage` may add to the message it carries back and the agent's
/// reply: ids, status, timestamps, metadata.
const REPLY_OVERHEAD: usize = 64 * 1024;

/// The largest answer (and stream event) sent: the request limit, at least the binding's
/// default (10 MiB).
fn max_reply_bytes(cfg: &crate::server::ServerConfig) -> usize {
    cfg.max_body_bytes
        .max(crate::grpc::DEFAULT_MAX_MESSAGE_BYTES)
}

/// The tonic service for a server's agents, with its message size bounds.
pub(crate) fn service(shared: Arc<Shared>) -> A2aServiceServer<GrpcService> {
    let max = shared.cfg.max_body_bytes;
    let reply = max_reply_bytes(&shared.cfg);
    A2aServiceServer::new(GrpcService { shared })
        .max_decoding_message_size(max)
        .max_encoding_message_size(reply)
}

/// Refuses, before any task exists, a `SendMessage` whose answer could not be sent: the
/// answer carries the message back (the task's history), and a unary answer also the agent's
/// reply, for which as much room again is kept. So a unary send is accepted when twice its
/// size plus [`REPLY_OVERHEAD`] fits the reply limit, a streamed one when its size plus the
/// overhead does (each event is its own message). A reply that outgrows that room is still
/// refused after the fact (RESOURCE_EXHAUSTED), as on any binding with a reply limit.
fn check_reply_room(
    cfg: &crate::server::ServerConfig,
    request_bytes: usize,
    streaming: bool,
) -> Result<(), Status> {
    let limit = max_reply_bytes(cfg);
    let copies = if streaming { 1 } else { 2 };
    let need = request_bytes
        .saturating_mul(copies)
        .saturating_add(REPLY_OVERHEAD);
    if need > limit {
        let most = limit.saturating_sub(REPLY_OVERHEAD) / copies;
        return Err(Status::resource_exhausted(format!(
            "the message is {request_bytes} bytes; its answer could exceed this server's \
             {limit}-byte gRPC reply limit, so a {} SendMessage takes at most {most} bytes \
             (nothing was started)",
            if streaming { "streaming" } else { "unary" },
        )));
    }
    Ok(())
}

/// The span serving one gRPC call (tonic's `trace_fn`, so the call, and the agent run it
/// starts, run in it), continuing the caller's trace from its `traceparent` metadata as the HTTP
/// bindings do from the header. Named after the RPC (`lf.a2a.v1.A2AService/SendMessage`).
pub(crate) fn request_span(req: &http::Request<()>) -> tracing::Span {
    span_of(req.uri(), req.headers())
}

fn span_of(uri: &http::Uri, headers: &http::HeaderMap) -> tracing::Span {
    let rpc = uri.path().trim_start_matches('/');
    let (service, method) = rpc.split_once('/').unwrap_or((rpc, ""));
    let span = tracing::info_span!(
        "a2a.request",
        otel.name = rpc,
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = service,
        rpc.method = method,
    );
    crate::trace_context::continue_trace(headers, &span);
    span
}

fn status(e: ApiError) -> Status {
    error_status(e.code, e.message)
}

fn bad_request(e: crate::grpc::ConvertError) -> Status {
    error_status(codes::INVALID_PARAMS, e.to_string())
}

fn to_proto<A: serde::Serialize, B: serde::de::DeserializeOwned>(
    what: &'static str,
    a: &A,
) -> Result<B, Status> {
    convert(what, a).map_err(|e| {
        tracing::warn!(error = %e, "cannot encode a gRPC answer");
        error_status(codes::INTERNAL_ERROR, e.to_string())
    })
}

/// A stream of `StreamResponse` messages.
pub(crate) type EventStream =
    Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

impl GrpcService {
    /// The agent a request is for, after the version and credential checks.
    fn agent<T>(&self, req: &Request<T>, tenant: &str) -> Result<&Hosted, Status> {
        let agents = &self.shared.agents;
        let tenant = tenant.trim_matches('/');
        let agent = if tenant.is_empty() {
            agents
                .iter()
                .find(|a| a.path.is_empty())
                .or_else(|| (agents.len() == 1).then(|| &agents[0]))
        } else {
            agents
                .iter()
                .find(|a| a.path.trim_start_matches('/') == tenant)
        };
        let agent = agent.ok_or_else(|| {
            Status::not_found(if tenant.is_empty() {
                "no agent is mounted at the root; name one with `tenant` (its path)".to_string()
            } else {
                format!("no agent for tenant `{tenant}`")
            })
        })?;
        if let Some(v) = req.metadata().get("a2a-version") {
            let v = v.to_str().unwrap_or("?").trim();
            if !v.is_empty() && ProtocolVersion::parse(v) != Some(ProtocolVersion::V1) {
                return Err(error_status(
                    codes::VERSION_NOT_SUPPORTED,
                    format!(
                        "A2A-Version `{v}` is not supported over gRPC; this binding speaks 1.0"
                    ),
                ));
            }
        }
        if let Some(auth) = &agent.auth
            && !auth.check(&req.metadata().clone().into_headers())
        {
            return Err(Status::unauthenticated(format!(
                "agent `{}` requires credentials (see securitySchemes in its card)",
                agent.info.name
            )));
        }
        Ok(agent)
    }

    /// A stream slot, counted per client like the SSE streams.
    fn permit(&self, peer: Option<SocketAddr>) -> Result<StreamPermit, Status> {
        match peer {
            Some(addr) => PEER.sync_scope(addr, || acquire_stream(&self.shared)),
            None => acquire_stream(&self.shared),
        }
        .map_err(status)
    }

    /// The events of a task as a gRPC stream, ending with the task, at shutdown or when the
    /// client goes away.
    fn stream(
        &self,
        first: Option<Event>,
        rx: mpsc::Receiver<Event>,
        permit: StreamPermit,
        history_length: Option<i32>,
    ) -> EventStream {
        struct St {
            first: Option<Event>,
            rx: mpsc::Receiver<Event>,
            history_length: Option<i32>,
            shutdown: Pin<Box<subagent_spi::CancelledFuture>>,
            _permit: StreamPermit,
        }
        let st = St {
            first,
            rx,
            history_length,
            shutdown: Box::pin(self.shared.shutdown.cancelled()),
            _permit: permit,
        };
        Box::pin(futures::stream::unfold(st, |mut st| async move {
            let ev = match st.first.take() {
                Some(e) => e,
                None => tokio::select! {
                    biased;
                    e = st.rx.recv() => e?,
                    _ = &mut st.shutdown => return None,
                },
            };
            let item = match (&*ev, st.history_length) {
                (v1::StreamResponse::Task(t), Some(_)) => {
                    let mut t = t.clone();
                    trim_history(&mut t, st.history_length);
                    to_proto("stream event", &v1::StreamResponse::Task(t))
                }
                (ev, _) => to_proto("stream event", ev),
            };
            Some((item, st))
        }))
    }

    async fn send(
        &self,
        req: Request<proto::SendMessageRequest>,
        streaming: bool,
    ) -> Result<SendOutcome, Status> {
        let peer = req.remote_addr();
        let agent = self.agent(&req, &req.get_ref().tenant)?;
        check_reply_room(
            &self.shared.cfg,
            prost::Message::encoded_len(req.get_ref()),
            streaming,
        )?;
        let msg: v1::SendMessageRequest =
            convert("SendMessageRequest", req.get_ref()).map_err(bad_request)?;
        let (history_length, immediate) = send_options(agent, &msg, streaming).map_err(status)?;
        let permit = if streaming {
            Some(self.permit(peer)?)
        } else {
            None
        };
        let started = agent
            .engine
            .send(SendParams {
                message: msg.message,
                configuration: msg.configuration,
                metadata: msg.metadata,
                streaming,
                version: ProtocolVersion::V1,
                direct: !streaming && !immediate,
            })
            .await
            .map_err(status)?;
        match permit {
            Some(permit) => {
                let (first, events) = first_event(started).await.map_err(status)?;
                Ok(SendOutcome::Stream(self.stream(
                    Some(first),
                    events,
                    permit,
                    history_length,
                )))
            }
            None => {
                let reply = await_reply(started, immediate, history_length)
                    .await
                    .map_err(status)?;
                Ok(SendOutcome::Reply(Box::new(to_proto(
                    "SendMessageResponse",
                    &reply,
                )?)))
            }
        }
    }
}

enum SendOutcome {
    Reply(Box<proto::SendMessageResponse>),
    Stream(EventStream),
}

fn config_ref(task_id: &str, id: &str) -> Result<(), Status> {
    if task_id.is_empty() {
        return Err(error_status(
            codes::INVALID_PARAMS,
            "`task_id` is required".into(),
        ));
    }
    if id.is_empty() {
        return Err(error_status(
            codes::INVALID_PARAMS,
            "`id` is required".into(),
        ));
    }
    Ok(())
}

#[tonic::async_trait]
impl A2aService for GrpcService {
    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        match self.send(request, false).await? {
            SendOutcome::Reply(r) => Ok(Response::new(*r)),
            SendOutcome::Stream(_) => Err(Status::internal("unexpected stream")),
        }
    }

    type SendStreamingMessageStream = EventStream;

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Self::SendStreamingMessageStream>, Status> {
        match self.send(request, true).await? {
            SendOutcome::Stream(s) => Ok(Response::new(s)),
            SendOutcome::Reply(_) => Err(Status::internal("unexpected reply")),
        }
    }

    async fn get_task(
        &self,
        request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        let r = request.get_ref();
        let t = agent
            .engine
            .get(&r.id, r.history_length)
            .await
            .map_err(status)?;
        Ok(Response::new(to_proto("Task", &t)?))
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        let req: v1::ListTasksRequest =
            convert("ListTasksRequest", request.get_ref()).map_err(bad_request)?;
        let list = agent.engine.list(&req).await.map_err(status)?;
        Ok(Response::new(to_proto("ListTasksResponse", &list)?))
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        let t = agent
            .engine
            .cancel(&request.get_ref().id)
            .await
            .map_err(status)?;
        Ok(Response::new(to_proto("Task", &t)?))
    }

    type SubscribeToTaskStream = EventStream;

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Self::SubscribeToTaskStream>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        if !agent.info.streaming {
            return Err(status(streaming_unsupported(agent)));
        }
        let permit = self.permit(request.remote_addr())?;
        let rx = agent
            .engine
            .subscribe(&request.get_ref().id)
            .await
            .map_err(status)?;
        Ok(Response::new(self.stream(None, rx, permit, None)))
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        let config: v1::TaskPushNotificationConfig =
            convert("TaskPushNotificationConfig", request.get_ref()).map_err(bad_request)?;
        let task_id = config.task_id.clone().unwrap_or_default();
        let c = create_push_config(agent, &task_id, config)
            .await
            .map_err(status)?;
        Ok(Response::new(to_proto("TaskPushNotificationConfig", &c)?))
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        let r = request.get_ref();
        config_ref(&r.task_id, &r.id)?;
        let c = get_push_config(agent, &r.task_id, &r.id)
            .await
            .map_err(status)?;
        Ok(Response::new(to_proto("TaskPushNotificationConfig", &c)?))
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        let configs = list_push_configs(agent, &request.get_ref().task_id)
            .await
            .map_err(status)?;
        let list = v1::ListTaskPushNotificationConfigsResponse {
            configs,
            next_page_token: None,
        };
        Ok(Response::new(to_proto(
            "ListTaskPushNotificationConfigsResponse",
            &list,
        )?))
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        let headers = request.metadata().clone().into_headers();
        // Signed with its gRPC interface listed: served as is.
        let card = extended_card(&self.shared, agent, &headers).map_err(status)?;
        Ok(Response::new(to_proto("AgentCard", &card)?))
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        let agent = self.agent(&request, &request.get_ref().tenant)?;
        let r = request.get_ref();
        config_ref(&r.task_id, &r.id)?;
        delete_push_config(agent, &r.task_id, &r.id)
            .await
            .map_err(status)?;
        Ok(Response::new(pbjson_types::Empty {}))
    }
}

/// The gRPC routes as [`A2aServer::serve_grpc`](crate::server::A2aServer::serve_grpc) serves
/// them on its own connections: each call in its span ([`request_span`]), with the peer
/// address tonic's `remote_addr` reads, and its request message due within
/// [`ServerConfig::body_read_timeout`](crate::server::ServerConfig::body_read_timeout).
pub(crate) fn router(shared: Arc<Shared>) -> axum::Router {
    let body_timeout = Some(shared.cfg.body_read_timeout).filter(|d| !d.is_zero());
    tonic::service::Routes::new(service(shared))
        .prepare()
        .into_axum_router()
        .layer(CallLayer { body_timeout })
}

/// Wraps the gRPC routes: see [`router`].
#[derive(Clone, Copy)]
struct CallLayer {
    body_timeout: Option<Duration>,
}

impl<S> tower_layer::Layer<S> for CallLayer {
    type Service = Call<S>;

    fn layer(&self, inner: S) -> Call<S> {
        Call {
            inner,
            body_timeout: self.body_timeout,
        }
    }
}

/// One gRPC call: see [`router`].
#[derive(Clone)]
struct Call<S> {
    inner: S,
    body_timeout: Option<Duration>,
}

impl<S> tower_service::Service<axum::extract::Request> for Call<S>
where
    S: tower_service::Service<axum::extract::Request>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = tracing::instrument::Instrumented<S::Future>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: axum::extract::Request) -> Self::Future {
        use tracing::Instrument as _;
        let span = span_of(req.uri(), req.headers());
        if let Some(axum::extract::ConnectInfo(addr)) = req
            .extensions()
            .get::<axum::extract::ConnectInfo<SocketAddr>>()
            .copied()
        {
            req.extensions_mut()
                .insert(tonic::transport::server::TcpConnectInfo {
                    local_addr: None,
                    remote_addr: Some(addr),
                });
        }
        if let Some(limit) = self.body_timeout {
            req = req.map(|body| {
                axum::body::Body::new(TimedBody {
                    body,
                    deadline: Box::pin(tokio::time::sleep(limit)),
                    limit,
                })
            });
        }
        self.inner.call(req).instrument(span)
    }
}

/// A request body that fails when it is not complete within its limit (a stalled request
/// would otherwise keep its call, and so its connection, busy forever).
struct TimedBody {
    body: axum::body::Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
}

impl http_body::Body for TimedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, axum::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.body).poll_frame(cx) {
            std::task::Poll::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    let e = std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "the request message did not arrive within {:?} (body_read_timeout)",
                            this.limit
                        ),
                    );
                    return std::task::Poll::Ready(Some(Err(axum::Error::new(e))));
                }
                std::task::Poll::Pending
            }
            ready @ std::task::Poll::Ready(_) => ready,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
