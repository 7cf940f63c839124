//! Compaction: keeping a long run's requests below its model's context window.
//!
//! Before each model call the runtime estimates the request's size. Past
//! [`TRIGGER_PERCENT`] of the window it compacts the messages it sends (never the stored
//! transcript, which keeps everything):
//!
//! 1. **Trim**: tool outputs longer than [`TRIM_MIN_CHARS`] before the latest
//!    [`KEEP_TURNS`] turns become a short placeholder (with the output's first characters).
//! 2. **Summarise**, when that is not enough to get below [`TARGET_PERCENT`]: the older turns
//!    go to the same model in one request that asks for a summary, and become one user message
//!    holding it. The latest turns stay verbatim; the cut is always before an assistant
//!    message (or a user prompt), so every tool call stays paired with its result.
//! 3. **Fit**: should the latest turns alone still be too large, their largest outputs are
//!    trimmed too. A request that cannot fit at all (the system prompt and tool definitions
//!    alone fill the window) ends the run with the limit `context_window=N`.
//!
//! A [`ProgressKind::Compacted`] event says how many tokens the next request had before and
//! after. The size is an **estimate**: UTF-8 bytes / 4 of the messages, system prompt and tool
//! definitions (with a per-message overhead), scaled up by the ratio of the provider's reported
//! prompt tokens to the estimate of the request they answered, when a provider reports more
//! than estimated. Bytes / 4 is exact enough for English and code and errs large for most text;
//! the reported ratio corrects it for text that tokenizes worse (other scripts), one turn late.
//! A resumed session starts from its whole stored transcript and is compacted again when it
//! needs to be.

use std::sync::Arc;
use std::time::Instant;

use subagent_spi::chat::{ChatMessage, ChatRequest, TokenUsage};
use subagent_spi::{ChatModel, ModelError, ProgressKind, TaskContext, ToolSpec, Usage};

use crate::stall::Watchdog;
use crate::stop::{Guarded, Stop, guarded};
use subagent_core::BudgetExt;

/// Compaction starts when a request would take more than this share of the window (the rest
/// is room for the reply).
pub const TRIGGER_PERCENT: u64 = 75;
/// Compaction aims below this share of the window.
pub const TARGET_PERCENT: u64 = 50;
/// Tool outputs of at most this many characters are never trimmed (outside the last resort).
pub const TRIM_MIN_CHARS: usize = 1_000;
/// The latest turns (an assistant reply and its tool results each) kept untrimmed by step 1.
pub const KEEP_TURNS: usize = 2;
/// The text that starts a trimmed tool output.
pub const TRIMMED_MARKER_PREFIX: &str = "[tool output trimmed to save context:";
/// The text that starts the summary message.
pub const SUMMARY_PREFIX: &str = "[Summary of the earlier conversation";

/// Characters of a trimmed output kept in its placeholder.
const TRIM_PREVIEW_CHARS: usize = 120;
/// Characters of one tool output, and of one call's arguments, shown to the summariser.
const SUMMARY_TOOL_CHARS: usize = 2_000;
/// Fixed bytes counted per message (role, ids, JSON framing).
const MESSAGE_OVERHEAD: u64 = 64;

const SUMMARY_SYSTEM: &str = "You compact the context of an AI agent's long-running task. \
You receive the earlier part of its conversation: the task, its replies, the tools it called \
and what they returned. Write a concise summary the agent can continue from: the task as \
given (quote it if short), what was done and found (file names, values, decisions, errors), \
and what remained to do. Write only the summary.";

/// Bench-only switch (feature `bench-internals`): runs started while it is set do not compact,
/// so a bench can weigh compaction against the loop without it, side by side in one process.
#[cfg(feature = "bench-internals")]
static DISABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns compaction off (`true`) or on for the runs started afterwards; bench-only (feature
/// `bench-internals`): a bench weighs compaction against the loop without it, in one process.
#[cfg(feature = "bench-internals")]
pub fn set_disabled_for_bench(off: bool) {
    DISABLED.store(off, std::sync::atomic::Ordering::Relaxed);
}

fn disabled() -> bool {
    #[cfg(feature = "bench-internals")]
    {
        DISABLED.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(feature = "bench-internals"))]
    {
        false
    }
}

