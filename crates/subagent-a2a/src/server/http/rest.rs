//! The HTTP+JSON binding (1.0): `message:send` / `message:stream`, `tasks`, `tasks/{id}` (with
//! `:cancel` / `:subscribe`), push configs and the extended card, each an axum route of the
//! agent; bodies are ProtoJSON, errors AIP-193. The routes the 0.3 binding
//! ([`rest_v03`](super::rest_v03)) serves alike are generic over a [`Dialect`].

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::response::Response;
use http::Method;
use http::request::Parts;
use serde::de::DeserializeOwned;

use super::calls::{
    self, create_push_config, delete_push_config, get_push_config, list_push_configs, send,
    subscribe,
};
use super::reply::{Wire, error_for, rest_error, rpc_ok, task_reply};
use super::request::{
    check_extensions, content_type_error, first_byte, json_content_type, json_syntax_error,
    parse_body, read_body, requested_version,
};
use super::{AgentCtx, Hosted};
use crate::server::engine::ApiError;
use crate::types::jsonrpc::codes;
use crate::types::{ProtocolVersion, v1};

/// What the HTTP+JSON bindings of 1.0 (`/…`) and 0.3 (`/v1/…`) do differently in the routes
/// they share: how answers are written, the version they speak, the query of `GetTask` and
/// how one push config is read.
pub(super) trait Dialect: Send + Sync + 'static {
    /// How answers and errors are written (its version is the one this dialect speaks).
    const WIRE: Wire;

    /// The message of the error for a request that asks for `v`, another version.
    fn other_version(v: ProtocolVersion) -> String;

    /// The `historyLength` of a `GetTask` query string.
    fn history_length(parts: &Parts) -> Result<Option<i32>, ApiError>;

    /// `POST …/message:send` (`streaming`: `…/message:stream`): the request read in this
    /// dialect's shape and sent.
    fn message(
        ctx: AgentCtx,
        req: Request,
        streaming: bool,
    ) -> impl Future<Output = Response> + Send;

    /// `POST …/tasks/{id}/pushNotificationConfigs`: the config in `body`, read in this
    /// dialect's shape, set on the task; the answer (the config as stored, or the error).
    fn set_push_config(
        ctx: &AgentCtx,
        parts: &Parts,
        body: Body,
        task_id: &str,
    ) -> impl Future<Output = Response> + Send;

    /// `GET …/tasks/{id}/pushNotificationConfigs`: the answer listing `configs`.
    fn push_configs_reply(configs: Vec<v1::TaskPushNotificationConfig>) -> Response;

    /// `GET …/pushNotificationConfigs/{config}`: the config, written as this dialect writes it.
    fn get_push_config(
        agent: &Hosted,
        task_id: &str,
        config_id: &str,
    ) -> impl Future<Output = Result<Response, ApiError>> + Send;
}

/// The 1.0 HTTP+JSON binding.
pub(super) struct V1;

impl Dialect for V1 {
    const WIRE: Wire = Wire::Rest;

    fn other_version(v: ProtocolVersion) -> String {
        format!("the HTTP+JSON binding of this server speaks A2A 1.0, not {v}")
    }

    fn history_length(parts: &Parts) -> Result<Option<i32>, ApiError> {
        let mut hl = None;
        let mut bad = None;
        for (k, v) in query_pairs(parts) {
            if k == "historyLength" {
                match int_param(&k, &v) {
                    Ok(n) => hl = Some(n),
                    Err(e) => bad = Some(e),
                }
            }
        }
        bad.map_or(Ok(hl), Err)
    }

    async fn message(ctx: AgentCtx, req: Request, streaming: bool) -> Response {
        let (parts, body) = match open::<Self>(&ctx, req) {
            Ok(p) => p,
            Err(e) => return rest_error(&e),
        };
        let req: v1::SendMessageRequest =
            match rest_body(&ctx, &parts, body, "SendMessageRequest").await {
                Ok(r) => r,
                Err(resp) => return resp,
            };
        send(&ctx.shared, ctx.agent(), req, streaming, &Self::WIRE)
            .await
            .unwrap_or_else(|e| rest_error(&e))
    }

