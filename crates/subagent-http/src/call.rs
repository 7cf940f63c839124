//! One task = one HTTP call: the request, the bounded read of the reply, the answer.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use reqwest::{StatusCode, header};
use subagent_spi::{
    CancellationToken, SubagentDefinition, SubagentError, TaskCall, TaskContext, TaskOutcome,
    TaskStatus, Usage,
};

use crate::{HttpAgent, HttpKindError, MAX_REDIRECTS};

/// How much of a failed reply (non-2xx) is quoted in the error.
const ERROR_QUOTE_BYTES: usize = 300;

/// The kind's client: redirects are followed only within the first URL's origin (scheme,
/// host, port), so a credential header is never sent elsewhere; at most [`MAX_REDIRECTS`].
pub(crate) fn client() -> Result<reqwest::Client, HttpKindError> {
    let same_origin = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .redirect(same_origin)
        .build()
        .map_err(HttpKindError::Client)
}

/// Runs one task: sends the prompt, reads the reply within the agent's limits, returns the
/// answer. Cancelling `ctx` drops the request and ends with a cancelled outcome.
pub(crate) async fn run(
    client: &reqwest::Client,
    agent: &HttpAgent,
    call: TaskCall,
    ctx: &TaskContext,
) -> Result<TaskOutcome, SubagentError> {
    if let Some(session) = call.resume {
        return Err(SubagentError::Resume {
            session,
            reason: format!(
                "HTTP agent `{}` keeps no sessions: each call is one request",
                agent.name()
            ),
        });
    }
    let started = Instant::now();
    let usage = || {
        Usage::new()
            .with_duration_ms(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX))
    };
    // The agent's limit, or what is left of the caller's deadline when that is shorter.
    let limit = ctx
        .remaining()
        .map_or(agent.timeout(), |left| left.min(agent.timeout()));
    let exchange = exchange(client, agent, &call.prompt, limit);
    let Some(reply) = until_cancelled(ctx.cancel(), exchange).await else {
        return Ok(
            TaskOutcome::with_status(String::new(), TaskStatus::Cancelled).with_usage(usage()),
        );
    };
    let value = reply?;
    let (text, answer) = answer(agent, &value)?;
    // The tokens the reply reports, read from the same parsed value (the Task tool charges
    // them to the caller's budget when the run ends).
    let usage = match agent.usage_pointers() {
        Some(pointers) => pointers.read(agent.name(), &value, usage()),
        None => usage(),
    };
    let mut outcome = TaskOutcome::completed(text).with_usage(usage);
    if call.output_schema.is_some() {
        // Typed result: the answer value; the Task tool checks it against the schema.
        outcome.structured = Some(answer.clone());
    }
    Ok(outcome)
}

/// Sends the request and reads the JSON reply (at most `max_response_bytes`, within `limit`).
async fn exchange(
    client: &reqwest::Client,
    agent: &HttpAgent,
    prompt: &str,
    limit: Duration,
) -> Result<serde_json::Value, SubagentError> {
    let name = agent.name();
    let timed_out = |e: &reqwest::Error| e.is_timeout();
    let failed = |e: reqwest::Error| {
        if timed_out(&e) {
            SubagentError::TimedOut {
                agent: name.to_string(),
                after: limit,
            }
        } else {
            SubagentError::Execution {
                agent: name.to_string(),
                message: format!("the request to {} failed: {e}", agent.url()),
                source: Some(Box::new(e)),
            }
        }
    };
    let mut request = client
        .request(agent.method().clone(), agent.url_for(prompt))
        .timeout(limit)
        .header(header::ACCEPT, "application/json");
    if let Some(body) = agent.body_for(prompt) {
        request = request
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
    }
    if let Some((h, v)) = agent.credential() {
        request = request.header(h.clone(), v.clone());
    }
    let mut response = request.send().await.map_err(failed)?;
    let status = response.status();
    if !status.is_success() {
        let quote = read_capped(&mut response, ERROR_QUOTE_BYTES as u64)
            .await
            .map_err(failed)?;
        return Err(SubagentError::execution(
            name,
            status_error(agent, status, &response, &quote.bytes),
        ));
    }
    let max = agent.max_response_bytes();
    let too_large = || SubagentError::LimitReached {
        agent: name.to_string(),
        limit: subagent_spi::Limit::other(format!(
            "max_response_bytes={max} (the reply from {} is larger)",
            agent.url()
        )),
    };
    if response.content_length().is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("no content type")
        .to_string();
    let read = read_capped(&mut response, max).await.map_err(failed)?;
    if read.truncated {
        return Err(too_large());
    }
    serde_json::from_slice(&read.bytes).map_err(|e| {
        SubagentError::protocol(
            name,
            format!(
                "the reply from {} is not JSON ({content_type}, {} bytes): {e}",
                agent.url(),
                read.bytes.len()
            ),
        )
    })
}

