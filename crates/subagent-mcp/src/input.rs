//! Questions an MCP server asks while one of our calls runs: SEP-2322 `input_required` results
//! (and `input_required` tasks) on the 2026-07-28 revision, `elicitation/create` requests from
//! servers of the 2025-11-25 era. Each question becomes an [`ApprovalRequest`] that travels up
//! the delegation tree like any other approval (the root's prompt, `--yes`, TaskOutput
//! `approve`, an A2A client's `input-required`), and the answer goes back to the server as an
//! elicitation result.
//!
//! The approval channel answers yes / always / no, so a form is accepted only when every field
//! it requires can be filled from a "yes": a boolean (`true`), a choice with a yes-like option
//! (`yes`, `allow`, `approve`, `accept`, `ok`, `confirm`, `true`; `always` for an "always"
//! answer) or only one option, or a field with a `default`. A form asking for anything else
//! (free text, a number) is declined without asking anybody. A URL-mode request is shown to the
//! person with its URL (the root's prompt escapes it) and only a person may accept it: a
//! standing `--yes` cannot follow a link.

use std::sync::Arc;

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests,
    InputResponses,
};
use serde_json::{Map, Value, json};
use subagent_spi::{ApprovalDecision, ApprovalRequest, Approver, CancellationToken, TaskContext};

/// At most this many questions in one `input_required` result or task state.
pub(crate) const MAX_INPUT_REQUESTS: usize = 8;
/// At most this many `input_required` rounds (retries of one call, or answers to one task).
pub(crate) const MAX_INPUT_ROUNDS: usize = 8;
/// A question's text is cut to this many characters before it is shown.
const MAX_MESSAGE_CHARS: usize = 2_000;
/// A URL-mode request whose URL is longer than this is declined without asking.
const MAX_URL_CHARS: usize = 2_048;
/// A form with more fields than this is declined without asking.
const MAX_FORM_FIELDS: usize = 32;

/// The approval request's `tool` for a server's question (rendered by the root's prompt as
/// "AGENT asks: QUESTION", as for a remote A2A agent's question).
const QUESTION_TOOL: &str = "input-required";

/// Who answers one call's questions: the approver of the task context that runs the call.
pub(crate) struct Asker {
    approver: Option<Arc<dyn Approver>>,
    path: Vec<String>,
    task_id: Option<String>,
    agent: String,
    server: String,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asker")
            .field("agent", &self.agent)
            .field("server", &self.server)
            .field("approver", &self.approver.is_some())
            .finish_non_exhaustive()
    }
}

/// Why a server's questions could not be answered (the call fails with this text).
#[derive(Debug)]
pub(crate) struct Unanswerable(pub String);

impl Asker {
    /// The asker for a call of `agent` (on `server`) run in `ctx`.
    pub(crate) fn new(ctx: &TaskContext, agent: &str, server: &str) -> Self {
        let mut path = ctx.agent_path();
        if path.last().map(String::as_str) != Some(agent) {
            path.push(agent.to_string());
        }
        Self {
            approver: ctx.approver().cloned(),
            path,
            task_id: ctx.task_id().map(str::to_string),
            agent: agent.to_string(),
            server: server.to_string(),
            cancel: ctx.cancel().clone(),
        }
    }

