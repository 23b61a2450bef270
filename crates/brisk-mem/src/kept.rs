//! Freed exact buffers kept resident, under the budget, for the next exact buffer.
//!
//! # Why
//!
//! A large [`ExactBuf`](crate::ExactBuf) is a fresh anonymous mapping, and making fresh memory
//! resident is most of what an in-memory GET costs: on the VMs brisk is measured on, about 0.4 CPU s
//! per GiB to populate in 4 KiB pages, against 0.17 for the socket's copy into memory that is resident
//! already (BENCHMARKS-log.md, "In-memory GET buffer"). A process that reads many large objects one after
//! another (a data loader's shards, checkpoints) frees one buffer and maps the next of about the same
//! size moments later; every peer's allocator does the same (glibc maps anything above 32 MiB afresh).
//! Keeping the freed mapping and handing it to the next buffer that fits leaves the copy alone.
//!
//! # The bounds
//!
//! - A kept mapping **stays reserved** on its budget, as a pool's cached blocks do: the budget still
//!   bounds what the process holds. When a request would wait, the budget frees kept mappings first
//!   ([`KeptMappings::reclaim`]); while requests wait, freed buffers are not kept.
//! - A kept mapping serves a buffer it is at most a quarter longer than ([`MAX_SLACK_DIVISOR`]),
//!   and the buffer's reservation is the mapping's whole length, since all of it may be resident: a
//!   1 GiB mapping does not hold 1 GiB of the budget for a 2 MiB buffer.
//! - A buffer that has to be mapped afresh frees the kept mappings smaller than itself: reads that
//!   grow (shards, then a checkpoint) do not hold their old buffers beside the new one.
//! - At most [`MAX_KEPT`] mappings and the budget's kept limit in bytes (by default its capacity;
//!   [`MemoryBudget::set_kept_limit`](crate::MemoryBudget::set_kept_limit)), oldest freed first.
//! - A mapping not taken again within [`KEPT_IDLE`] is freed by a background thread (one per budget
//!   while it keeps anything, see [`watch`]), so an idle process gives the memory back, as
//!   allocators with a decay time do (jemalloc's is 10 s too).
//!
//! A kept mapping holds the bytes of the buffer it was: only
//! [`ExactBuf::for_overwrite`](crate::ExactBuf::for_overwrite), whose caller writes every byte it
//! hands on, takes one.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::budget::BudgetInner;
use crate::mapping::AnonMapping;

/// How long a freed buffer's mapping is kept for reuse before it is given back to the kernel.
pub const KEPT_IDLE: Duration = Duration::from_secs(10);

/// The most freed buffers a budget keeps at once. Enough for a batch of large ranges read again
/// (Python's `get_ranges` gives each range above 8 MiB a buffer of its own): 32 ranges of 16 MiB,
/// read five times in one process, cost 0.40–0.43 CPU s/GiB with 8 kept and 0.20–0.21 with 64
/// (BENCHMARKS-log.md). Finding one is a scan of at most this many.
pub const MAX_KEPT: usize = 64;

/// A kept mapping serves buffers it is at most this fraction longer than (a quarter of theirs).
pub(crate) const MAX_SLACK_DIVISOR: usize = 4;

/// One freed buffer's mapping, its bytes still reserved.
struct Kept {
    map: AnonMapping,
    /// Bytes still reserved for it on the budget: its capacity.
    reserved: usize,
    freed_at: Instant,
}

/// The mappings a budget keeps, oldest first.
pub(crate) struct KeptMappings {
    entries: Vec<Kept>,
    /// Sum of `reserved` over `entries`.
    bytes: usize,
    /// The most bytes kept at once; 0 keeps nothing.
    limit: usize,
}

impl KeptMappings {
    pub(crate) fn new(limit: usize) -> Self {
        KeptMappings {
            // One over: `keep` pushes before `over_limit` takes the oldest out, and keeping a
            // buffer allocates nothing.
            entries: Vec::with_capacity(MAX_KEPT + 1),
            bytes: 0,
            limit,
        }
    }

    /// Bytes kept now (all of them reserved on the budget).
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// Whether a mapping of `len` bytes may be kept at all.
    pub(crate) fn accepts(&self, len: usize) -> bool {
        len <= self.limit
    }

    /// Keep `map` (shown at its full capacity again), paid for by `reserved` bytes that stay
    /// reserved. The caller then frees what [`remove_over_limit`](Self::remove_over_limit) takes
    /// out, outside the lock.
    pub(crate) fn keep(&mut self, mut map: AnonMapping, reserved: usize) {
        map.set_len(map.capacity());
        self.bytes += reserved;
        self.entries.push(Kept {
            map,
            reserved,
            freed_at: Instant::now(),
        });
    }

