//! Small helpers: ids and timestamps.

// The constant-time comparison serves the server, the ids the server and the client;
// `task-store` alone uses the clock.
#![cfg_attr(not(feature = "server"), allow(dead_code))]
// `now_rfc3339` is re-exported by `server` and `task_store`; the client alone has no use for it.
#![cfg_attr(not(feature = "task-store"), allow(unreachable_pub))]

use std::time::{SystemTime, UNIX_EPOCH};

/// A time-ordered UUID (version 7: the Unix time in milliseconds, then 74 random bits), the
/// A2A ids of tasks, contexts, messages and artifacts: the crate's one id generator, for the
/// server's ids and for the messages the client sends.
///
/// Time-ordered rather than fully random (v4) so that a durable task store inserts new tasks
/// at the end of its indexes on `id` and `context_id` instead of into random B-tree pages
/// (one or two pages written per batch of new tasks instead of one per task). The 74 random
/// bits (a v4 UUID's) keep ids unguessable; ids made in the same millisecond are not ordered
/// among themselves, which is fine for an index.
pub(crate) fn new_id() -> String {
    let random = uuid::Uuid::new_v4();
    let mut tail = [0u8; 10];
    tail.copy_from_slice(&random.as_bytes()[6..]);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    // Encoded straight into a stack buffer (the same lower-case hyphenated text as
    // `to_string`, without the formatting machinery): two ids per direct reply.
    let mut buf = uuid::Uuid::encode_buffer();
    uuid::Builder::from_unix_timestamp_millis(ms, &tail)
        .into_uuid()
        .hyphenated()
        .encode_lower(&mut buf)
        .to_owned()
}

/// The current time as an ISO 8601 UTC timestamp with milliseconds
/// (`2026-01-02T03:04:05.678Z`), the ProtoJSON form of `google.protobuf.Timestamp`.
pub fn now_rfc3339() -> String {
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
        assert_eq!(a.as_bytes()[14], b'7');
        assert!(matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
    }

    #[test]
    fn ids_are_time_ordered_across_milliseconds() {
        let a = new_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id();
        assert!(a < b, "{a} then {b}");
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let ts = uuid::Uuid::parse_str(&b)
            .unwrap()
            .get_timestamp()
            .unwrap()
            .to_unix();
        let ms = ts.0 * 1000 + u64::from(ts.1) / 1_000_000;
        assert!(now.abs_diff(ms) < 60_000, "{b}: {ms} vs {now}");
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
