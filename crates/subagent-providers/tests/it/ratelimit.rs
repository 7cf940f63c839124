//! Rate limits waited out, over real HTTP against the scripted model server's rate-limit
//! modes: the endpoint's adaptive limiter, Retry-After with jitter, the providers' rate-limit
//! headers, the time bound, and what a hostile server can make a call do.

use crate::common;

use std::time::{Duration, Instant, SystemTime};

use common::*;
use subagent_providers::{OpenAiModel, RetryPolicy};
use subagent_spi::ModelError;
use subagent_spi::chat::{ChatDelta, ChatModel};
use subagent_testkit::{RateLimit, Reply, ScriptedModelServer};

/// A client of `server` with `key`, as each child of a tree builds its own.
fn client(server: &ScriptedModelServer, key: &str) -> OpenAiModel {
    openai_at(server.openai_base_url(), |b| {
        b.api_key(key).base_delay(Duration::from_millis(5))
    })
}

/// Runs `n` calls at once, each on its own client of `server`; returns their results.
async fn fan_out(server: &ScriptedModelServer, n: usize) -> Vec<Result<String, ModelError>> {
    let mut tasks = Vec::new();
    for i in 0..n {
        let model = client(server, "sk-fan-out");
        tasks.push(tokio::spawn(async move {
            model
                .chat(user(&format!("job {i}")))
                .await
                .map(|r| r.content)
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("joins"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_four_calls_against_four_in_flight_all_answer_and_queue() {
    let server = ScriptedModelServer::start().await;
    server.set_rate_limit(Some(RateLimit::in_flight(4, Duration::from_secs(1))));
    server.set_fallback(Some(
        Reply::text("ok").with_delay(Duration::from_millis(200)),
    ));
    let results = fan_out(&server, 24).await;
    let failed: Vec<_> = results.iter().filter(|r| r.is_err()).collect();
    assert!(failed.is_empty(), "{failed:?}");
    // Refused past the 4 until the first refusals came back; then the limiter held the calls
    // back instead of sending them to be refused: fewer refusals than calls (without it, the
    // 20 past the cap are each refused at least once, most of them several times).
    let refused = server.rate_limited_count();
    assert!(refused >= 1, "the server did refuse");
    assert!(
        refused < 24,
        "the limiter queued the rest: {refused} refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_calls_against_half_refused_at_random_all_answer() {
    let server = ScriptedModelServer::start().await;
    server.set_rate_limit(Some(RateLimit::random(0.5, 40, Duration::from_millis(100))));
    server.set_fallback(Some(Reply::text("ok").with_delay(Duration::from_millis(5))));
    let results = fan_out(&server, 100).await;
    let failed: Vec<_> = results.iter().filter(|r| r.is_err()).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert!(server.rate_limited_count() >= 30, "half were refused");
}

#[tokio::test]
async fn a_rate_limit_is_retried_until_the_time_bound_not_a_count() {
    let server = ScriptedModelServer::start().await;
    server.set_fallback(Some(
        Reply::error_message(429, "slow down").with_header("retry-after-ms", "100"),
    ));
    let model = openai_at(server.openai_base_url(), |b| {
        b.max_retries(1)
            .max_rate_limit_wait(Duration::from_millis(1500))
    });
    let started = Instant::now();
    let err = model.chat(user("q")).await.unwrap_err();
    let took = started.elapsed();
    // Far more than max_retries attempts, and it gave up at the time bound, saying so.
    assert!(server.request_count() > 3, "{}", server.request_count());
    assert!(took >= Duration::from_millis(1000), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let text = err.to_string();
    assert!(text.contains("HTTP 429: slow down"), "{text}");
    assert!(text.contains("still refused after"), "{text}");
    assert_eq!(subagent_providers::http_status(&err), Some(429));
}

#[tokio::test]
async fn overloaded_503_and_529_are_waited_out_too() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::error_message(503, "busy"));
    server.push(Reply::error_message(529, "Overloaded"));
    server.push(Reply::error_message(503, "busy"));
    server.push(Reply::error_message(529, "Overloaded"));
    server.push(Reply::text("finally"));
    let model = anthropic_at(server.base_url(), |b| {
        b.max_retries(1).base_delay(Duration::from_millis(5))
    });
    let reply = model.chat(user("q")).await.unwrap();
    assert_eq!(reply.content, "finally");
    assert_eq!(server.request_count(), 5, "more than max_retries = 1");
}

#[tokio::test]
async fn a_hostile_retry_after_is_capped() {
    let server = ScriptedModelServer::start().await;
    // "Come back in 30 years" (and an HTTP date as far): capped at max_retry_after.
    server.push(Reply::rate_limited(1_000_000_000));
    server.push(Reply::error_message(429, "later").with_header(
        "retry-after",
        httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(900_000_000)),
    ));
    server.push(Reply::text("answered"));
    let mut policy = RetryPolicy::default();
    policy.max_retry_after = Duration::from_millis(200);
    let model = openai_at(server.openai_base_url(), |b| b.retry_policy(policy));
    let started = Instant::now();
    assert_eq!(model.chat(user("q")).await.unwrap().content, "answered");
    // Two waits of at most 200 ms plus a jitter of at most 100 ms each.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_used_up_openai_limit_pauses_the_next_call_until_it_resets() {
    let server = ScriptedModelServer::start().await;
    server.push(
        Reply::text("last one this second")
            .with_header("x-ratelimit-remaining-requests", "0")
            .with_header("x-ratelimit-reset-requests", "1s"),
    );
    server.push(Reply::text("after the reset"));
    let (a, b) = (client(&server, "sk-a"), client(&server, "sk-a"));
    a.chat(user("a")).await.unwrap();
    let started = Instant::now();
    assert_eq!(b.chat(user("b")).await.unwrap().content, "after the reset");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "the second call waited for the reset: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_used_up_anthropic_limit_pauses_the_next_call_and_says_so() {
    let server = ScriptedModelServer::start().await;
    let reset = SystemTime::now() + Duration::from_secs(2);
    let secs = reset
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    server.push(
        Reply::text("the last one")
            .with_header("anthropic-ratelimit-input-tokens-remaining", "0")
            .with_header("anthropic-ratelimit-input-tokens-reset", rfc3339(secs)),
    );
    server.push(Reply::text("after the reset"));
    let model = anthropic(&server);
    model.chat(user("a")).await.unwrap();
    let started = Instant::now();
    let (reply, deltas) = stream(&model, user("b")).await;
    assert_eq!(reply.unwrap().content, "after the reset");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    let waits = waiting(&deltas);
    assert!(
        waits
            .iter()
            .any(|w| w.starts_with("rate limited: the provider's limit resets in")),
        "{waits:?}"
    );
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time.
fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The reasons of the `Waiting` deltas.
fn waiting(deltas: &[ChatDelta]) -> Vec<String> {
    deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::Waiting { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_streamed_call_reports_its_wait_with_the_time_left() {
    let server = ScriptedModelServer::start().await;
    server.push(Reply::rate_limited(1));
    server.push(Reply::text("after the wait"));
    let (reply, deltas) = stream(&openai(&server), user("q")).await;
    assert_eq!(reply.unwrap().content, "after the wait");
    let found = deltas.iter().find_map(|d| match d {
        ChatDelta::Waiting { reason, retry_in } => Some((reason.clone(), *retry_in)),
        _ => None,
    });
    let (reason, retry_in) = found.expect("a Waiting delta");
    assert!(
        reason.starts_with("rate limited (HTTP 429): retry in 1."),
        "{reason}"
    );
    let retry_in = retry_in.expect("the wait");
    assert!(
        retry_in >= Duration::from_secs(1) && retry_in <= Duration::from_millis(1500),
        "{retry_in:?}"
    );
    assert_eq!(
        delta_text(&deltas),
        "after the wait",
        "the wait is no reply text"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_key_on_the_same_endpoint_is_not_held_back() {
    let server = ScriptedModelServer::start().await;
    // Key A is refused with nothing else in flight: every call with key A pauses 3 s. A call
    // with key B has a limiter of its own and goes at once.
    server.push(Reply::rate_limited(3));
    server.set_fallback(Some(Reply::text("ok")));
    let a = client(&server, "sk-key-a");
    let first = tokio::spawn(async move { a.chat(user("a")).await });
    while server.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    client(&server, "sk-key-b").chat(user("b")).await.unwrap();
    let b_took = started.elapsed();
    let started = Instant::now();
    client(&server, "sk-key-a").chat(user("a2")).await.unwrap();
    let a2_took = started.elapsed();
    first.await.unwrap().unwrap();
    assert!(
        b_took < Duration::from_millis(1500),
        "key B waited {b_took:?}"
    );
    assert!(
        a2_took >= Duration::from_millis(2000),
        "key A's next call waited out the pause: {a2_took:?}"
    );
}