/// A body read up to a cap.
struct Capped {
    bytes: Vec<u8>,
    /// True when the body had more than the cap (the rest was not read).
    truncated: bool,
}

/// Reads at most `cap` bytes of the body, chunk by chunk (never more than one chunk past it).
async fn read_capped(response: &mut reqwest::Response, cap: u64) -> Result<Capped, reqwest::Error> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Capped {
                bytes,
                truncated: true,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Capped {
        bytes,
        truncated: false,
    })
}

/// The error text of a non-2xx reply: the status, where a redirect pointed, the reply's start.
fn status_error(
    agent: &HttpAgent,
    status: StatusCode,
    response: &reqwest::Response,
    quote: &[u8],
) -> String {
    let mut message = format!("{} answered HTTP {status}", agent.url());
    if status.is_redirection() {
        let to = response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("(no location)");
        message.push_str(&format!(
            ", a redirect to `{}` that is not followed (only redirects within {} are)",
            printable(to.as_bytes()),
            agent.url().origin().ascii_serialization()
        ));
    } else if !quote.is_empty() {
        message.push_str(&format!(": {}", printable(quote)));
    }
    message
}

/// Text from a stranger's bytes, one line, control characters replaced.
fn printable(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

/// The answer at the agent's pointer: its text (a string as is, any other value as JSON) and
/// the value.
fn answer<'v>(
    agent: &HttpAgent,
    value: &'v serde_json::Value,
) -> Result<(String, &'v serde_json::Value), SubagentError> {
    let pointer = agent.answer_pointer();
    let found = value.pointer(pointer).ok_or_else(|| {
        SubagentError::protocol(
            agent.name(),
            format!(
                "the reply has nothing at the answer pointer `{pointer}`; it is {}",
                outline(value)
            ),
        )
    })?;
    let text = match found {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Ok((text, found))
}

/// A short description of a JSON value's top level (a few keys, cut), for error messages.
fn outline(value: &serde_json::Value) -> String {
    const SHOWN: usize = 8;
    match value {
        serde_json::Value::Object(o) => {
            let mut keys: Vec<String> = o
                .keys()
                .take(SHOWN)
                .map(|k| format!("`{}`", printable(&k.as_bytes()[..k.len().min(40)])))
                .collect();
            if o.len() > SHOWN {
                keys.push(format!("and {} more", o.len() - SHOWN));
            }
            if keys.is_empty() {
                "an empty object".to_string()
            } else {
                format!("an object with keys {}", keys.join(", "))
            }
        }
        serde_json::Value::Array(a) => format!("an array of {} items", a.len()),
        serde_json::Value::String(_) => "a string".to_string(),
        serde_json::Value::Number(_) => "a number".to_string(),
        serde_json::Value::Bool(_) => "a boolean".to_string(),
        serde_json::Value::Null => "null".to_string(),
    }
}

/// Runs `work` until it ends or `cancel` fires (then `None`, and `work` is dropped).
async fn until_cancelled<F: Future>(cancel: &CancellationToken, work: F) -> Option<F::Output> {
    let mut work = pin!(work);
    let mut cancelled = pin!(cancel.cancelled());
    std::future::poll_fn(|cx| {
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        work.as_mut().poll(cx).map(Some)
    })
    .await
}
