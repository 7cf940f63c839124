//! The approval question of a served tool call as an MCP elicitation form, and the decision
//! read back from the client's answer: one form for every way the client is asked (an
//! `elicitation/create` request to an older client, an `input_required` result's
//! `inputRequests` to a 2026-07-28 client, and a task's `input_required` state).

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    EnumSchema, InputRequest,
};
use std::sync::Arc;

use subagent_core::ApprovalText;
use subagent_spi::{ApprovalDecision, ApprovalRequest, Approver};

/// The host's own approver (`upstream`, e.g. `--yes`) when it can answer `request`: it
/// answers before the client is asked, whichever way the client would be.
pub(crate) fn upstream_answering<'a>(
    upstream: &'a Option<Arc<dyn Approver>>,
    request: &ApprovalRequest,
) -> Option<&'a Arc<dyn Approver>> {
    upstream.as_ref().filter(|up| up.can_answer(request))
}

/// The form's schema: a required `decision` (`yes` / `always` / `no`) and an optional `reason`.
pub(crate) fn schema() -> Option<ElicitationSchema> {
    let choices = EnumSchema::builder(vec!["yes".into(), "always".into(), "no".into()])
        .enum_titles(vec![
            "Yes, this once".into(),
            "Always (for the rest of this call)".into(),
            "No".into(),
        ])
        .ok()?
        .build();
    ElicitationSchema::builder()
        .required_enum_schema("decision", choices)
        .optional_string("reason")
        .build()
        .ok()
}

/// The question shown to the client's user.
pub(crate) fn message(request: &ApprovalRequest) -> String {
    format!(
        "{} wants to run {}: {}\nWhy: {}\nAllow it? yes (once), always{} or no.",
        request.path_text(),
        request.tool,
        request.summary,
        request.reason,
        request
            .session_rule
            .as_deref()
            .map(|r| format!(" ({r}, for the rest of this call)"))
            .unwrap_or_default(),
    )
}

/// The form elicitation asking `request`, or `None` when the form cannot be built.
pub(crate) fn params(request: &ApprovalRequest) -> Option<ElicitRequestParams> {
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(request),
        requested_schema: schema()?,
    })
}

/// The form as an entry of an `inputRequests` map (SEP-2322), or `None` when it cannot be
/// built.
pub(crate) fn input_request(request: &ApprovalRequest) -> Option<InputRequest> {
    Some(InputRequest::Elicitation(ElicitRequest::new(params(
        request,
    )?)))
}

/// The decision in the client's answer to the form.
pub(crate) fn decision(answer: &ElicitResult) -> ApprovalDecision {
    match answer.action {
        ElicitationAction::Accept => {
            let empty = serde_json::Value::Null;
            let content = answer.content.as_ref().unwrap_or(&empty);
            let decision = content["decision"].as_str().unwrap_or("");
            let reason = content["reason"].as_str().unwrap_or("").trim();
            match ApprovalDecision::from_reply(decision) {
                Some(ApprovalDecision::Deny { .. }) | None => {
                    ApprovalDecision::deny(if reason.is_empty() {
                        "the user said no."
                    } else {
                        reason
                    })
                }
                Some(d) => d,
            }
        }
        ElicitationAction::Decline => ApprovalDecision::deny("the user declined."),
        _ => ApprovalDecision::deny("the user dismissed the question."),
    }
}

/// The decision in an `inputResponses` entry (an elicitation result as JSON); an answer that
/// is not one denies, naming what was wrong.
pub(crate) fn decision_of_value(value: serde_json::Value) -> ApprovalDecision {
    match serde_json::from_value::<ElicitResult>(value) {
        Ok(answer) => decision(&answer),
        Err(e) => ApprovalDecision::deny(format!(
            "the client's answer was not an elicitation result ({e})."
        )),
    }
}
