//! A provider's prompt cache, as the scripted model server can imitate it.
//!
//! - **OpenAI wire** (automatic caching): a request's prompt is cut into segments (the model,
//!   the tool list, the system prompt, each message, in the order a provider renders them), and
//!   the leading segments that are byte-identical to the leading segments of an earlier request
//!   are "read from cache".
//! - **Anthropic wire** ([`AnthropicCache`]): billed by Anthropic's published rules: only
//!   prefixes ending at a `cache_control` breakpoint are written (at most 4 breakpoints, else
//!   400), and only when at least the minimum (1,024 tokens by default) long; a breakpoint
//!   reads the longest cached prefix ending at it or at one of the 20 blocks before it;
//!   entries live 5 minutes (or `"ttl": "1h"`) from their last use. The prefix is the tools,
//!   then the system prompt, then the messages, block by block; a block's `cache_control`
//!   is no part of it.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use serde_json::value::RawValue;

/// Earlier prompts remembered (the oldest are forgotten first).
const MAX_REMEMBERED: usize = 4096;

/// Prompt tokens of a segment: a token per four bytes, rounded up (a rough tokenizer; what
/// matters is that equal prefixes count alike).
pub fn prompt_tokens(segment: &str) -> u64 {
    tokens_of_bytes(segment.len())
}

/// The server's one token count: a token per four bytes, rounded up (also
/// [`RecordedRequest::prompt_tokens`](crate::RecordedRequest::prompt_tokens)).
pub(crate) fn tokens_of_bytes(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The prompt segments of a request body, each the exact JSON text the client sent: the model
/// (counted as no tokens), the `tools` array, the `system` field (Anthropic; an OpenAI system
/// prompt is its first message), then each of `messages`. Absent fields are empty segments.
/// `None` when the body is no JSON object.
pub fn prompt_segments(raw_body: &str) -> Option<Vec<String>> {
    let fields: std::collections::BTreeMap<String, &RawValue> =
        serde_json::from_str(raw_body).ok()?;
    let text = |name: &str| {
        fields
            .get(name)
            .map(|v| v.get().to_string())
            .unwrap_or_default()
    };
    let mut out = vec![text("model"), text("tools"), text("system")];
    if let Some(messages) = fields.get("messages") {
        let messages: Vec<&RawValue> = serde_json::from_str(messages.get()).ok()?;
        out.extend(messages.iter().map(|m| m.get().to_string()));
    }
    Some(out)
}

/// What the cache saw of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheRead {
    /// Prompt tokens in all.
    pub total: u64,
    /// Of them, read from cache.
    pub cached: u64,
}

/// The prompts seen so far, as hashes of their segments.
#[derive(Default)]
pub(crate) struct PromptCache {
    seen: Mutex<VecDeque<Vec<u64>>>,
}

impl PromptCache {
    /// Looks `raw_body` up (the longest run of leading segments equal to an earlier prompt's)
    /// and remembers it. `None` when the body has no prompt to cache.
    pub(crate) fn observe(&self, raw_body: &str) -> Option<CacheRead> {
        let segments = prompt_segments(raw_body)?;
        let hashes: Vec<u64> = segments
            .iter()
            .map(|s| {
                let mut h = DefaultHasher::new();
                s.hash(&mut h);
                h.finish()
            })
            .collect();
        let tokens: Vec<u64> = segments
            .iter()
            .enumerate()
            // The model names the cache, it is no prompt text.
            .map(|(i, s)| if i == 0 { 0 } else { prompt_tokens(s) })
            .collect();
        let mut seen = crate::locked(&self.seen);
        let matched = seen
            .iter()
            .map(|earlier| {
                earlier
                    .iter()
                    .zip(&hashes)
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .max()
            .unwrap_or(0);
        if seen.len() >= MAX_REMEMBERED {
            seen.pop_front();
        }
        seen.push_back(hashes);
        Some(CacheRead {
            total: tokens.iter().sum(),
            cached: tokens[..matched].iter().sum(),
        })
    }
}

/// Anthropic's minimum cacheable prompt length of most models (Sonnet 4.5, Opus 4.1): 1,024
/// tokens. (Opus 4.5 and Haiku 4.5 ask 4,096, Haiku 3.5 2,048.)
pub const ANTHROPIC_MIN_CACHEABLE_TOKENS: u64 = 1024;

/// How many blocks before a breakpoint Anthropic looks for a cached prefix (20).
pub const ANTHROPIC_LOOKBACK_BLOCKS: usize = 20;

/// The most `cache_control` breakpoints one Anthropic request may carry.
const MAX_BREAKPOINTS: usize = 4;

/// Entries remembered (the oldest-expiring are forgotten first).
const MAX_ENTRIES: usize = 65_536;

/// How one request was billed by the imitated prompt cache, in the server's tokens
/// ([`prompt_tokens`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheBill {
    /// The prompt's tokens in all.
    pub prompt_tokens: u64,
    /// Of them, read from the cache.
    pub cache_read_tokens: u64,
    /// Of them, written to the cache (Anthropic only).
    pub cache_creation_tokens: u64,
    /// Of the written ones, those written with a one-hour TTL.
    pub cache_creation_1h_tokens: u64,
}

impl CacheBill {
    /// Prompt tokens neither read from nor written to the cache.
    pub fn uncached_tokens(&self) -> u64 {
        self.prompt_tokens - self.cache_read_tokens - self.cache_creation_tokens
    }

