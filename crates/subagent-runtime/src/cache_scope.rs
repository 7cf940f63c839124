//! Each run's [`CacheScope`]: the conversation its requests belong to, for the provider's
//! prompt cache (OpenAI's `prompt_cache_key`, llama.cpp's slots, Anthropic's breakpoints).
//!
//! A run's key is derived from its session id (so a resumed session keeps its key) by a hash
//! that does not give the id away; a fork has its caller's key (it continues its caller's
//! conversation, and its first request repeats the caller's last one). The run puts its scope
//! into the context of its tool calls, so the runs they start name it as their parent.

use std::hash::{Hash, Hasher};

use subagent_spi::{CacheScope, TaskContext};

/// The scope of the run whose tool calls a context belongs to (an extension of their context).
pub(crate) struct CallerScope(pub(crate) CacheScope);

/// How a fork's run starts: its caller's scope and the number of messages of the caller's last
/// request, which the fork's first request repeats.
#[derive(Clone)]
pub(crate) struct ForkStart {
    pub(crate) scope: CacheScope,
    pub(crate) continues: usize,
}

/// The key of the run with session `session_id`: `sa-` and 32 hex digits of two hashes of
/// the id (the same in every run of this build; not the id).
fn key_of(session_id: &str) -> String {
    let hash = |salt: &str| {
        let mut h = std::hash::DefaultHasher::new();
        salt.hash(&mut h);
        session_id.hash(&mut h);
        h.finish()
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut key = String::with_capacity(35);
    key.push_str("sa-");
    for h in [hash("subagents prompt cache"), hash("key")] {
        for shift in (0..16).rev() {
            key.push(char::from(HEX[((h >> (shift * 4)) & 0xf) as usize]));
        }
    }
    key
}

/// The scope of a new (or resumed) run with session `session_id`, started from `ctx`.
pub(crate) fn for_run(session_id: &str, ctx: &TaskContext) -> CacheScope {
    let scope = CacheScope::new(key_of(session_id));
    match ctx.extensions().get::<CallerScope>() {
        Some(caller) => scope.with_parent(caller.0.key.clone()),
        None => scope,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_per_session_and_do_not_show_it() {
        let a = key_of("sess_0123456789abcdef0123456789abcdef");
        assert_eq!(a, key_of("sess_0123456789abcdef0123456789abcdef"));
        assert_ne!(a, key_of("sess_0123456789abcdef0123456789abcdee"));
        assert!(a.starts_with("sa-") && a.len() == 35, "{a}");
        assert!(!a.contains("0123456789abcdef"));
        let root = for_run("sess_1", &TaskContext::new());
        assert_eq!(root.parent, None);
        let child_ctx = TaskContext::new()
            .with_extension(CallerScope(root.clone()))
            .child("c", None);
        assert_eq!(for_run("sess_2", &child_ctx).parent, Some(root.key));
    }
}
