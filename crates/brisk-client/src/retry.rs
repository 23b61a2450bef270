//! Bounded retries with exponential backoff and full jitter.
//!
//! What is retried is decided by [`Error::is_retryable`](crate::Error::is_retryable): throttling
//! (`SlowDown`, 503), server errors (500, 502, 504, `InternalError`), `RequestTimeout`, and transport
//! failures (reset, refused, timed out, closed early). Everything else (a missing key, a denied request,
//! a bad signature) fails at once: trying again cannot change the answer.
//!
//! The wait before attempt `n + 1` is a uniformly random duration in
//! `0 ..= min(max_backoff, initial_backoff × 2ⁿ⁻¹)` ("full jitter", as in the AWS SDKs' standard mode),
//! so clients that failed together do not retry together.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Attempts per request, the first included: 3, the AWS SDKs' standard-mode default.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// Upper bound of the first backoff: 100 ms. Long enough for a throttled S3 prefix to recover its
/// budget of requests, short enough that a transient reset costs little.
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(100);

/// Cap on one backoff: 20 s, the AWS SDKs' standard-mode maximum.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(20);

/// How often and how patiently a failed request is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retries).
    pub max_attempts: u32,
    /// Upper bound of the first backoff; doubled for each further attempt.
    pub initial_backoff: Duration,
    /// Cap on any single backoff.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The ceiling of the wait after failed attempt `attempt` (1-based).
    pub fn backoff_ceiling(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(30);
        self.initial_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff)
    }

    /// The wait after failed attempt `attempt` (1-based): uniform in `0..=backoff_ceiling(attempt)`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let ceiling = self.backoff_ceiling(attempt);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(jitter() % (nanos + 1))
    }
}

/// A pseudo-random 64-bit value (SplitMix64 over a process-wide counter seeded from the clock). Jitter
/// needs spread, not unpredictability, so no random-number crate is pulled in for it.
fn jitter() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut seed = STATE.load(Ordering::Relaxed);
    if seed == 0 {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        seed = now | 1;
        STATE.store(seed, Ordering::Relaxed);
    }
    let mut z = STATE
        .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_double_up_to_the_cap() {
        let p = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        assert_eq!(p.backoff_ceiling(1), Duration::from_millis(100));
        assert_eq!(p.backoff_ceiling(2), Duration::from_millis(200));
        assert_eq!(p.backoff_ceiling(4), Duration::from_millis(800));
        assert_eq!(p.backoff_ceiling(5), Duration::from_secs(1));
        assert_eq!(p.backoff_ceiling(u32::MAX), Duration::from_secs(1));
    }

    #[test]
    fn backoffs_stay_under_the_ceiling_and_spread() {
        let p = RetryPolicy::default();
        let samples: Vec<Duration> = (0..200).map(|_| p.backoff(2)).collect();
        assert!(samples.iter().all(|d| *d <= p.backoff_ceiling(2)));
        let distinct: std::collections::HashSet<_> = samples.iter().collect();
        assert!(
            distinct.len() > 150,
            "jitter does not spread: {}",
            distinct.len()
        );
        let mean = samples.iter().sum::<Duration>() / 200;
        assert!(
            mean > Duration::from_millis(60) && mean < Duration::from_millis(140),
            "{mean:?}"
        );
    }

    #[test]
    fn zero_backoff_is_zero() {
        let p = RetryPolicy {
            initial_backoff: Duration::ZERO,
            ..RetryPolicy::default()
        };
        assert_eq!(p.backoff(3), Duration::ZERO);
    }
}