    async fn set_push_config(ctx: &AgentCtx, parts: &Parts, body: Body, task_id: &str) -> Response {
        let config: v1::TaskPushNotificationConfig =
            match rest_body(ctx, parts, body, "TaskPushNotificationConfig").await {
                Ok(c) => c,
                Err(r) => return r,
            };
        create_push_config(ctx.agent(), task_id, config)
            .await
            .map(|c| rpc_ok(&Self::WIRE, &c))
            .unwrap_or_else(|e| rest_error(&e))
    }

    fn push_configs_reply(configs: Vec<v1::TaskPushNotificationConfig>) -> Response {
        let list = v1::ListTaskPushNotificationConfigsResponse {
            configs,
            next_page_token: None,
        };
        rpc_ok(&Self::WIRE, &list)
    }

    async fn get_push_config(
        agent: &Hosted,
        task_id: &str,
        config_id: &str,
    ) -> Result<Response, ApiError> {
        get_push_config(agent, task_id, config_id)
            .await
            .map(|c| rpc_ok(&Self::WIRE, &c))
    }
}

/// Splits the request and runs the checks every HTTP+JSON request passes first: the version
/// (the dialect's, or none) and the agent's required extensions.
pub(super) fn open<D: Dialect>(ctx: &AgentCtx, req: Request) -> Result<(Parts, Body), ApiError> {
    let (parts, body) = req.into_parts();
    match requested_version(&parts)? {
        Some(v) if v != D::WIRE.version() => {
            return Err(ApiError::new(
                codes::VERSION_NOT_SUPPORTED,
                D::other_version(v),
            ));
        }
        _ => check_extensions(ctx.agent(), &parts.headers)?,
    }
    Ok((parts, body))
}

/// Reads an HTTP+JSON body (bounded, in time too) that declares JSON, or the error answer.
pub(super) async fn json_body<D: Dialect>(
    ctx: &AgentCtx,
    parts: &Parts,
    body: Body,
) -> Result<bytes::Bytes, Response> {
    let bytes = read_body(&ctx.shared.cfg, &parts.headers, body)
        .await
        .map_err(|e| e.rest())?;
    if !json_content_type(&parts.headers) {
        return Err(error_for(&D::WIRE, &content_type_error(&parts.headers)));
    }
    Ok(bytes)
}

/// `POST {agent}/message:send` (0.3: `{agent}/v1/message:send`).
pub(super) async fn message_send<D: Dialect>(
    State(ctx): State<AgentCtx>,
    req: Request,
) -> Response {
    D::message(ctx, req, false).await
}

/// `POST {agent}/message:stream` (0.3: `{agent}/v1/message:stream`).
pub(super) async fn message_stream<D: Dialect>(
    State(ctx): State<AgentCtx>,
    req: Request,
) -> Response {
    D::message(ctx, req, true).await
}

/// The decoded pairs of a query string (`form_urlencoded`: `+` is a space, `%XX` a byte).
pub(super) fn query_pairs(parts: &Parts) -> impl Iterator<Item = (String, String)> + '_ {
    form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
}

fn int_param(name: &str, v: &str) -> Result<i32, ApiError> {
    v.parse()
        .map_err(|_| ApiError::invalid_params(format!("`{name}` must be an integer, got `{v}`")))
}

fn state_param(v: &str) -> Result<v1::TaskState, ApiError> {
    if let Some(s) = v1::TaskState::from_name(v) {
        return Ok(s);
    }
    let upper = format!("TASK_STATE_{}", v.replace('-', "_").to_ascii_uppercase());
    v1::TaskState::from_name(&upper)
        .ok_or_else(|| ApiError::invalid_params(format!("unknown task state `{v}`")))
}

