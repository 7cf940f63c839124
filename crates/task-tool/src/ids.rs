//! Unique, unguessable-enough ids without a random-number crate.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(1);

fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0),
        );
        h.finish()
    })
}

/// A fresh id `prefix_` + 16 hex digits. Distinct within a process (a bijection of a counter).
pub(crate) fn new_id(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // Multiplying by an odd constant and xoring a seed are both bijections on u64.
    let mixed = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed();
    format!("{prefix}_{mixed:016x}")
}
