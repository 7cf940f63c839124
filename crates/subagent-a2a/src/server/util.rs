//! Small helpers: ids and timestamps.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A random UUID-v4-shaped id: a per-process random key mixed with a counter (splitmix64),
/// so ids are unique within the process and unpredictable across processes.
pub(crate) fn new_id() -> String {
    static KEY: OnceLock<(u64, u64)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    let (k1, k2) = *KEY.get_or_init(|| {
        let s = std::collections::hash_map::RandomState::new();
        let mut a = s.build_hasher();
        a.write_u64(0x5eed);
        if let Ok(d) = SystemTime::now().duration_since(UNIX_EPOCH) {
            a.write_u128(d.as_nanos());
        }
        let mut b = s.build_hasher();
        b.write_u64(0xfeed);
        b.write_u32(std::process::id());
        (a.finish(), b.finish())
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let hi = mix(n ^ k1);
    let lo = mix(n.wrapping_add(k2) ^ hi);
    // UUID v4 layout: version nibble 4 at bits 76..80, variant bits 10 at 62..64.
    let hi = (hi & !(0xF << 12)) | (0x4 << 12);
    let lo = (lo & !(0x3 << 62)) | (0x2 << 62);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [b'-'; 36];
    // Byte positions of the 32 hex digits, skipping the hyphens at 8, 13, 18 and 23.
    let put = |buf: &mut [u8; 36], word: u64, first_digit: usize| {
        for i in 0..16 {
            let d = first_digit + i;
            let at = d
                + usize::from(d >= 8)
                + usize::from(d >= 12)
                + usize::from(d >= 16)
                + usize::from(d >= 20);
            buf[at] = HEX[((word >> (60 - 4 * i)) & 0xF) as usize];
        }
    };
    put(&mut buf, hi, 0);
    put(&mut buf, lo, 16);
    // Only ASCII hex digits and hyphens were written.
    std::str::from_utf8(&buf).unwrap_or_default().to_owned()
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The current time as an ISO 8601 UTC timestamp with milliseconds
/// (`2026-01-02T03:04:05.678Z`), the ProtoJSON form of `google.protobuf.Timestamp`.
pub(crate) fn now_rfc3339() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_rfc3339(d.as_secs(), d.subsec_millis())
}

/// Formats seconds since the epoch (+ milliseconds) as ISO 8601 UTC.
pub(crate) fn format_rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Compares two byte strings in time independent of where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid_shaped_and_distinct() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        for (i, c) in a.bytes().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                assert_eq!(c, b'-', "{a}");
            } else {
                assert!(c.is_ascii_hexdigit() && !c.is_ascii_uppercase(), "{a}");
            }
        }
        assert_eq!(a.as_bytes()[14], b'4');
        assert!(matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
    }

    #[test]
    fn timestamps_format_known_instants() {
        assert_eq!(format_rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(1_709_210_096, 7), "2024-02-29T12:34:56.007Z");
        assert!(now_rfc3339().ends_with('Z'));
    }

    #[test]
    fn constant_time_eq_compares_content() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