/// Per-run compaction state: the window, the size estimate, and the compacted view of the
/// messages once there is one.
pub(crate) struct Compactor {
    /// Off (bench-only): requests carry the transcript as it is.
    off: bool,
    window: u64,
    /// Bytes of the system prompt and the tool definitions.
    fixed_bytes: u64,
    /// Reported prompt tokens / estimated tokens of the last request, at least 1.
    ratio: f64,
    /// Estimated tokens of the last request sent.
    last_sent: u64,
    /// The messages sent instead of the transcript's, once compacted.
    view: Option<Vec<ChatMessage>>,
    /// Transcript messages reflected in `view`.
    synced: usize,
    /// Messages of the working list counted in `bytes`.
    counted: usize,
    /// Estimated bytes of the counted messages.
    bytes: u64,
}

/// What a model call for a summary needs from the loop.
pub(crate) struct Summarizer<'a> {
    pub model: &'a Arc<dyn ChatModel>,
    pub model_name: Option<&'a str>,
    pub ctx: &'a TaskContext,
    pub deadline: Option<Instant>,
    pub dog: &'a Watchdog,
    pub turn: u32,
}

impl Compactor {
    /// A compactor for a run with this window, system prompt and tools.
    pub(crate) fn new(window: u64, system: Option<&str>, tools: &[ToolSpec]) -> Self {
        let off = disabled();
        Self {
            off,
            window: window.max(1),
            fixed_bytes: if off { 0 } else { fixed_bytes(system, tools) },
            ratio: 1.0,
            last_sent: 0,
            view: None,
            synced: 0,
            counted: 0,
            bytes: 0,
        }
    }

    fn trigger(&self) -> u64 {
        self.window.saturating_mul(TRIGGER_PERCENT) / 100
    }

    fn target(&self) -> u64 {
        self.window.saturating_mul(TARGET_PERCENT) / 100
    }

    /// Tokens of a request whose messages take `message_bytes`.
    fn tokens(&self, message_bytes: u64) -> u64 {
        let raw = (message_bytes + self.fixed_bytes).div_ceil(4);
        if self.ratio > 1.0 {
            (raw as f64 * self.ratio).ceil() as u64
        } else {
            raw
        }
    }

    /// Brings the working list up to date with the transcript and counts new messages.
    fn sync(&mut self, transcript: &[ChatMessage]) {
        if let Some(view) = &mut self.view {
            if self.synced < transcript.len() {
                view.extend_from_slice(&transcript[self.synced..]);
                self.synced = transcript.len();
            }
            for m in &view[self.counted..] {
                self.bytes += message_bytes(m);
            }
            self.counted = view.len();
        } else {
            for m in &transcript[self.counted.min(transcript.len())..] {
                self.bytes += message_bytes(m);
            }
            self.counted = transcript.len();
        }
    }

    /// Learns from a reply's reported usage how the provider counts (see the module docs).
    pub(crate) fn observe(&mut self, usage: &TokenUsage) {
        // What was written to the cache is part of the input (see `TokenUsage`).
        let reported = usage.input_tokens.saturating_add(usage.cache_read_tokens);
        if reported > 0 && self.last_sent > 0 {
            let raw = self.last_sent as f64 / self.ratio.max(1.0);
            self.ratio = (reported as f64 / raw).clamp(1.0, 4.0);
        }
    }

