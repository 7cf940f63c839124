//! The gRPC binding (1.0) of [`A2aClient`](super::A2aClient): `lf.a2a.v1.A2AService` over
//! tonic (HTTP/2 without TLS, `http://host:port`), the client's headers sent as metadata, the
//! 1.0 wire types converted to and from protobuf ([`crate::grpc`]), gRPC statuses turned into
//! [`A2aError::Rpc`] with the A2A error code (from the `ErrorInfo` reason when present).

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use futures::StreamExt;
use http::HeaderMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;

use super::endpoint::{EventStream, stream_idle_error};
use crate::error::A2aError;
use crate::grpc::proto::a2a_service_client::A2aServiceClient;
use crate::grpc::{convert, error_code, proto};
use crate::types::jsonrpc::RpcError;
use crate::types::v1;

/// One gRPC endpoint: its channel (connected on first use), the headers sent as metadata.
pub(crate) struct GrpcConn {
    url: String,
    headers: HeaderMap,
    channel: OnceLock<Channel>,
    max_message_bytes: usize,
}

impl GrpcConn {
    pub(crate) fn new(url: &str, headers: HeaderMap, max_message_bytes: usize) -> Self {
        Self {
            url: url.to_string(),
            headers,
            channel: OnceLock::new(),
            max_message_bytes,
        }
    }

    fn client(&self) -> Result<A2aServiceClient<Channel>, A2aError> {
        let channel = match self.channel.get() {
            Some(c) => c.clone(),
            None => {
                let url = if self.url.contains("://") {
                    self.url.clone()
                } else {
                    format!("http://{}", self.url)
                };
                if url.starts_with("https://") {
                    return Err(A2aError::Unsupported {
                        message: format!(
                            "gRPC over TLS at {} (this client speaks gRPC over plain HTTP/2 only; use the agent's JSON-RPC or HTTP+JSON interface)",
                            self.url
                        ),
                    });
                }
                let ep = tonic::transport::Endpoint::from_shared(url).map_err(|e| {
                    A2aError::Protocol {
                        url: self.url.clone(),
                        message: format!("invalid gRPC address: {e}"),
                    }
                })?;
                let c = ep
                    .connect_timeout(Duration::from_secs(10))
                    .http2_keep_alive_interval(Duration::from_secs(30))
                    .keep_alive_timeout(Duration::from_secs(10))
                    .connect_lazy();
                self.channel.get_or_init(|| c).clone()
            }
        };
        Ok(A2aServiceClient::new(channel)
            .max_decoding_message_size(self.max_message_bytes)
            .max_encoding_message_size(self.max_message_bytes))
    }

    fn request<T>(&self, msg: T) -> tonic::Request<T> {
        let mut headers = self.headers.clone();
        // The caller's trace (W3C `traceparent`, `tracestate`), as on the HTTP bindings.
        crate::trace_context::inject(&mut headers);
        let mut md = MetadataMap::from_headers(headers);
        // gRPC sets its own content type; A2A-Version goes as metadata.
        md.remove("content-type");
        md.remove("accept");
        md.insert(
            "a2a-version",
            tonic::metadata::MetadataValue::from_static("1.0"),
        );
        let mut r = tonic::Request::new(msg);
        *r.metadata_mut() = md;
        r
    }

    fn encode<A: Serialize, P: DeserializeOwned>(
        &self,
        what: &'static str,
        a: &A,
    ) -> Result<P, A2aError> {
        convert(what, a).map_err(|e| A2aError::Protocol {
            url: self.url.clone(),
            message: e.to_string(),
        })
    }

    fn decode<P: Serialize, A: DeserializeOwned>(
        &self,
        what: &'static str,
        p: &P,
    ) -> Result<A, A2aError> {
        convert(what, p).map_err(|e| A2aError::Decode {
            url: self.url.clone(),
            what: what.to_string(),
            message: e.to_string(),
            source: Some(e.source),
        })
    }

    fn error(&self, method: &str, s: tonic::Status) -> A2aError {
        A2aError::Rpc {
            method: method.to_string(),
            url: self.url.clone(),
            error: RpcError::new(
                error_code(&s),
                format!("{} (gRPC {:?})", s.message(), s.code()),
            ),
        }
    }

