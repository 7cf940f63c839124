//! A provider's prompt cache, as the scripted model server can imitate it: a request's prompt
//! is cut into segments (the model, the tool list, the system prompt, each message, in the
//! order a provider renders them), and the leading segments that are byte-identical to the
//! leading segments of an earlier request are "read from cache", as OpenAI's automatic prompt
//! caching (and Anthropic's prefix lookup) serve them.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};

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
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
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
}