    /// The messages of the next request: the transcript's, or their compacted view, compacted
    /// first when the request would pass the trigger. `Err` is how the run stops (cancelled,
    /// deadline, stalled during the summary, or a request that cannot fit).
    pub(crate) async fn request_messages(
        &mut self,
        transcript: &[ChatMessage],
        s: Summarizer<'_>,
        usage: &mut Usage,
    ) -> Result<Vec<ChatMessage>, Stop> {
        if self.off {
            return Ok(transcript.to_vec());
        }
        self.sync(transcript);
        let estimate = self.tokens(self.bytes);
        if estimate > self.trigger() {
            self.compact(transcript, s, usage, estimate).await?;
        }
        self.last_sent = self.tokens(self.bytes);
        Ok(match &self.view {
            Some(v) => v.clone(),
            None => transcript.to_vec(),
        })
    }

    /// The messages of the last request sent followed by the transcript's messages since (the
    /// reply to it): what a fork inherits, so its first request repeats the caller's last one
    /// byte for byte, compacted or not.
    pub(crate) fn sent_and_since(&self, transcript: &[ChatMessage]) -> Vec<ChatMessage> {
        match &self.view {
            Some(view) => {
                let since = transcript.get(self.synced..).unwrap_or_default();
                let mut out = Vec::with_capacity(view.len() + since.len());
                out.extend_from_slice(view);
                out.extend_from_slice(since);
                out
            }
            None => transcript.to_vec(),
        }
    }

    async fn compact(
        &mut self,
        transcript: &[ChatMessage],
        s: Summarizer<'_>,
        usage: &mut Usage,
        before: u64,
    ) -> Result<(), Stop> {
        let mut msgs = match &self.view {
            Some(v) => v.clone(),
            None => transcript.to_vec(),
        };
        let est = |c: &Self, m: &[ChatMessage]| c.tokens(m.iter().map(message_bytes).sum());

        // 1. Trim old large tool outputs.
        let protect = keep_from(&msgs, KEEP_TURNS);
        let mut trimmed = 0u32;
        for m in &mut msgs[..protect] {
            if trim(m, TRIM_MIN_CHARS) {
                trimmed += 1;
            }
        }

        // 2. Summarise the older turns.
        let mut summarized = 0u32;
        if est(self, &msgs) > self.target() {
            let cut = self.cut_point(&msgs);
            if cut > 0 {
                let summary = self.summarise(&msgs[..cut], &s, usage).await?;
                summarized = u32::try_from(cut).unwrap_or(u32::MAX);
                let tail = msgs.split_off(cut);
                msgs = with_summary(summary, tail);
            }
        }

        // 3. Fit: the latest turns' largest contents, as a last resort.
        while est(self, &msgs) > self.trigger() {
            let Some(i) = largest(&msgs) else { break };
            if matches!(msgs[i], ChatMessage::Tool { .. }) && trim(&mut msgs[i], 0) {
                trimmed += 1;
                continue;
            }
            let content = content_mut(&mut msgs[i]);
            let keep = content.chars().count() / 2;
            *content = crate::truncate_output(std::mem::take(content), keep);
        }
        let after = est(self, &msgs);
        if after > self.trigger() {
            return Err(Stop::limit(
                subagent_spi::Limit::other(format!(
                    "context_window={}: the system prompt, tool definitions and latest turn \
                     alone take about {after} tokens",
                    self.window
                )),
                None,
            ));
        }

        tracing::info!(
            agent = %s.ctx.agent(), turn = s.turn, before, after, trimmed, summarized,
            window = self.window, "context compacted"
        );
        s.ctx.emit(ProgressKind::Compacted {
            tokens_before: before,
            tokens_after: after,
            trimmed_outputs: trimmed,
            summarized_messages: summarized,
        });
        self.bytes = msgs.iter().map(message_bytes).sum();
        self.counted = msgs.len();
        self.synced = transcript.len();
        self.view = Some(msgs);
        Ok(())
    }