    /// Answers every request of one `input_required` round, one question at a time.
    pub(crate) async fn answer_all(
        &self,
        requests: InputRequests,
    ) -> Result<InputResponses, Unanswerable> {
        if requests.len() > MAX_INPUT_REQUESTS {
            return Err(Unanswerable(format!(
                "the server asked {} questions at once (at most {MAX_INPUT_REQUESTS} are answered)",
                requests.len()
            )));
        }
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let value = match request {
                InputRequest::Elicitation(r) => to_value(self.elicit(&r.params).await),
                // We declare no roots: an empty list.
                InputRequest::ListRoots(_) => json!({"roots": []}),
                InputRequest::CreateMessage(_) => {
                    return Err(Unanswerable(
                        "the server asked for sampling (`sampling/createMessage`), which subagents \
                         does not offer"
                            .to_string(),
                    ));
                }
                _ => {
                    return Err(Unanswerable(format!(
                        "the server sent input request `{key}` of a kind subagents does not know"
                    )));
                }
            };
            responses.insert(key, value);
        }
        Ok(responses)
    }

    /// Answers one elicitation: asks the approver (unless the form cannot be filled from a
    /// yes), and builds the result.
    pub(crate) async fn elicit(&self, params: &ElicitRequestParams) -> ElicitResult {
        let decline = ElicitResult::new(ElicitationAction::Decline);
        let Some(approver) = &self.approver else {
            return decline;
        };
        let (request, form) = match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
                let Some(form) = Form::read(&schema) else {
                    tracing::info!(
                        server = %self.server,
                        "declined an MCP form that cannot be filled from a yes/no answer"
                    );
                    return decline;
                };
                let summary = clip(message);
                let rule = format!("mcp:{}:{}:{summary}", self.server, self.agent);
                let request = self.request(summary, "asked").with_session_rule(rule);
                (request, Some(form))
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                if url.chars().count() > MAX_URL_CHARS || url.chars().any(char::is_control) {
                    return decline;
                }
                let summary = format!("{} (open {url})", clip(message));
                (
                    self.request(summary, "asks you to open a URL")
                        .person_only(),
                    None,
                )
            }
            _ => return decline,
        };
        let decision = tokio::select! {
            d = approver.request(request) => d,
            () = self.cancel.cancelled() => return ElicitResult::new(ElicitationAction::Cancel),
        };
        match (decision, form) {
            (ApprovalDecision::Deny { .. }, _) => decline,
            (_, None) => ElicitResult::new(ElicitationAction::Accept),
            (d, Some(form)) => ElicitResult::new(ElicitationAction::Accept).with_content(
                Value::Object(form.fill(d == ApprovalDecision::AllowSession)),
            ),
        }
    }

    fn request(&self, summary: String, verb: &str) -> ApprovalRequest {
        let reason = format!(
            "the MCP server {} {verb} through agent `{}`; the answer continues its call",
            self.server, self.agent
        );
        let mut r = ApprovalRequest::new(self.path.clone(), QUESTION_TOOL, summary, reason);
        if let Some(id) = &self.task_id {
            r = r.with_task_id(id.clone());
        }
        r
    }
}

fn to_value(result: ElicitResult) -> Value {
    serde_json::to_value(result).unwrap_or_else(|_| json!({"action": "decline"}))
}

/// The question's text on one line, at most [`MAX_MESSAGE_CHARS`] characters.
fn clip(message: &str) -> String {
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= MAX_MESSAGE_CHARS {
        one_line
    } else {
        let mut s: String = one_line.chars().take(MAX_MESSAGE_CHARS).collect();
        s.push('…');
        s
    }
}

/// A form whose required fields can all be filled from a yes.
struct Form {
    /// Per field: the value for "yes", and for "always".
    fields: Vec<(String, Value, Value)>,
}

const YES_WORDS: [&str; 8] = [
    "yes", "y", "allow", "approve", "accept", "ok", "confirm", "true",
];