    /// Remove the oldest mappings while more are kept than the limits allow, handing each to
    /// `free`; returns their reserved bytes.
    pub(crate) fn remove_over_limit(&mut self, mut free: impl FnMut(AnonMapping)) -> usize {
        let mut released = 0;
        while self.entries.len() > MAX_KEPT || self.bytes > self.limit {
            let (map, reserved) = self.remove(0);
            free(map);
            released += reserved;
        }
        released
    }

    /// The smallest kept mapping of at least `len` bytes and at most a quarter more, showing `len`
    /// bytes, and how many bytes it has reserved (its capacity).
    pub(crate) fn take(&mut self, len: usize) -> Option<(AnonMapping, usize)> {
        let most = len.saturating_add(len / MAX_SLACK_DIVISOR);
        let index = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, kept)| (len..=most).contains(&kept.map.capacity()))
            .min_by_key(|(_, kept)| kept.map.capacity())
            .map(|(index, _)| index)?;
        let (mut map, reserved) = self.remove(index);
        map.set_len(len);
        Some((map, reserved))
    }

    /// Give back at least `wanted` reserved bytes if that many are kept (else all), newest mapping
    /// first. The mappings go to `free` (to be unmapped outside the lock); returns the bytes for
    /// the caller to release from the budget.
    pub(crate) fn reclaim(&mut self, wanted: usize, mut free: impl FnMut(AnonMapping)) -> usize {
        let mut released = 0;
        while released < wanted && !self.entries.is_empty() {
            let (map, reserved) = self.remove(self.entries.len() - 1);
            free(map);
            released += reserved;
        }
        released
    }

    /// Remove the mappings smaller than `len` bytes, handing each to `free` (to be unmapped outside
    /// the lock); returns their reserved bytes, for the caller to release.
    pub(crate) fn remove_smaller_than(
        &mut self,
        len: usize,
        mut free: impl FnMut(AnonMapping),
    ) -> usize {
        let mut released = 0;
        let mut index = 0;
        while index < self.entries.len() {
            if self.entries[index].map.capacity() < len {
                let (map, reserved) = self.remove(index);
                free(map);
                released += reserved;
            } else {
                index += 1;
            }
        }
        released
    }

    /// Remove the mappings kept longer than [`KEPT_IDLE`] at `now`, handing each to `free`;
    /// returns their reserved bytes and when the oldest left will be due (`None`: nothing kept).
    pub(crate) fn remove_expired(
        &mut self,
        now: Instant,
        mut free: impl FnMut(AnonMapping),
    ) -> (usize, Option<Instant>) {
        let mut released = 0;
        while let Some(oldest) = self.entries.first() {
            let due = oldest.freed_at + KEPT_IDLE;
            if due > now {
                return (released, Some(due));
            }
            let (map, reserved) = self.remove(0);
            free(map);
            released += reserved;
        }
        (released, None)
    }

    fn remove(&mut self, index: usize) -> (AnonMapping, usize) {
        let Kept { map, reserved, .. } = self.entries.remove(index);
        self.bytes -= reserved;
        (map, reserved)
    }
}

/// Start the thread that frees `budget`'s kept mappings once idle for [`KEPT_IDLE`], unless it runs
/// already (`trimmed`). It ends when nothing is kept (clearing `trimmed` under the kept lock, so
/// the next kept buffer starts another) or the budget is gone. Without a thread (spawning failed),
/// kept mappings are still freed by requests that need their bytes, and with the budget.
///
/// One thread per budget rather than one per process: a process forked after the first kept buffer
/// has no threads but the one that forked, and a budget made in the child (as the Python client
/// makes after a fork) starts its own.
pub(crate) fn watch(budget: &Arc<BudgetInner>) {
    if budget.trimmed.swap(true, Ordering::AcqRel) {
        return;
    }
    let weak = Arc::downgrade(budget);
    let spawned = std::thread::Builder::new()
        .name("brisk-kept-buffers".into())
        .spawn(move || trim(weak));
    if spawned.is_err() {
        budget.trimmed.store(false, Ordering::Release);
    }
}

fn trim(budget: Weak<BudgetInner>) {
    loop {
        let Some(inner) = budget.upgrade() else {
            return;
        };
        let Some(due) = inner.free_expired(Instant::now()) else {
            return;
        };
        drop(inner);
        std::thread::park_timeout(due.saturating_duration_since(Instant::now()));
    }
}