    /// Where the verbatim tail starts: the earliest turn boundary (an assistant message or a
    /// user prompt) such that the tail fits half the target, but at least the latest turn.
    /// 0 when there is nothing older to summarise.
    fn cut_point(&self, msgs: &[ChatMessage]) -> usize {
        let budget = (self.target() / 2).saturating_mul(4);
        let mut tail_bytes = 0u64;
        let mut cut = 0;
        for i in (1..msgs.len()).rev() {
            tail_bytes += message_bytes(&msgs[i]);
            if matches!(msgs[i], ChatMessage::Tool { .. }) {
                continue;
            }
            if cut != 0 && tail_bytes > budget {
                break;
            }
            cut = i;
        }
        cut
    }

    /// Asks the model for a summary of `older`; a failing call leaves a note instead.
    async fn summarise(
        &self,
        older: &[ChatMessage],
        s: &Summarizer<'_>,
        usage: &mut Usage,
    ) -> Result<String, Stop> {
        // The summary request gets half the window, the summary an eighth.
        let budget = usize::try_from(self.target().saturating_mul(4)).unwrap_or(usize::MAX);
        let reply_tokens = (self.window / 8).clamp(64, 4_096);
        let text = cut_middle(render(older), budget);
        let mut request = ChatRequest::new(vec![ChatMessage::user(format!(
            "The conversation so far:\n\n{text}\n\nSummarise it as instructed."
        ))]);
        request.system = Some(SUMMARY_SYSTEM.to_string());
        request.model = s.model_name.map(str::to_string);
        request.max_tokens = Some(u32::try_from(reply_tokens).unwrap_or(u32::MAX));
        let call = s
            .dog
            .watch(s.model.chat(request), std::time::Duration::ZERO);
        let failed = |e: &dyn std::fmt::Display| {
            s.ctx.emit(ProgressKind::Status {
                message: format!(
                    "warning: the earlier turns could not be summarised ({e}); they were dropped \
                     from the context (the transcript keeps them)"
                ),
            });
            format!(
                "(The earlier turns could not be summarised: {e}. They were dropped from the \
                 context.)"
            )
        };
        let summary = match guarded(call, s.ctx.cancel(), s.deadline).await {
            Guarded::Done(Ok(Ok(r))) => {
                crate::reply_usage::add_reply(usage, &r.usage);
                if let Some(b) = s.ctx.budget() {
                    let m = if r.model.is_empty() {
                        s.model_name.unwrap_or("")
                    } else {
                        r.model.as_str()
                    };
                    let _ = b.charge_tokens(m, &r.usage, 0);
                }
                if r.content.trim().is_empty() {
                    failed(&"the summary reply was empty")
                } else {
                    let cap = usize::try_from(reply_tokens * 4).unwrap_or(usize::MAX);
                    crate::truncate_output(r.content, cap)
                }
            }
            Guarded::Done(Ok(Err(ModelError::Cancelled))) | Guarded::Cancelled => {
                return Err(Stop::cancelled(None));
            }
            Guarded::Done(Ok(Err(e))) => failed(&e),
            Guarded::Done(Err(_stalled)) => {
                return Err(Stop::limit(
                    s.dog.limit(&format!(
                        "the model call summarising earlier turns (turn {})",
                        s.turn
                    )),
                    None,
                ));
            }
            Guarded::Deadline => return Err(Stop::limit(subagent_spi::Limit::Deadline, None)),
        };
        Ok(summary)
    }
}

/// Counts the bytes written to it.
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The estimated bytes of one message on the wire.
/// Bytes of a request's fixed part: its system prompt and tool definitions (as JSON).
fn fixed_bytes(system: Option<&str>, tools: &[ToolSpec]) -> u64 {
    let mut w = ByteCount(0);
    let _ = serde_json::to_writer(&mut w, tools);
    system.map_or(0, |s| s.len() as u64) + w.0
}

