//! The providers' rate-limit headers: when one says a limit is used up, how long until it
//! resets.
//!
//! - OpenAI: `x-ratelimit-remaining-{requests,tokens}` with `x-ratelimit-reset-{requests,tokens}`
//!   as a duration (`1s`, `6m0s`, `20ms`, `1h2m3.5s`);
//! - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining`
//!   with `...-reset` as an RFC 3339 time (`2025-01-01T00:00:05Z`).
//!
//! Only a limit at 0 counts; the caller caps the wait (a server's header cannot make a call
//! wait past `RetryPolicy::max_retry_after`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

/// OpenAI's (remaining, reset) header pairs.
const OPENAI: [(&str, &str); 2] = [
    (
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
    ),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
];

/// Anthropic's limits, each with `-remaining` and `-reset`.
const ANTHROPIC: [&str; 4] = [
    "anthropic-ratelimit-requests",
    "anthropic-ratelimit-tokens",
    "anthropic-ratelimit-input-tokens",
    "anthropic-ratelimit-output-tokens",
];

/// How long until the longest of the used-up limits resets, when the headers say one is used
/// up (remaining 0) and when; `None` otherwise.
pub(crate) fn exhausted_for(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let used_up = |name: &str| text(name).and_then(|v| v.parse::<f64>().ok()) == Some(0.0);
    let mut longest: Option<Duration> = None;
    let mut note = |d: Option<Duration>| {
        if let Some(d) = d {
            longest = Some(longest.map_or(d, |l| l.max(d)));
        }
    };
    for (remaining, reset) in OPENAI {
        if used_up(remaining) {
            note(text(reset).and_then(parse_duration));
        }
    }
    for limit in ANTHROPIC {
        if used_up(&format!("{limit}-remaining")) {
            note(
                text(&format!("{limit}-reset"))
                    .and_then(parse_rfc3339)
                    .map(|at| at.duration_since(now).unwrap_or(Duration::ZERO)),
            );
        }
    }
    longest
}

/// A Go-style duration (`1s`, `6m0s`, `1h2m3.5s`, `20ms`, `1.5µs`) or plain seconds (`2`,
/// `0.5`); `None` when malformed or not finite.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return seconds(secs);
    }
    let mut total = 0.0f64;
    let mut rest = t;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    seconds(total)
}

fn seconds(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)))
}

/// An RFC 3339 time (`2025-01-01T00:00:05Z`, `...05.5+01:00`); `None` when malformed.
pub(crate) fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let t = text.trim().as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = std::str::from_utf8(t.get(from..from + len)?).ok()?;
        s.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if t.get(4) != Some(&b'-')
        || t.get(7) != Some(&b'-')
        || !matches!(t.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (hour, min, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if t.get(13) != Some(&b':') || t.get(16) != Some(&b':') {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac = 0.0f64;
    if t.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while t.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        frac = std::str::from_utf8(&t[start - 1..i]).ok()?.parse().ok()?;
    }
    let offset = match t.get(i) {
        Some(b'Z' | b'z') if i + 1 == t.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == t.len() && t.get(i + 3) == Some(&b':') => {
            let m = num(i + 1, 2)? * 60 + num(i + 4, 2)?;
            if *sign == b'+' { m * 60 } else { -m * 60 }
        }
        _ => return None,
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec - offset;
    let secs = u64::try_from(secs).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_secs_f64(frac))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.insert(
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn go_durations_and_seconds() {
        assert_eq!(parse_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(
            parse_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(parse_duration("0.5"), Some(Duration::from_millis(500)));
        for bad in ["", "s", "5x", "-1s", "1e400", "1s2"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn rfc3339_times() {
        let t = |s| parse_rfc3339(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64());
        assert_eq!(t("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(t("2025-01-01T00:00:05Z"), Some(1_735_689_605.0));
        assert_eq!(t("2025-01-01T01:00:05+01:00"), Some(1_735_689_605.0));
        assert_eq!(t("2025-01-01T00:00:05.5Z"), Some(1_735_689_605.5));
        assert_eq!(t("2024-02-29T12:00:00Z"), Some(1_709_208_000.0));
        for bad in [
            "",
            "2025-13-01T00:00:00Z",
            "2025-01-01",
            "2025-01-01T00:00:00",
            "soon",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_a_used_up_limit_pauses_and_the_longest_reset_wins() {
        let now = UNIX_EPOCH + Duration::from_secs(1_735_689_600);
        let h = headers(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "2s"),
            ("x-ratelimit-remaining-tokens", "1000"),
            ("x-ratelimit-reset-tokens", "9s"),
        ]);
        assert_eq!(exhausted_for(&h, now), Some(Duration::from_secs(2)));
        let h = headers(&[
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2025-01-01T00:00:05Z"),
            ("anthropic-ratelimit-input-tokens-remaining", "0"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2025-01-01T00:00:07Z",
            ),
        ]);
        assert_eq!(exhausted_for(&h, now), Some(Duration::from_secs(7)));
        let h = headers(&[
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2024-12-31T23:59:00Z"),
        ]);
        assert_eq!(
            exhausted_for(&h, now),
            Some(Duration::ZERO),
            "already reset"
        );
        let h = headers(&[("x-ratelimit-remaining-requests", "3")]);
        assert_eq!(exhausted_for(&h, now), None);
        assert_eq!(exhausted_for(&HeaderMap::new(), now), None);
    }
}
