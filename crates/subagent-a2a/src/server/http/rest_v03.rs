//! The HTTP+JSON binding of A2A **0.3**: the `/v1/…` routes of the 0.3 `a2a.proto`'s
//! `google.api.http` annotations (as the official 0.3 SDKs serve them), beside the 1.0 routes
//! at the same mount (which have no `/v1` prefix). Bodies are the 0.3 ProtoJSON shapes
//! ([`v03_rest`](crate::types::v03_rest)), converted to the 0.3 JSON-RPC types and run on the
//! same engine as every other binding; errors are `{"code", "message"}` with the 0.3 SDKs'
//! HTTP statuses.
//!
//! | route | call |
//! |---|---|
//! | `POST /v1/message:send` | `message/send` (`{"task"}` or `{"message"}`) |
//! | `POST /v1/message:stream` | `message/stream` (SSE of `StreamResponse`) |
//! | `GET /v1/tasks/{id}?historyLength=` | `tasks/get` |
//! | `POST /v1/tasks/{id}:cancel` | `tasks/cancel` |
//! | `GET` (or `POST`) `/v1/tasks/{id}:subscribe` | `tasks/resubscribe` (SSE) |
//! | `POST /v1/tasks/{id}/pushNotificationConfigs` | `tasks/pushNotificationConfig/set` |
//! | `GET /v1/tasks/{id}/pushNotificationConfigs` | `…/list` (`{"configs": […]}`) |
//! | `GET` / `DELETE /v1/tasks/{id}/pushNotificationConfigs/{cid}` | `…/get` / `…/delete` |
//! | `GET /v1/tasks` | the tasks (`{"tasks": […]}`) |
//! | `GET /v1/card` | the 0.3 card (the extended one for an authenticated caller, when offered) |

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::calls::send;
use super::jsonrpc::{v03_get_push, v03_push, v03_set_push};
use super::reply::{Wire, rest_v03_error, rpc_ok};
use super::request::json_syntax_error;
use super::rest::{Dialect, json_body, not_an_object, open};
use super::{AgentCtx, Hosted};
use crate::server::engine::ApiError;
use crate::types::{ProtocolVersion, json_error_message, v1, v03, v03_rest};

/// The 0.3 HTTP+JSON binding.
pub(super) struct V03;

impl Dialect for V03 {
    const WIRE: Wire = Wire::RestV03;

    fn other_version(v: ProtocolVersion) -> String {
        format!(
            "the `/v1/…` HTTP+JSON routes speak A2A 0.3, not {v} (1.0 is served without the `/v1` prefix)"
        )
    }

    fn history_length(parts: &Parts) -> Result<Option<i32>, ApiError> {
        let q = parts.uri.query().unwrap_or("");
        for (k, v) in form_urlencoded::parse(q.as_bytes()) {
            if k == "historyLength" || k == "history_length" {
                return v.parse().map(Some).map_err(|_| {
                    ApiError::invalid_params(format!(
                        "`historyLength` must be an integer, got `{v}`"
                    ))
                });
            }
        }
        Ok(None)
    }

    async fn message(ctx: AgentCtx, req: Request, streaming: bool) -> Response {
        message(ctx, req, streaming).await
    }

    async fn set_push_config(ctx: &AgentCtx, parts: &Parts, body: Body, task_id: &str) -> Response {
        let config: v03::TaskPushNotificationConfig = match body_as(
            ctx,
            parts,
            body,
            "CreateTaskPushNotificationConfigRequest",
            |v| v03_rest::create_push_config_from_proto(v, task_id),
        )
        .await
        {
            Ok(c) => c,
            Err(r) => return r,
        };
        v03_set_push(ctx.agent(), config)
            .await
            .map(|c| rpc_ok(&WIRE, &push_json(&c)))
            .unwrap_or_else(|e| rest_v03_error(&e))
    }

    fn push_configs_reply(configs: Vec<v1::TaskPushNotificationConfig>) -> Response {
        let configs: Vec<Value> = configs
            .into_iter()
            .map(|c| push_json(&v03_push(c)))
            .collect();
        rpc_ok(&WIRE, &serde_json::json!({ "configs": configs }))
    }

    async fn get_push_config(
        agent: &Hosted,
        task_id: &str,
        config_id: &str,
    ) -> Result<Response, ApiError> {
        v03_get_push(agent, task_id, Some(config_id))
            .await
            .map(|c| rpc_ok(&WIRE, &push_json(&c)))
    }
}

const WIRE: Wire = V03::WIRE;