/// The estimated tokens of a request's fixed part, its system prompt and tool definitions,
/// counted as compaction counts them (UTF-8 bytes / 4, see the module docs): what every turn
/// of a run with them costs before any message.
pub fn fixed_prompt_tokens(system: Option<&str>, tools: &[ToolSpec]) -> u64 {
    fixed_bytes(system, tools).div_ceil(4)
}

fn message_bytes(m: &ChatMessage) -> u64 {
    MESSAGE_OVERHEAD
        + match m {
            ChatMessage::System { content } | ChatMessage::User { content } => content.len() as u64,
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                content.len() as u64
                    + tool_calls
                        .iter()
                        .map(|c| {
                            let mut w = ByteCount(0);
                            let _ = serde_json::to_writer(&mut w, &c.arguments);
                            MESSAGE_OVERHEAD + (c.id.len() + c.name.len()) as u64 + w.0
                        })
                        .sum::<u64>()
            }
            ChatMessage::Tool {
                call_id,
                name,
                content,
                ..
            } => (call_id.len() + name.len() + content.len()) as u64,
        }
}

/// The index of the first message of the latest `turns` turns (each starts at an assistant
/// message).
fn keep_from(msgs: &[ChatMessage], turns: usize) -> usize {
    let mut seen = 0;
    for i in (0..msgs.len()).rev() {
        if matches!(msgs[i], ChatMessage::Assistant { .. }) {
            seen += 1;
            if seen == turns {
                return i;
            }
        }
    }
    0
}

/// Replaces a tool output longer than `min_chars` characters by a placeholder; true when it
/// did. Placeholders are never trimmed again.
fn trim(m: &mut ChatMessage, min_chars: usize) -> bool {
    let ChatMessage::Tool { content, .. } = m else {
        return false;
    };
    if content.len() <= min_chars.max(TRIM_PREVIEW_CHARS + 64)
        || content.starts_with(TRIMMED_MARKER_PREFIX)
    {
        return false;
    }
    let total = content.chars().count();
    if total <= min_chars {
        return false;
    }
    let head: String = content.chars().take(TRIM_PREVIEW_CHARS).collect();
    *content = format!(
        "{TRIMMED_MARKER_PREFIX} {total} characters; the session transcript keeps it whole. \
         It began:]\n{head}…"
    );
    true
}

/// The index of the message with the largest content that can still be cut, if any.
fn largest(msgs: &[ChatMessage]) -> Option<usize> {
    msgs.iter()
        .enumerate()
        .map(|(i, m)| {
            let len = match m {
                ChatMessage::Tool { content, .. } if content.starts_with(TRIMMED_MARKER_PREFIX) => {
                    0
                }
                ChatMessage::System { content }
                | ChatMessage::User { content }
                | ChatMessage::Assistant { content, .. }
                | ChatMessage::Tool { content, .. } => content.len(),
            };
            (i, len)
        })
        .filter(|&(_, len)| len > 2 * TRIM_PREVIEW_CHARS)
        .max_by_key(|&(_, len)| len)
        .map(|(i, _)| i)
}

fn content_mut(m: &mut ChatMessage) -> &mut String {
    match m {
        ChatMessage::System { content }
        | ChatMessage::User { content }
        | ChatMessage::Assistant { content, .. }
        | ChatMessage::Tool { content, .. } => content,
    }
}

/// The summary as the first message, before the verbatim tail (merged into the tail's first
/// message when that is a user prompt, so roles keep alternating).
fn with_summary(summary: String, tail: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let head = format!(
        "{SUMMARY_PREFIX}, written when the context was compacted; the latest turns follow \
         verbatim.]\n\n{summary}"
    );
    let mut out = Vec::with_capacity(tail.len() + 1);
    let mut tail = tail.into_iter();
    match tail.next() {
        Some(ChatMessage::User { content }) => {
            out.push(ChatMessage::user(format!("{head}\n\n{content}")));
        }
        Some(first) => {
            out.push(ChatMessage::user(head));
            out.push(first);
        }
        None => out.push(ChatMessage::user(head)),
    }
    out.extend(tail);
    out
}

