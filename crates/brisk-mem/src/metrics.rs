//! Counters of the memory layer, kept in relaxed atomics so they can stay on in production: updating
//! one is a single uncontended atomic instruction next to work that already takes a lock.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A point-in-time snapshot of a [`MemoryBudget`](crate::MemoryBudget) and of every
/// [`BufferPool`](crate::BufferPool) drawing from it.
///
/// The fields are read one by one without a common lock, so a snapshot taken while other threads work
/// can be off by the operations that ran during the read; each field on its own is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryMetrics {
    /// The budget's cap in bytes.
    pub capacity: usize,
    /// Bytes reserved now: buffers in use plus blocks cached on pool free lists.
    pub reserved_bytes: usize,
    /// The highest `reserved_bytes` ever reached. Never above `capacity`.
    pub peak_reserved_bytes: usize,
    /// Requests queued now, waiting for bytes.
    pub waiting: usize,
    /// Requests that could not be served at once and had to queue (since the budget was created).
    pub waits: u64,
    /// Blocks the pools allocated fresh from the system allocator.
    pub pool_blocks_allocated: u64,
    /// Block requests served from a free list, without allocating.
    pub pool_hits: u64,
    /// Blocks the pools gave back to the system allocator (free list full, memory needed elsewhere, or
    /// trimmed).
    pub pool_blocks_freed: u64,
    /// Bytes held by blocks cached on free lists (counted in `reserved_bytes` too).
    pub pool_cached_bytes: usize,
    /// Bytes of freed exact buffers kept resident for the next one (counted in `reserved_bytes`
    /// too; see [`MemoryBudget::set_kept_limit`](crate::MemoryBudget::set_kept_limit)).
    pub kept_bytes: usize,
    /// Exact buffers made from a kept mapping instead of fresh memory.
    pub kept_reuses: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) reserved: AtomicUsize,
    pub(crate) peak_reserved: AtomicUsize,
    pub(crate) waiting: AtomicUsize,
    pub(crate) waits: AtomicU64,
    pub(crate) pool_blocks_allocated: AtomicU64,
    pub(crate) pool_hits: AtomicU64,
    pub(crate) pool_blocks_freed: AtomicU64,
    pub(crate) pool_cached_bytes: AtomicUsize,
    pub(crate) kept_bytes: AtomicUsize,
    pub(crate) kept_reuses: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self, capacity: usize) -> MemoryMetrics {
        MemoryMetrics {
            capacity,
            reserved_bytes: self.reserved.load(Ordering::Relaxed),
            peak_reserved_bytes: self.peak_reserved.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            pool_blocks_allocated: self.pool_blocks_allocated.load(Ordering::Relaxed),
            pool_hits: self.pool_hits.load(Ordering::Relaxed),
            pool_blocks_freed: self.pool_blocks_freed.load(Ordering::Relaxed),
            pool_cached_bytes: self.pool_cached_bytes.load(Ordering::Relaxed),
            kept_bytes: self.kept_bytes.load(Ordering::Relaxed),
            kept_reuses: self.kept_reuses.load(Ordering::Relaxed),
        }
    }
}