    /// What the prompt is billed, in uncached input tokens, by Anthropic's published rates:
    /// reads 0.1x, 5-minute writes 1.25x, one-hour writes 2x, the rest 1x.
    pub fn billed_tokens(&self) -> f64 {
        let five = self.cache_creation_tokens - self.cache_creation_1h_tokens;
        self.uncached_tokens() as f64
            + 0.1 * self.cache_read_tokens as f64
            + 1.25 * five as f64
            + 2.0 * self.cache_creation_1h_tokens as f64
    }
}

/// One block of an Anthropic prompt: what identifies it (its place and JSON, breakpoint left
/// out), its tokens, and its breakpoint's TTL when it has one.
struct Block {
    hash: u64,
    tokens: u64,
    breakpoint: Option<Duration>,
}

/// The TTL a `cache_control` value asks for; an error for what the API refuses.
fn ttl_of(cc: &Value) -> Result<Duration, String> {
    if cc["type"] != "ephemeral" {
        return Err(format!(
            "cache_control.type must be \"ephemeral\", not {}",
            cc["type"]
        ));
    }
    match cc.get("ttl").and_then(Value::as_str) {
        None | Some("5m") => Ok(Duration::from_secs(300)),
        Some("1h") => Ok(Duration::from_secs(3600)),
        Some(other) => Err(format!(
            "cache_control.ttl must be \"5m\" or \"1h\", not {other:?}"
        )),
    }
}

/// The blocks of an Anthropic request body, in cache order (tools, system, messages), each
/// chained to the ones before it (its hash is of the whole prefix it ends).
fn anthropic_blocks(body: &Value) -> Result<Vec<Block>, String> {
    let mut out: Vec<Block> = Vec::new();
    let mut chain = DefaultHasher::new();
    body["model"].to_string().hash(&mut chain);
    let mut push = |place: String, block: &Value| -> Result<(), String> {
        let mut block = block.clone();
        let breakpoint = match block
            .as_object_mut()
            .and_then(|o| o.remove("cache_control"))
        {
            Some(cc) => Some(ttl_of(&cc)?),
            None => None,
        };
        if let Some(Value::String(text)) = block.get("text")
            && text.is_empty()
            && breakpoint.is_some()
        {
            return Err("cache_control cannot be set for empty text blocks".into());
        }
        let json = block.to_string();
        place.hash(&mut chain);
        json.hash(&mut chain);
        out.push(Block {
            hash: chain.finish(),
            tokens: tokens_of_bytes(json.len()),
            breakpoint,
        });
        Ok(())
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push("tool".into(), tool)?;
    }
    match &body["system"] {
        Value::String(text) => push(
            "system".into(),
            &serde_json::json!({"type": "text", "text": text}),
        )?,
        Value::Array(blocks) => {
            for b in blocks {
                push("system".into(), b)?;
            }
        }
        _ => {}
    }
    for (i, m) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let place = format!("message {i} {}", m["role"]);
        match &m["content"] {
            Value::String(text) => push(place, &serde_json::json!({"type": "text", "text": text}))?,
            Value::Array(blocks) => {
                for b in blocks {
                    push(place.clone(), b)?;
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Anthropic's prompt cache, by its published rules (see the module docs).
pub(crate) struct AnthropicCache {
    /// Prefix hash → when it expires and its TTL.
    entries: Mutex<HashMap<u64, (Instant, Duration)>>,
}

impl Default for AnthropicCache {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl AnthropicCache {
    /// Bills `body` (an Anthropic request) and writes what its breakpoints write; `min_tokens`
    /// is the minimum cacheable prompt length. `Err`: a request the API refuses (more than 4
    /// breakpoints, a bad `cache_control`), with the API's message.
    pub(crate) fn bill(&self, body: &Value, min_tokens: u64) -> Result<CacheBill, String> {
        let blocks = anthropic_blocks(body)?;
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|i| blocks[*i].breakpoint.is_some())
            .collect();
        if breakpoints.len() > MAX_BREAKPOINTS {
            return Err(format!(
                "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                breakpoints.len()
            ));
        }
        // Tokens of the prefix ending at block i.
        let upto: Vec<u64> = blocks
            .iter()
            .scan(0u64, |sum, b| {
                *sum += b.tokens;
                Some(*sum)
            })
            .collect();
        let total = upto.last().copied().unwrap_or(0);
        let now = Instant::now();
        let mut entries = crate::locked(&self.entries);
        // The longest cached prefix ending at a breakpoint or up to 20 blocks before one.
        let mut read: Option<usize> = None;
        for &b in &breakpoints {
            let hit = (b.saturating_sub(ANTHROPIC_LOOKBACK_BLOCKS)..=b)
                .rev()
                .find(|&j| {
                    entries
                        .get(&blocks[j].hash)
                        .is_some_and(|(exp, _)| *exp > now)
                });
            read = read.max(hit);
        }
        if let Some(j) = read
            && let Some((exp, ttl)) = entries.get_mut(&blocks[j].hash)
        {
            *exp = now + *ttl; // a hit refreshes the entry
        }
        let read_tokens = read.map_or(0, |j| upto[j]);
        // Every breakpoint past the read prefix whose prefix is long enough is written.
        let mut written_to: Option<usize> = None;
        let mut written_1h = 0u64;
        let mut from = read_tokens;
        for &b in &breakpoints {
            if read.is_some_and(|j| j >= b) || upto[b] < min_tokens {
                continue;
            }
            let ttl = blocks[b].breakpoint.unwrap_or_default();
            if ttl > Duration::from_secs(300) {
                written_1h += upto[b] - from;
            }
            from = upto[b];
            written_to = Some(b);
            if entries.len() >= MAX_ENTRIES {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, (exp, _))| *exp)
                    .map(|(k, _)| *k);
                if let Some(k) = oldest {
                    entries.remove(&k);
                }
            }
            entries.insert(blocks[b].hash, (now + ttl, ttl));
        }
        let creation = written_to.map_or(0, |b| upto[b] - read_tokens);
        Ok(CacheBill {
            prompt_tokens: total,
            cache_read_tokens: read_tokens,
            cache_creation_tokens: creation,
            cache_creation_1h_tokens: written_1h,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(system: &str, messages: &[&str]) -> String {
        let messages: Vec<serde_json::Value> = messages
            .iter()
            .map(|m| serde_json::json!({"role": "user", "content": m}))
            .collect();
        serde_json::json!({"model": "m", "system": system, "messages": messages, "tools": []})
            .to_string()
    }

    #[test]
    fn the_longest_byte_identical_prefix_is_read_from_cache() {
        let cache = PromptCache::default();
        let first = body("sys", &["aaaa", "bbbb"]);
        let read = cache.observe(&first).expect("a prompt");
        assert_eq!(read.cached, 0);
        // The same prefix and one more message: all but the new message is cached.
        let second = body("sys", &["aaaa", "bbbb", "cccc"]);
        let read = cache.observe(&second).expect("a prompt");
        let segs = prompt_segments(&second).expect("segments");
        let new_tokens = prompt_tokens(&segs[5]);
        assert!(read.cached > 0);
        assert_eq!(read.cached + new_tokens, read.total);
        // A different system prompt: only the model (no tokens) and the tools match.
        let third = body("other", &["aaaa"]);
        let read = cache.observe(&third).expect("a prompt");
        assert_eq!(read.cached, prompt_tokens("[]"));
        // Not JSON: nothing to cache.
        assert!(cache.observe("not json").is_none());
    }

    /// An Anthropic request: a system prompt of `system_bytes` bytes, then `blocks` user
    /// text blocks of 40 bytes each; breakpoints on the system prompt when `on_system`, and on
    /// the blocks listed.
    fn anthropic(system_bytes: usize, on_system: bool, blocks: usize, marked: &[usize]) -> Value {
        let cc = serde_json::json!({"type": "ephemeral"});
        let mut system = serde_json::json!({"type": "text", "text": "s".repeat(system_bytes)});
        if on_system {
            system["cache_control"] = cc.clone();
        }
        let content: Vec<Value> = (0..blocks)
            .map(|i| {
                let mut b = serde_json::json!({"type": "text", "text": format!("{i:0>38}")});
                if marked.contains(&i) {
                    b["cache_control"] = cc.clone();
                }
                b
            })
            .collect();
        serde_json::json!({"model": "claude", "system": [system],
            "messages": [{"role": "user", "content": content}]})
    }

    #[test]
    fn anthropic_bills_only_what_breakpoints_write_and_read() {
        let cache = AnthropicCache::default();
        // No breakpoint: nothing is cached, ever.
        let plain = anthropic(8000, false, 3, &[]);
        for _ in 0..2 {
            let bill = cache.bill(&plain, 1024).unwrap();
            assert_eq!((bill.cache_read_tokens, bill.cache_creation_tokens), (0, 0));
        }
        // A breakpoint on the system prompt writes it once, then reads it.
        let first = cache.bill(&anthropic(8000, true, 3, &[]), 1024).unwrap();
        assert!(first.cache_creation_tokens > 2000, "{first:?}");
        assert_eq!(first.cache_read_tokens, 0);
        let again = cache.bill(&anthropic(8000, true, 3, &[2]), 1024).unwrap();
        assert_eq!(again.cache_read_tokens, first.cache_creation_tokens);
        // ... and the breakpoint on the last block writes the rest of the prompt.
        assert_eq!(again.uncached_tokens(), 0, "{again:?}");
        // The next request reads all that from a breakpoint further on: the marker is no part
        // of the prefix, moving it keeps the hit.
        let next = cache.bill(&anthropic(8000, true, 5, &[4]), 1024).unwrap();
        assert_eq!(next.cache_read_tokens, again.prompt_tokens);
        assert!(
            next.billed_tokens() < 0.2 * next.prompt_tokens as f64,
            "{next:?}"
        );
    }

    #[test]
    fn anthropic_caches_nothing_below_the_minimum_and_looks_back_20_blocks() {
        let cache = AnthropicCache::default();
        let short = cache.bill(&anthropic(400, true, 2, &[1]), 1024).unwrap();
        assert_eq!(
            (short.cache_read_tokens, short.cache_creation_tokens),
            (0, 0),
            "below 1,024 tokens nothing is written"
        );
        // Written at block 0; a breakpoint 20 blocks later finds it, 21 blocks later does not.
        cache.bill(&anthropic(8000, false, 1, &[0]), 1024).unwrap();
        let near = cache
            .bill(&anthropic(8000, false, 21, &[20]), 1024)
            .unwrap();
        assert!(near.cache_read_tokens > 2000, "{near:?}");
        let cache = AnthropicCache::default();
        cache.bill(&anthropic(8000, false, 1, &[0]), 1024).unwrap();
        let far = cache
            .bill(&anthropic(8000, false, 22, &[21]), 1024)
            .unwrap();
        assert_eq!(far.cache_read_tokens, 0, "{far:?}");
        assert_eq!(far.cache_creation_tokens, far.prompt_tokens);
    }

    #[test]
    fn anthropic_refuses_what_the_api_refuses() {
        let cache = AnthropicCache::default();
        let five = anthropic(100, true, 5, &[0, 1, 2, 3]);
        let err = cache.bill(&five, 1024).unwrap_err();
        assert!(err.contains("A maximum of 4 blocks"), "{err}");
        let mut bad_ttl = anthropic(100, true, 1, &[]);
        bad_ttl["system"][0]["cache_control"]["ttl"] = "2h".into();
        assert!(cache.bill(&bad_ttl, 1024).unwrap_err().contains("ttl"));
        let mut one_hour = anthropic(8000, true, 1, &[]);
        one_hour["system"][0]["cache_control"]["ttl"] = "1h".into();
        let bill = cache.bill(&one_hour, 1024).unwrap();
        assert_eq!(bill.cache_creation_1h_tokens, bill.cache_creation_tokens);
        assert!(bill.billed_tokens() > 1.9 * bill.cache_creation_tokens as f64);
    }
}