impl Form {
    /// Reads a requested schema; `None` when a required field cannot be filled.
    fn read(schema: &Value) -> Option<Form> {
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if props.len() > MAX_FORM_FIELDS {
            return None;
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::new();
        for (name, prop) in &props {
            match Self::yes_values(prop) {
                Some((once, always)) => fields.push((name.clone(), once, always)),
                None if required.contains(&name.as_str()) => return None,
                None => {}
            }
        }
        Some(Form { fields })
    }

    /// The values a field takes for "yes" and "always".
    fn yes_values(prop: &Value) -> Option<(Value, Value)> {
        if let Some(d) = prop.get("default") {
            return Some((d.clone(), d.clone()));
        }
        let options: Vec<String> = if let Some(e) = prop.get("enum").and_then(Value::as_array) {
            e.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        } else if let Some(o) = prop
            .get("oneOf")
            .or_else(|| prop.get("anyOf"))
            .and_then(Value::as_array)
        {
            o.iter()
                .filter_map(|v| v.get("const").and_then(Value::as_str).map(str::to_string))
                .collect()
        } else {
            Vec::new()
        };
        if !options.is_empty() {
            let find = |words: &[&str]| {
                options
                    .iter()
                    .find(|o| words.contains(&o.to_ascii_lowercase().as_str()))
                    .cloned()
            };
            let once =
                find(&YES_WORDS).or_else(|| (options.len() == 1).then(|| options[0].clone()))?;
            let always = find(&["always"]).unwrap_or_else(|| once.clone());
            return Some((Value::String(once), Value::String(always)));
        }
        (prop.get("type").and_then(Value::as_str) == Some("boolean"))
            .then_some((Value::Bool(true), Value::Bool(true)))
    }

    fn fill(&self, always: bool) -> Map<String, Value> {
        self.fields
            .iter()
            .map(|(name, once, alw)| (name.clone(), if always { alw } else { once }.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_fill_from_a_yes_or_are_refused() {
        let approval = json!({"type": "object", "properties": {
            "decision": {"type": "string", "enum": ["yes", "always", "no"]},
            "reason": {"type": "string"}}, "required": ["decision"]});
        let f = Form::read(&approval).unwrap();
        assert_eq!(Value::Object(f.fill(false)), json!({"decision": "yes"}));
        assert_eq!(Value::Object(f.fill(true)), json!({"decision": "always"}));

        let confirm = json!({"type": "object", "properties": {
            "confirm": {"type": "boolean"}, "n": {"type": "number", "default": 3}},
            "required": ["confirm"]});
        let f = Form::read(&confirm).unwrap();
        assert_eq!(
            Value::Object(f.fill(false)),
            json!({"confirm": true, "n": 3})
        );

        let free_text = json!({"type": "object", "properties": {
            "name": {"type": "string"}}, "required": ["name"]});
        assert!(Form::read(&free_text).is_none());
        let no_yes = json!({"type": "object", "properties": {
            "color": {"type": "string", "enum": ["red", "blue"]}}, "required": ["color"]});
        assert!(Form::read(&no_yes).is_none());
    }

    struct Yes(std::sync::Mutex<usize>);

    #[subagent_spi::async_trait]
    impl Approver for Yes {
        async fn request(&self, _: ApprovalRequest) -> ApprovalDecision {
            *self.0.lock().unwrap() += 1;
            ApprovalDecision::AllowOnce
        }
    }

    #[tokio::test]
    async fn urls_with_control_characters_or_too_long_are_declined_unasked() {
        let yes = Arc::new(Yes(std::sync::Mutex::new(0)));
        let ctx = TaskContext::new().with_approver(yes.clone() as Arc<dyn Approver>);
        let asker = Asker::new(&ctx, "agent", "stdio:srv");
        let url = |url: String| ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: "Sign in".into(),
            url,
            elicitation_id: String::new(),
        };
        for bad in [
            "https://e.com/\u{1b}]8;;https://evil/\u{7}".to_string(),
            format!("https://e.com/{}", "a".repeat(MAX_URL_CHARS)),
        ] {
            let r = asker.elicit(&url(bad)).await;
            assert_eq!(r.action, ElicitationAction::Decline);
        }
        assert_eq!(*yes.0.lock().unwrap(), 0);
        let r = asker.elicit(&url("https://e.com/ok".into())).await;
        assert_eq!(r.action, ElicitationAction::Accept);
        assert_eq!(*yes.0.lock().unwrap(), 1);
    }

    #[test]
    fn messages_are_clipped_to_one_line() {
        assert_eq!(clip("a\n\nb\tc"), "a b c");
        assert_eq!(
            clip(&"x".repeat(5_000)).chars().count(),
            MAX_MESSAGE_CHARS + 1
        );
    }
}
