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
//!
//! This module is the one place where a failure's fate is decided: `RetryPolicy::after_failure`
//! (tried again after a wait, or final), `RetryContext` (one operation's count of failed attempts,
//! used by the request path, the resuming GET and [`ObjectStream`](crate::ObjectStream)), and
//! `is_stale_reuse` (a kept-alive connection the server had closed, which is resent at once and
//! not counted). The pipelined lane keeps its count in each queued request and asks the same
//! `RetryPolicy::after_failure`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use brisk_wire::http::HttpError;

use crate::Error;

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

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryDecision {
    /// Try again after this wait.
    RetryAfter(Duration),
    /// The failure is final: the error cannot change by trying again (`exhausted: false`), or the
    /// policy's attempts are spent (`exhausted: true`).
    GiveUp { exhausted: bool },
}

impl RetryPolicy {
    /// The decision after `failures` failed attempts (this one included) whose last failure is
    /// `retryable`. A policy of 0 attempts behaves as 1: the first attempt is always made.
    pub(crate) fn after_failure(&self, failures: u32, retryable: bool) -> RetryDecision {
        if !retryable {
            return RetryDecision::GiveUp { exhausted: false };
        }
        if failures >= self.max_attempts.max(1) {
            return RetryDecision::GiveUp { exhausted: true };
        }
        RetryDecision::RetryAfter(self.backoff(failures))
    }
}

/// One operation's attempts against a [`RetryPolicy`].
#[derive(Debug, Clone)]
pub(crate) struct RetryContext {
    policy: RetryPolicy,
    failures: u32,
}

impl RetryContext {
    pub(crate) fn new(policy: RetryPolicy) -> Self {
        Self {
            policy,
            failures: 0,
        }
    }

    /// The attempt under way, 1-based.
    pub(crate) fn attempt(&self) -> u32 {
        self.failures + 1
    }

    /// Counts a failed attempt that ended with `error` and decides what follows.
    pub(crate) fn failed(&mut self, error: &Error) -> RetryDecision {
        self.failures = self.failures.saturating_add(1);
        self.policy
            .after_failure(self.failures, error.is_retryable())
    }
}

/// Whether a failed exchange only shows that a kept-alive connection had died while idle: the
/// connection was `reused`, nothing of a response arrived (`answered` is false), and the failure is
/// the connection's (closed before any byte of the head, or an I/O error). Such a request is resent
/// at once on a new connection without counting an attempt: it is not the server failing, and
/// servers close idle connections whenever they like.
pub(crate) fn is_stale_reuse(reused: bool, answered: bool, error: &HttpError) -> bool {
    reused
        && !answered
        && matches!(
            error,
            HttpError::IncompleteHead { received: 0 } | HttpError::Io(_)
        )
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
    fn the_decision_counts_attempts_and_respects_final_errors() {
        let p = RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        };
        assert_eq!(
            p.after_failure(1, true),
            RetryDecision::RetryAfter(Duration::ZERO)
        );
        assert_eq!(
            p.after_failure(2, true),
            RetryDecision::RetryAfter(Duration::ZERO)
        );
        assert_eq!(
            p.after_failure(3, true),
            RetryDecision::GiveUp { exhausted: true }
        );
        assert_eq!(
            p.after_failure(1, false),
            RetryDecision::GiveUp { exhausted: false }
        );
        // 0 attempts is read as 1: no retries, never a division of the first attempt.
        let none = RetryPolicy {
            max_attempts: 0,
            ..p
        };
        assert_eq!(
            none.after_failure(1, true),
            RetryDecision::GiveUp { exhausted: true }
        );
    }

    #[test]
    fn a_context_counts_its_own_failures() {
        let mut context = RetryContext::new(RetryPolicy {
            max_attempts: 2,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        });
        let retryable = Error::Http(HttpError::IncompleteHead { received: 0 });
        assert_eq!(context.attempt(), 1);
        assert!(matches!(
            context.failed(&retryable),
            RetryDecision::RetryAfter(_)
        ));
        assert_eq!(context.attempt(), 2);
        assert_eq!(
            context.failed(&retryable),
            RetryDecision::GiveUp { exhausted: true }
        );
    }

    #[test]
    fn only_a_reused_unanswered_connection_failure_is_stale() {
        let closed = HttpError::IncompleteHead { received: 0 };
        let io = HttpError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(is_stale_reuse(true, false, &closed));
        assert!(is_stale_reuse(true, false, &io));
        assert!(!is_stale_reuse(false, false, &closed), "a new connection");
        assert!(!is_stale_reuse(true, true, &closed), "it had answered");
        assert!(!is_stale_reuse(
            true,
            false,
            &HttpError::IncompleteHead { received: 10 }
        ));
        assert!(!is_stale_reuse(
            true,
            false,
            &HttpError::InvalidContentLength
        ));
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