    /// One unary call: `call` on a fresh client with `p` and the request metadata; a failed
    /// status becomes an error naming `method`.
    async fn unary<P, Q, F>(
        &self,
        method: &'static str,
        p: P,
        call: impl FnOnce(A2aServiceClient<Channel>, tonic::Request<P>) -> F,
    ) -> Result<Q, A2aError>
    where
        F: Future<Output = Result<tonic::Response<Q>, tonic::Status>>,
    {
        let client = self.client()?;
        call(client, self.request(p))
            .await
            .map(tonic::Response::into_inner)
            .map_err(|s| self.error(method, s))
    }

    /// One server-streaming call: like [`unary`](Self::unary), and the answer's head must
    /// come within the stream idle limit too.
    async fn streaming<P, F>(
        &self,
        method: &'static str,
        p: P,
        idle: Option<Duration>,
        call: impl FnOnce(A2aServiceClient<Channel>, tonic::Request<P>) -> F,
    ) -> Result<EventStream, A2aError>
    where
        F: Future<
            Output = Result<
                tonic::Response<tonic::Streaming<proto::StreamResponse>>,
                tonic::Status,
            >,
        >,
    {
        let client = self.client()?;
        let call = call(client, self.request(p));
        let r = match idle {
            None => call.await,
            Some(limit) => tokio::time::timeout(limit, call)
                .await
                .map_err(|_| stream_idle_error(&self.url, limit))?,
        }
        .map_err(|s| self.error(method, s))?;
        Ok(self.events(method, r.into_inner(), idle))
    }

    pub(crate) async fn send_message(
        &self,
        req: &v1::SendMessageRequest,
    ) -> Result<v1::SendMessageResponse, A2aError> {
        let p: proto::SendMessageRequest = self.encode("SendMessageRequest", req)?;
        let r = self
            .unary("SendMessage", p, |mut c, r| async move {
                c.send_message(r).await
            })
            .await?;
        self.decode("SendMessageResponse", &r)
    }

    fn events(
        &self,
        method: &'static str,
        s: tonic::Streaming<proto::StreamResponse>,
        idle: Option<Duration>,
    ) -> EventStream {
        let url = self.url.clone();
        let conv_url = url.clone();
        let stream = futures::stream::unfold(Some(s), move |s| {
            let url = url.clone();
            async move {
                let mut s = s?;
                let next = match idle {
                    None => s.next().await,
                    Some(limit) => match tokio::time::timeout(limit, s.next()).await {
                        Ok(n) => n,
                        Err(_) => return Some((Err(stream_idle_error(&url, limit)), None)),
                    },
                };
                match next? {
                    Ok(ev) => Some((Ok(ev), Some(s))),
                    Err(status) => Some((
                        Err(A2aError::Rpc {
                            method: method.to_string(),
                            url: url.clone(),
                            error: RpcError::new(
                                error_code(&status),
                                format!("{} (gRPC {:?})", status.message(), status.code()),
                            ),
                        }),
                        None,
                    )),
                }
            }
        });
        Box::pin(stream.map(move |r| {
            r.and_then(|ev| {
                convert::<_, v1::StreamResponse>("StreamResponse", &ev).map_err(|e| {
                    A2aError::Decode {
                        url: conv_url.clone(),
                        what: "StreamResponse".into(),
                        message: e.to_string(),
                        source: Some(e.source),
                    }
                })
            })
        }))
    }

    pub(crate) async fn send_streaming_message(
        &self,
        req: &v1::SendMessageRequest,
        idle: Option<Duration>,
    ) -> Result<EventStream, A2aError> {
        let p: proto::SendMessageRequest = self.encode("SendMessageRequest", req)?;
        self.streaming("SendStreamingMessage", p, idle, |mut c, r| async move {
            c.send_streaming_message(r).await
        })
        .await
    }

    pub(crate) async fn subscribe_to_task(
        &self,
        req: &v1::SubscribeToTaskRequest,
        idle: Option<Duration>,
    ) -> Result<EventStream, A2aError> {
        let p: proto::SubscribeToTaskRequest = self.encode("SubscribeToTaskRequest", req)?;
        self.streaming("SubscribeToTask", p, idle, |mut c, r| async move {
            c.subscribe_to_task(r).await
        })
        .await
    }

