//! Counters a client keeps about its own work, read with [`Client::metrics`](crate::Client::metrics).
//! Relaxed atomics: each is one uncontended add next to a system call.

use std::sync::atomic::{AtomicU64, Ordering};

/// The live counters (shared by a client and its connection pool).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connections_opened: AtomicU64,
    pub(crate) connections_reused: AtomicU64,
    pub(crate) connections_discarded: AtomicU64,
    pub(crate) requests_sent: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) resumed_reads: AtomicU64,
    pub(crate) file_bytes_read: AtomicU64,
    pub(crate) file_bytes_sent: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_bytes(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ClientMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClientMetrics {
            connections_opened: get(&self.connections_opened),
            connections_reused: get(&self.connections_reused),
            connections_discarded: get(&self.connections_discarded),
            requests_sent: get(&self.requests_sent),
            retries: get(&self.retries),
            resumed_reads: get(&self.resumed_reads),
            file_bytes_read: get(&self.file_bytes_read),
            file_bytes_sent: get(&self.file_bytes_sent),
        }
    }
}

/// A snapshot of a client's counters since it was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientMetrics {
    /// TCP connections opened.
    pub connections_opened: u64,
    /// Requests sent on a kept-alive connection instead of a new one.
    pub connections_reused: u64,
    /// Idle connections dropped because they were too old or the server had closed them.
    pub connections_discarded: u64,
    /// Requests sent, retries included.
    pub requests_sent: u64,
    /// Attempts made after a retryable failure.
    pub retries: u64,
    /// Reads continued with a ranged, `If-Match`-pinned request after the connection failed mid-body.
    pub resumed_reads: u64,
    /// Bytes of upload bodies read from files into memory by the client (each byte once, to take
    /// its checksum, when the body then goes out with `sendfile`; retries read again).
    pub file_bytes_read: u64,
    /// Bytes of upload bodies the kernel sent from files with `sendfile`, never entering the
    /// client's memory.
    pub file_bytes_sent: u64,
}