/// Reads a JSON object body (0.3 ProtoJSON) and converts it with `convert` into `T`.
async fn body_as<T: DeserializeOwned>(
    ctx: &AgentCtx,
    parts: &Parts,
    body: Body,
    what: &str,
    convert: impl FnOnce(&Value) -> Result<Value, String>,
) -> Result<T, Response> {
    let bytes = json_body::<V03>(ctx, parts, body).await?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|e| rest_v03_error(&json_syntax_error(what, &e)))?;
    if !value.is_object() {
        return Err(rest_v03_error(&not_an_object(what)));
    }
    let converted = convert(&value).map_err(|m| {
        rest_v03_error(&ApiError::invalid_params(format!(
            "invalid {what} body: {m}"
        )))
    })?;
    serde_json::from_value(converted).map_err(|e| {
        rest_v03_error(&ApiError::invalid_params(format!(
            "invalid {what} body: {}",
            json_error_message(&e)
        )))
    })
}

/// The 0.3 `message:send` / `message:stream`.
async fn message(ctx: AgentCtx, req: Request, streaming: bool) -> Response {
    let (parts, body) = match open::<V03>(&ctx, req) {
        Ok(p) => p,
        Err(e) => return rest_v03_error(&e),
    };
    let params: v03::MessageSendParams = match body_as(
        &ctx,
        &parts,
        body,
        "SendMessageRequest",
        v03_rest::send_params_from_proto,
    )
    .await
    {
        Ok(p) => p,
        Err(r) => return r,
    };
    // ProtoJSON leaves out a `false` bool, so a configuration without `blocking` asks for a
    // non-blocking send (proto3's default, as the 0.3 SDKs read it: their client sends
    // `"configuration": {}` for `blocking=False`); a request without any configuration
    // follows `v03_blocking_by_default`, as on JSON-RPC.
    let blocking = match &params.configuration {
        Some(c) => c.blocking == Some(true),
        None => ctx.shared.cfg.v03_blocking_by_default,
    };
    let mut req: v1::SendMessageRequest = params.into();
    req.configuration
        .get_or_insert_with(Default::default)
        .return_immediately = !blocking;
    send(&ctx.shared, ctx.agent(), req, streaming, &WIRE)
        .await
        .unwrap_or_else(|e| rest_v03_error(&e))
}

fn push_json(c: &v03::TaskPushNotificationConfig) -> Value {
    v03_rest::push_config_to_proto(&serde_json::to_value(c).unwrap_or_default())
}

/// `GET {agent}/v1/tasks`: the agent's tasks (`{"tasks": [Task]}`, newest first, as 1.0's
/// `ListTasks` with its defaults).
pub(super) async fn list_tasks(State(ctx): State<AgentCtx>, req: Request) -> Response {
    let (parts, _) = match open::<V03>(&ctx, req) {
        Ok(p) => p,
        Err(e) => return rest_v03_error(&e),
    };
    let mut req = v1::ListTasksRequest::default();
    let q = parts.uri.query().unwrap_or("").to_string();
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        match &*k {
            "contextId" | "context_id" => req.context_id = Some(v.into_owned()),
            "pageSize" | "page_size" => req.page_size = v.parse().ok(),
            "pageToken" | "page_token" => req.page_token = Some(v.into_owned()),
            _ => {}
        }
    }
    match ctx.agent().engine.list(&req).await {
        Ok(list) => {
            let tasks: Vec<Value> = list
                .tasks
                .into_iter()
                .map(|t| {
                    v03_rest::task_to_proto(
                        &serde_json::to_value(v03::Task::from(t)).unwrap_or_default(),
                    )
                })
                .collect();
            let mut body = serde_json::json!({ "tasks": tasks });
            if !list.next_page_token.is_empty() {
                body["nextPageToken"] = Value::String(list.next_page_token);
            }
            rpc_ok(&WIRE, &body)
        }
        Err(e) => rest_v03_error(&e),
    }
}

/// `GET {agent}/v1/card` (behind the agent's credential check): the 0.3 card; for an agent
/// with an extended card (and credentials to guard it), the extended one.
pub(super) async fn card(State(ctx): State<AgentCtx>, req: Request) -> Response {
    let (parts, _) = match open::<V03>(&ctx, req) {
        Ok(p) => p,
        Err(e) => return rest_v03_error(&e),
    };
    let agent = ctx.agent();
    let card: v03::AgentCard = if agent.offers_extended_card() {
        // Signed in its 0.3 shape (when the server signs cards).
        match super::calls::extended_card_v03(&ctx.shared, agent, &parts.headers) {
            Ok(c) => c,
            Err(e) => return rest_v03_error(&e),
        }
    } else {
        let url = super::agent_url(&ctx.shared.cfg, agent, &parts.headers);
        crate::server::card::signed(
            ctx.shared.cfg.card_signer.as_ref(),
            crate::server::card::card_v03(crate::server::card::card_v1(
                &agent.info,
                agent.auth.as_ref(),
                &url,
                agent.engine.push_enabled(),
                false,
            )),
        )
    };
    rpc_ok(&WIRE, &card)
}