    pub(crate) async fn get_task(&self, req: &v1::GetTaskRequest) -> Result<v1::Task, A2aError> {
        let p: proto::GetTaskRequest = self.encode("GetTaskRequest", req)?;
        let r = self
            .unary("GetTask", p, |mut c, r| async move { c.get_task(r).await })
            .await?;
        self.decode("Task", &r)
    }

    pub(crate) async fn list_tasks(
        &self,
        req: &v1::ListTasksRequest,
    ) -> Result<v1::ListTasksResponse, A2aError> {
        let p: proto::ListTasksRequest = self.encode("ListTasksRequest", req)?;
        let r = self
            .unary(
                "ListTasks",
                p,
                |mut c, r| async move { c.list_tasks(r).await },
            )
            .await?;
        self.decode("ListTasksResponse", &r)
    }

    pub(crate) async fn cancel_task(
        &self,
        req: &v1::CancelTaskRequest,
    ) -> Result<v1::Task, A2aError> {
        let p: proto::CancelTaskRequest = self.encode("CancelTaskRequest", req)?;
        let r = self
            .unary(
                "CancelTask",
                p,
                |mut c, r| async move { c.cancel_task(r).await },
            )
            .await?;
        self.decode("Task", &r)
    }

    pub(crate) async fn create_push_config(
        &self,
        req: &v1::TaskPushNotificationConfig,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let p: proto::TaskPushNotificationConfig =
            self.encode("TaskPushNotificationConfig", req)?;
        let r = self
            .unary(
                "CreateTaskPushNotificationConfig",
                p,
                |mut c, r| async move { c.create_task_push_notification_config(r).await },
            )
            .await?;
        self.decode("TaskPushNotificationConfig", &r)
    }

    pub(crate) async fn get_push_config(
        &self,
        tenant: Option<&str>,
        task_id: &str,
        id: &str,
    ) -> Result<v1::TaskPushNotificationConfig, A2aError> {
        let p = proto::GetTaskPushNotificationConfigRequest {
            tenant: tenant.unwrap_or_default().to_string(),
            task_id: task_id.to_string(),
            id: id.to_string(),
        };
        let r = self
            .unary("GetTaskPushNotificationConfig", p, |mut c, r| async move {
                c.get_task_push_notification_config(r).await
            })
            .await?;
        self.decode("TaskPushNotificationConfig", &r)
    }

    pub(crate) async fn list_push_configs(
        &self,
        tenant: Option<&str>,
        task_id: &str,
    ) -> Result<Vec<v1::TaskPushNotificationConfig>, A2aError> {
        let p = proto::ListTaskPushNotificationConfigsRequest {
            tenant: tenant.unwrap_or_default().to_string(),
            task_id: task_id.to_string(),
            page_size: 0,
            page_token: String::new(),
        };
        let r = self
            .unary(
                "ListTaskPushNotificationConfigs",
                p,
                |mut c, r| async move { c.list_task_push_notification_configs(r).await },
            )
            .await?;
        let list: v1::ListTaskPushNotificationConfigsResponse =
            self.decode("ListTaskPushNotificationConfigsResponse", &r)?;
        Ok(list.configs)
    }

    pub(crate) async fn delete_push_config(
        &self,
        tenant: Option<&str>,
        task_id: &str,
        id: &str,
    ) -> Result<(), A2aError> {
        let p = proto::DeleteTaskPushNotificationConfigRequest {
            tenant: tenant.unwrap_or_default().to_string(),
            task_id: task_id.to_string(),
            id: id.to_string(),
        };
        self.unary(
            "DeleteTaskPushNotificationConfig",
            p,
            |mut c, r| async move { c.delete_task_push_notification_config(r).await },
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn get_extended_agent_card(
        &self,
        tenant: Option<&str>,
    ) -> Result<v1::AgentCard, A2aError> {
        let p = proto::GetExtendedAgentCardRequest {
            tenant: tenant.unwrap_or_default().to_string(),
        };
        let r = self
            .unary("GetExtendedAgentCard", p, |mut c, r| async move {
                c.get_extended_agent_card(r).await
            })
            .await?;
        self.decode("AgentCard", &r)
    }
}