/// The conversation as text for the summariser; long tool outputs and arguments are cut.
fn render(msgs: &[ChatMessage]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for m in msgs {
        match m {
            ChatMessage::System { content } => {
                let _ = writeln!(out, "SYSTEM: {content}\n");
            }
            ChatMessage::User { content } => {
                let _ = writeln!(out, "USER: {content}\n");
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let _ = writeln!(out, "ASSISTANT: {content}");
                for c in tool_calls {
                    let args = crate::truncate_output(c.arguments.to_string(), SUMMARY_TOOL_CHARS);
                    let _ = writeln!(out, "  called {} {args}", c.name);
                }
                out.push('\n');
            }
            ChatMessage::Tool {
                name,
                content,
                is_error,
                ..
            } => {
                let what = if *is_error { "ERROR" } else { "RESULT" };
                let text = crate::truncate_output(content.clone(), SUMMARY_TOOL_CHARS);
                let _ = writeln!(out, "TOOL {what} ({name}): {text}\n");
            }
        }
    }
    out
}

/// `text` within `max_bytes`: its start and its end, with a marker where the middle was cut.
fn cut_middle(text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let head_end = floor_char(&text, max_bytes / 4);
    let tail_start = ceil_char(&text, text.len() - (max_bytes - max_bytes / 4));
    format!(
        "{}\n[... {} bytes of the conversation left out ...]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use subagent_spi::chat::ToolCall;

    fn turn(i: usize, output: &str) -> [ChatMessage; 2] {
        [
            ChatMessage::assistant_with_tools(
                "",
                vec![ToolCall::new(
                    format!("c{i}"),
                    "Read",
                    serde_json::json!({"i": i}),
                )],
            ),
            ChatMessage::tool_result(format!("c{i}"), "Read", output, false),
        ]
    }

    #[test]
    fn cut_points_keep_calls_with_results() {
        let big = "x".repeat(4_000);
        let mut msgs = vec![ChatMessage::user("task")];
        for i in 0..10 {
            msgs.extend(turn(i, &big));
        }
        let c = Compactor::new(8_000, None, &[]);
        let cut = c.cut_point(&msgs);
        assert!(cut > 0 && cut < msgs.len());
        assert!(matches!(msgs[cut], ChatMessage::Assistant { .. }));
        // The tail fits half the target (2,000 tokens = 8,000 bytes): one turn of 4,000+.
        assert_eq!(msgs.len() - cut, 2);
        assert_eq!(keep_from(&msgs, 2), msgs.len() - 4);
    }

    #[test]
    fn trimming_keeps_a_head_and_is_done_once() {
        let mut m = ChatMessage::tool_result("c", "Read", "é".repeat(3_000), false);
        assert!(trim(&mut m, TRIM_MIN_CHARS));
        let ChatMessage::Tool { content, .. } = &m else {
            unreachable!()
        };
        assert!(content.starts_with(TRIMMED_MARKER_PREFIX));
        assert!(content.contains("3000 characters"));
        assert!(!trim(&mut m, 0), "a placeholder is not trimmed again");
        let mut small = ChatMessage::tool_result("c", "Read", "short", false);
        assert!(!trim(&mut small, TRIM_MIN_CHARS));
    }

    #[test]
    fn summary_merges_into_a_leading_prompt() {
        let out = with_summary("S".into(), vec![ChatMessage::user("next")]);
        assert_eq!(out.len(), 1);
        let ChatMessage::User { content } = &out[0] else {
            unreachable!()
        };
        assert!(content.starts_with(SUMMARY_PREFIX) && content.ends_with("S\n\nnext"));
        let out = with_summary("S".into(), turn(1, "r").to_vec());
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn middle_cuts_respect_characters() {
        let text = "ä".repeat(1_000);
        let out = cut_middle(text, 301);
        assert!(out.len() < 400);
        assert!(out.contains("left out"));
    }
}