/// `GET {agent}/tasks`: `ListTasks`, its request in the query string.
pub(super) async fn list_tasks(State(ctx): State<AgentCtx>, req: Request) -> Response {
    let (parts, _) = match open::<V1>(&ctx, req) {
        Ok(p) => p,
        Err(e) => return rest_error(&e),
    };
    let list = async {
        let mut req = v1::ListTasksRequest::default();
        for (k, v) in query_pairs(&parts) {
            match k.as_str() {
                "contextId" => req.context_id = Some(v),
                "status" => req.status = Some(state_param(&v)?),
                "pageSize" => req.page_size = Some(int_param(&k, &v)?),
                "pageToken" => req.page_token = Some(v),
                "historyLength" => req.history_length = Some(int_param(&k, &v)?),
                "statusTimestampAfter" => req.status_timestamp_after = Some(v),
                "includeArtifacts" => {
                    req.include_artifacts = Some(match v.as_str() {
                        "true" | "1" => true,
                        "false" | "0" => false,
                        _ => {
                            return Err(ApiError::invalid_params(format!(
                                "`includeArtifacts` must be true or false, got `{v}`"
                            )));
                        }
                    })
                }
                _ => {}
            }
        }
        Ok(rpc_ok(&Wire::Rest, &ctx.agent().engine.list(&req).await?))
    };
    list.await.unwrap_or_else(|e| rest_error(&e))
}

/// The task id of a `tasks/{id}` route (decoded by axum's `Path`), or the error answer.
fn task_id(path: Result<Path<String>, PathRejection>, parts: &Parts) -> Result<String, ApiError> {
    match path {
        Ok(Path(id)) if !id.is_empty() => Ok(id),
        _ => Err(no_route(parts)),
    }
}

/// Opens a request to a route under `tasks/{id}` for `D` ([`open`]): its parts, body and the
/// `{id}` segment (not empty).
fn open_task<D: Dialect>(
    ctx: &AgentCtx,
    req: Request,
    path: Result<Path<String>, PathRejection>,
) -> Result<(Parts, Body, String), ApiError> {
    let (parts, body) = open::<D>(ctx, req)?;
    let segment = task_id(path, &parts)?;
    Ok((parts, body, segment))
}

/// The error for a method or path no route serves.
pub(super) fn no_route(parts: &Parts) -> ApiError {
    ApiError::new(
        codes::METHOD_NOT_FOUND,
        format!("no route for {} `{}`", parts.method, parts.uri.path()),
    )
}

/// `{agent}/tasks/{id}` (0.3: `{agent}/v1/tasks/{id}`): `GET` is `GetTask`, `POST …:cancel`
/// is `CancelTask`, `GET`/`POST …:subscribe` is `SubscribeToTask` (0.3: `tasks/get`,
/// `tasks/cancel`, `tasks/resubscribe`; a cancel's body is not needed).
pub(super) async fn task<D: Dialect>(
    State(ctx): State<AgentCtx>,
    path: Result<Path<String>, PathRejection>,
    req: Request,
) -> Response {
    let wire = D::WIRE;
    let (parts, _, segment) = match open_task::<D>(&ctx, req, path) {
        Ok(p) => p,
        Err(e) => return error_for(&wire, &e),
    };
    let (id, action) = match segment.rsplit_once(':') {
        Some((id, a @ ("cancel" | "subscribe"))) => (id, Some(a)),
        _ => (segment.as_str(), None),
    };
    if id.is_empty() {
        return error_for(&wire, &no_route(&parts));
    }
    let agent = ctx.agent();
    let answer = match (&parts.method, action) {
        (&Method::GET, None) => match D::history_length(&parts) {
            Ok(hl) => agent.engine.get(id, hl).await.map(|t| task_reply(&wire, t)),
            Err(e) => Err(e),
        },
        (&Method::POST, Some("cancel")) => {
            agent.engine.cancel(id).await.map(|t| task_reply(&wire, t))
        }
        (&Method::POST | &Method::GET, Some("subscribe")) => {
            subscribe(&ctx.shared, agent, id, &wire).await
        }
        _ => Err(no_route(&parts)),
    };
    answer.unwrap_or_else(|e| error_for(&wire, &e))
}

