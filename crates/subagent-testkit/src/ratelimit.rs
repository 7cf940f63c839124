//! The scripted model server's rate limits: how it answers `429` before taking a reply from the
//! script, as a provider (or a gateway in front of a local server) does under load.

use std::time::Duration;

/// How the [`ScriptedModelServer`](crate::ScriptedModelServer) rate-limits requests (see
/// [`set_rate_limit`](crate::ScriptedModelServer::set_rate_limit)).
///
/// A request it refuses is answered `429` with the provider's error body and a `Retry-After`
/// header (whole seconds, rounded up; plus `retry-after-ms` when the wait is not a whole number
/// of seconds). It is recorded like any other request but takes no reply from the script, so a
/// client that retries gets the reply the refused attempt would have had.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RateLimit {
    /// At most `max` requests are answered at once (from arrival to the end of their reply's
    /// delay); a request arriving while `max` are in flight is refused.
    InFlight {
        /// Requests answered at once.
        max: usize,
        /// The wait the 429 asks for.
        retry_after: Duration,
    },
    /// Each request is refused with probability `rate`, drawn from a generator seeded with
    /// `seed` (the n-th request to arrive gets the n-th draw, so a run is repeatable up to the
    /// order in which concurrent requests arrive).
    Random {
        /// The share of requests refused, from 0 to 1.
        rate: f64,
        /// The generator's seed.
        seed: u64,
        /// The wait the 429 asks for.
        retry_after: Duration,
    },
}

impl RateLimit {
    /// At most `max` requests in flight; the rest are refused with `retry_after`.
    pub fn in_flight(max: usize, retry_after: Duration) -> Self {
        Self::InFlight { max, retry_after }
    }

    /// A share `rate` (0 to 1) of requests refused at random with `retry_after`, from `seed`.
    pub fn random(rate: f64, seed: u64, retry_after: Duration) -> Self {
        Self::Random {
            rate: rate.clamp(0.0, 1.0),
            seed,
            retry_after,
        }
    }

    /// The wait a refusal asks for.
    pub(crate) fn retry_after(&self) -> Duration {
        match self {
            Self::InFlight { retry_after, .. } | Self::Random { retry_after, .. } => *retry_after,
        }
    }

    /// The headers of a refusal: `retry-after` in whole seconds (rounded up), and
    /// `retry-after-ms` when that is not exact.
    pub(crate) fn headers(&self) -> Vec<(String, String)> {
        let wait = self.retry_after();
        let ms = wait.as_millis();
        let secs = ms.div_ceil(1000);
        let mut h = vec![("retry-after".to_string(), secs.to_string())];
        if !ms.is_multiple_of(1000) {
            h.push(("retry-after-ms".to_string(), ms.to_string()));
        }
        h
    }
}

/// The `n`-th draw from `seed`, in [0, 1): the first number of a generator (`fastrand`'s, the
/// one the providers' jitter uses) seeded with `seed`'s own first number and `n`.
pub(crate) fn draw(seed: u64, n: u64) -> f64 {
    let first = fastrand::Rng::with_seed(seed).u64(..);
    fastrand::Rng::with_seed(first ^ n).f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_repeatable_and_near_the_rate() {
        let refused = (0..10_000).filter(|&n| draw(7, n) < 0.5).count();
        assert!((4_500..5_500).contains(&refused), "{refused}");
        assert_eq!(draw(7, 3), draw(7, 3));
        assert_ne!(draw(7, 3), draw(8, 3));
    }

    #[test]
    fn headers_round_up_and_add_milliseconds_when_inexact() {
        let h = RateLimit::in_flight(1, Duration::from_secs(1)).headers();
        assert_eq!(h, [("retry-after".to_string(), "1".to_string())]);
        let h = RateLimit::random(0.5, 1, Duration::from_millis(250)).headers();
        assert_eq!(h[0].1, "1");
        assert_eq!(h[1], ("retry-after-ms".to_string(), "250".to_string()));
    }
}