/// `{agent}/tasks/{id}/pushNotificationConfigs` (0.3: under `{agent}/v1`): `POST` sets a
/// config (the body is the config; 0.3: the proto `CreateTaskPushNotificationConfigRequest`, or
/// the bare config), `GET` lists them.
pub(super) async fn push_configs<D: Dialect>(
    State(ctx): State<AgentCtx>,
    path: Result<Path<String>, PathRejection>,
    req: Request,
) -> Response {
    let (parts, body, task_id) = match open_task::<D>(&ctx, req, path) {
        Ok(p) => p,
        Err(e) => return error_for(&D::WIRE, &e),
    };
    let answer = match parts.method {
        Method::POST => return D::set_push_config(&ctx, &parts, body, &task_id).await,
        Method::GET => list_push_configs(ctx.agent(), &task_id)
            .await
            .map(D::push_configs_reply),
        _ => Err(no_route(&parts)),
    };
    answer.unwrap_or_else(|e| error_for(&D::WIRE, &e))
}

/// `{agent}/tasks/{id}/pushNotificationConfigs/{config}` (0.3: under `{agent}/v1`): `GET`
/// reads it, `DELETE` deletes it.
pub(super) async fn push_config<D: Dialect>(
    State(ctx): State<AgentCtx>,
    path: Result<Path<(String, String)>, PathRejection>,
    req: Request,
) -> Response {
    let (parts, _) = match open::<D>(&ctx, req) {
        Ok(p) => p,
        Err(e) => return error_for(&D::WIRE, &e),
    };
    let Ok(Path((task_id, config_id))) = path else {
        return error_for(&D::WIRE, &no_route(&parts));
    };
    let agent = ctx.agent();
    let answer = match parts.method {
        Method::GET => D::get_push_config(agent, &task_id, &config_id).await,
        Method::DELETE => delete_push_config(agent, &task_id, &config_id)
            .await
            .map(|()| rpc_ok(&D::WIRE, &serde_json::json!({}))),
        _ => Err(no_route(&parts)),
    };
    answer.unwrap_or_else(|e| error_for(&D::WIRE, &e))
}

/// `GET {agent}/extendedAgentCard` (behind the agent's credential check).
pub(super) async fn extended_card(State(ctx): State<AgentCtx>, req: Request) -> Response {
    let (parts, _) = match open::<V1>(&ctx, req) {
        Ok(p) => p,
        Err(e) => return rest_error(&e),
    };
    match calls::extended_card(&ctx.shared, ctx.agent(), &parts.headers) {
        Ok(c) => rpc_ok(&Wire::Rest, &c),
        Err(e) => rest_error(&e),
    }
}

/// Any method a route does not serve, and any path no route serves.
pub(super) async fn unrouted(req: Request) -> Response {
    let (parts, _) = req.into_parts();
    rest_error(&no_route(&parts))
}

/// Reads and parses an HTTP+JSON body (a JSON object), or the error answer.
async fn rest_body<T: DeserializeOwned>(
    ctx: &AgentCtx,
    parts: &Parts,
    body: Body,
    what: &str,
) -> Result<T, Response> {
    let bytes = json_body::<V1>(ctx, parts, body).await?;
    // ProtoJSON bodies are objects; serde would also read a positional array as a struct.
    if first_byte(&bytes) != Some(b'{') {
        let e = match serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            Err(syntax) => json_syntax_error(what, &syntax),
            Ok(_) => not_an_object(what),
        };
        return Err(rest_error(&e));
    }
    parse_body(&bytes, what).map_err(|e| rest_error(&e))
}

/// The error for a body that is JSON but not an object.
pub(super) fn not_an_object(what: &str) -> ApiError {
    ApiError::invalid_params(format!("the {what} body must be a JSON object"))
}
