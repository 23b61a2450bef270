//! Exact-size buffers: one buffer of exactly the bytes a transfer will hold, for reading a whole
//! object of known length (a GET of `Content-Length` bytes) into memory.
//!
//! # Where the memory comes from
//!
//! - **Below [`MAPPED_MIN_LEN`] (1 MiB): the heap**, `vec![0u8; n]`. Once glibc has a freed chunk of
//!   that size, it hands it out again with its pages still resident (calloc zeroes it with memset),
//!   which costs far less than fresh pages (`cargo bench -p brisk-mem --bench pool`, 1 MiB written in
//!   full: about 40 µs from a reused heap chunk against 550–660 µs for fresh pages, faulted or
//!   populated), and what glibc keeps resident after such a buffer is freed is small.
//! - **From [`MAPPED_MIN_LEN`] up: an anonymous private mapping of `n` bytes (rounded up to whole
//!   pages), populated when it is created** (`MAP_POPULATE`): every page is resident and zeroed before
//!   the first byte of the body arrives, and the socket's copy into it takes no page faults. Or,
//!   with [`ExactBuf::for_overwrite`], populated by the caller a step ahead of its writes
//!   ([`ExactBuf::populate`]), so that the populating overlaps the server's sending.
//!
//! Why populate: a fresh buffer that the socket fills faults once per 4 KiB page *inside* the
//! kernel's copy, and on this project's VMs those faults cost more than the copy itself. Receiving
//! 1 GiB from `brisk serve` (`bench/fresh_buffer_recv.py`, sys CPU per GiB): into fresh pages about
//! 1.0 s; into a `MAP_POPULATE` mapping 0.56 s, population included; into a buffer already touched
//! 0.17 s (the copy alone). End to end, `get_bytes` of 256 MiB and 1 GiB went from 1.14 to 0.75 CPU
//! s/GiB (BENCHMARKS-log.md, "In-memory GET buffer"). The buffer is written in full by the read right
//! after, so populating adds no resident memory the buffer would not have had anyway.
//!
//! Why a mapping: its memory is accounted for to the byte. Dropping it hands it to its budget, which
//! keeps it resident (still reserved, bounded, for at most `KEPT_IDLE`) for the next
//! [`ExactBuf::for_overwrite`] of about its size, or gives it back to the kernel at once (`kept.rs`).
//! A large heap buffer would raise glibc's dynamic mmap threshold (up to 32 MiB) and trim threshold
//! (twice that), after which freed buffers stay resident outside the budget, as `pool.rs` describes
//! for blocks.
//!
//! The line is drawn at 1 MiB by judgement, not as a measured optimum: small enough that every
//! large object takes the mapped path, large enough that small objects keep the heap's warm pages.
//!
//! From 2 MiB up the mapping is aligned and backed by transparent huge pages where the kernel has
//! free ones ([`crate::mapping`]): 512 times fewer faults, and population of 1 GiB falls from about
//! 0.44 to 0.11–0.16 CPU s on the hosts where the kernel grants them (docs/memory.md, "Huge pages").

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::budget::{BudgetError, MemoryBudget, Reservation};
use crate::mapping::AnonMapping;

/// The smallest buffer backed by a populated anonymous mapping instead of the heap: 1 MiB (see the
/// module docs for why, and for why this line is a judgement rather than a measured optimum).
pub const MAPPED_MIN_LEN: usize = 1024 * 1024;

/// The memory behind an [`ExactBuf`].
enum Memory {
    /// `len == capacity == n`.
    Heap(Vec<u8>),
    /// A populated anonymous mapping of exactly `n` bytes (the kernel rounds it up to whole pages),
    /// in huge pages where it can ([`crate::mapping`]).
    Mapped(AnonMapping),
}

impl Memory {
    fn new(len: usize, populate: bool) -> Self {
        if len < MAPPED_MIN_LEN {
            return Memory::Heap(vec![0u8; len]);
        }
        // An anonymous mapping fails only when the address space or the kernel's map count is
        // exhausted, the condition under which a heap allocation of the same size aborts the process.
        let map = AnonMapping::new(len, populate)
            .unwrap_or_else(|e| panic!("mapping a {len} byte exact buffer failed: {e}"));
        Memory::Mapped(map)
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Memory::Heap(vec) => vec,
            Memory::Mapped(map) => map,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            Memory::Heap(vec) => vec,
            Memory::Mapped(map) => map,
        }
    }

    /// The 2 MiB ranges marked for transparent huge pages (see [`crate::mapping`]).
    fn huge_ranges(&self) -> usize {
        match self {
            Memory::Heap(_) => 0,
            Memory::Mapped(map) => map.huge_ranges(),
        }
    }

    /// The bytes as a vector: the heap allocation itself, or a copy of a mapping.
    fn into_vec(self) -> Vec<u8> {
        match self {
            Memory::Heap(vec) => vec,
            Memory::Mapped(map) => map.to_vec(),
        }
    }
}

/// A buffer of exactly `len` bytes, paid for by a [`Reservation`] of `len` bytes that is given back
/// after the buffer is freed.
///
/// Buffers of [`MAPPED_MIN_LEN`] bytes and more are populated anonymous mappings, smaller ones heap
/// vectors (see the module docs for why); both deref to `[u8]` of exactly `len` bytes, zeroed.
pub struct ExactBuf {
    // Declared before `reservation`: fields drop in order, so the memory is freed before the budget
    // hands the bytes to someone else.
    memory: Memory,
    reservation: Reservation,
}

impl ExactBuf {
    /// Reserve `len` bytes from `budget` (waiting, FIFO, until they are free) and allocate them.
    ///
    /// Fails at once with [`BudgetError::ExceedsCapacity`] if `len` is larger than the whole budget.
    pub async fn new(budget: &MemoryBudget, len: usize) -> Result<Self, BudgetError> {
        let reservation = budget.acquire(len).await?;
        Ok(Self::from_reservation(reservation))
    }

    /// Like [`new`](ExactBuf::new) but never waits.
    pub fn try_new(budget: &MemoryBudget, len: usize) -> Result<Self, BudgetError> {
        let reservation = budget.try_acquire(len)?;
        Ok(Self::from_reservation(reservation))
    }

    /// Allocate a buffer of exactly `reservation.size()` bytes, paid for by a reservation taken
    /// earlier (at schedule time). From [`MAPPED_MIN_LEN`] up the pages are made resident here, before
    /// the caller writes them.
    pub fn from_reservation(reservation: Reservation) -> Self {
        Self::with_memory(reservation, true)
    }

    /// A buffer of `reservation.size()` bytes, its pages made resident here if `populate`.
    fn with_memory(reservation: Reservation, populate: bool) -> Self {
        ExactBuf {
            memory: Memory::new(reservation.size(), populate),
            reservation,
        }
    }

    /// A buffer of `len` bytes for a caller that **writes every byte** before anything reads it
    /// (a GET's body of known length). From [`MAPPED_MIN_LEN`] up it is a freed buffer's mapping
    /// that the budget kept resident, if one of `len` to `len + len / 4` bytes is kept
    /// ([`MemoryBudget::set_kept_limit`]; its bytes are then the old buffer's, and its reservation the mapping's
    /// whole size); else a fresh mapping (and the kept mappings smaller than `len` are freed, so
    /// that reads that grow do not hold their old buffers beside the new) whose pages are not
    /// made resident here: the caller makes
    /// them resident with [`populate`](ExactBuf::populate) a step ahead of its writes, so that the
    /// work overlaps whatever produces the bytes (a server sending the body), instead of coming
    /// before it.
    pub async fn for_overwrite(budget: &MemoryBudget, len: usize) -> Result<Self, BudgetError> {
        if len >= MAPPED_MIN_LEN {
            if let Some((map, reservation)) = budget.take_kept(len) {
                return Ok(ExactBuf {
                    memory: Memory::Mapped(map),
                    reservation,
                });
            }
            // Reads have grown past what is kept: the smaller buffers would sit beside this one.
            budget.free_kept_smaller_than(len);
        }
        let reservation = budget.acquire(len).await?;
        Ok(Self::with_memory(reservation, false))
    }

    /// [`for_overwrite`](ExactBuf::for_overwrite) that never waits: [`BudgetError::WouldWait`] when
    /// the bytes are not free now (a kept mapping that fits is still taken). For a caller that
    /// hands the buffer to someone who may hold it for as long as it likes (pyarrow reading a
    /// file), and so must not wait for buffers that only it would give back.
    pub fn try_for_overwrite(budget: &MemoryBudget, len: usize) -> Result<Self, BudgetError> {
        if len >= MAPPED_MIN_LEN {
            if let Some((map, reservation)) = budget.take_kept(len) {
                return Ok(ExactBuf {
                    memory: Memory::Mapped(map),
                    reservation,
                });
            }
            budget.free_kept_smaller_than(len);
        }
        let reservation = budget.try_acquire(len)?;
        Ok(Self::with_memory(reservation, false))
    }

    /// Makes the pages under `range` (byte positions, clamped to the buffer) resident
    /// (`MADV_POPULATE_WRITE`), so that the writes that follow take no page faults. Nothing
    /// changes for a heap buffer or for pages already resident, and the bytes never change.
    pub fn populate(&mut self, range: std::ops::Range<usize>) {
        if let Memory::Mapped(map) = &mut self.memory {
            map.populate_range(range);
        }
    }

    /// The buffer's length in bytes (fixed at creation).
    pub fn len(&self) -> usize {
        self.memory.as_slice().len()
    }

    /// Whether the buffer holds zero bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the buffer is an anonymous mapping (`len() >= MAPPED_MIN_LEN`) rather than a heap
    /// allocation.
    pub fn is_mapped(&self) -> bool {
        matches!(self.memory, Memory::Mapped(_))
    }

    /// The bytes reserved for this buffer: its length, or more for a buffer made from a kept
    /// mapping a little larger ([`for_overwrite`](ExactBuf::for_overwrite)).
    pub fn reservation(&self) -> &Reservation {
        &self.reservation
    }

    /// The bytes as a `Vec<u8>` with `len() == capacity()`.
    ///
    /// A heap buffer (below [`MAPPED_MIN_LEN`]) is handed over without copying. A mapped buffer is
    /// **copied** into a new heap allocation of `len()` bytes and the mapping freed, so for a moment
    /// the process holds the bytes twice, the copy outside the budget: prefer keeping the `ExactBuf`
    /// (it derefs to `[u8]`) when the bytes are large.
    ///
    /// The reservation is released here: from this point the vector is the caller's and no longer
    /// counts against the budget. Use [`into_parts`](ExactBuf::into_parts) to keep it accounted.
    pub fn into_vec(mut self) -> Vec<u8> {
        // The buffer left behind is empty and kept by nobody; its reservation is released when
        // `self` drops, after the mapping is freed in `into_vec`.
        self.take_memory().into_vec()
    }

    /// The bytes as a vector and the reservation that pays for it, so the caller can keep the bytes
    /// accounted for as long as it holds the vector (drop the vector before the reservation). Copies
    /// a mapped buffer, as [`into_vec`](ExactBuf::into_vec) does.
    pub fn into_parts(mut self) -> (Vec<u8>, Reservation) {
        (self.take_memory().into_vec(), self.reservation.take())
    }

    /// The memory, leaving an empty heap buffer in its place (for `into_*` and `Drop`).
    fn take_memory(&mut self) -> Memory {
        std::mem::replace(&mut self.memory, Memory::Heap(Vec::new()))
    }
}

impl Drop for ExactBuf {
    /// A mapped buffer goes to its budget's kept mappings ([`MemoryBudget::set_kept_limit`]) when the budget keeps
    /// it, its bytes still reserved; else it is freed before its bytes are given back.
    fn drop(&mut self) {
        if let Memory::Mapped(map) = self.take_memory() {
            self.reservation.take().keep_mapping(map);
        }
    }
}

impl Deref for ExactBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.memory.as_slice()
    }
}

impl DerefMut for ExactBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.memory.as_mut_slice()
    }
}

impl AsRef<[u8]> for ExactBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for ExactBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl fmt::Debug for ExactBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExactBuf")
            .field("len", &self.len())
            .field("mapped", &self.is_mapped())
            .field("huge_page_ranges", &self.memory.huge_ranges())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;

    #[test]
    fn holds_exactly_the_reserved_bytes() {
        let budget = MemoryBudget::new(1000);
        let mut buf = ExactBuf::try_new(&budget, 600).unwrap();
        assert_eq!(buf.len(), 600);
        assert!(buf.iter().all(|&b| b == 0));
        buf[599] = 7;
        assert_eq!(buf.reservation().size(), 600);
        assert_eq!(budget.reserved(), 600);
        assert!(matches!(
            ExactBuf::try_new(&budget, 401),
            Err(BudgetError::WouldWait { .. })
        ));
        drop(buf);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn try_for_overwrite_never_waits_and_takes_a_kept_mapping() {
        let budget = MemoryBudget::new(4 * MAPPED_MIN_LEN);
        let held = ExactBuf::try_for_overwrite(&budget, 3 * MAPPED_MIN_LEN).unwrap();
        assert!(matches!(
            ExactBuf::try_for_overwrite(&budget, 2 * MAPPED_MIN_LEN),
            Err(BudgetError::WouldWait { .. })
        ));
        assert!(matches!(
            ExactBuf::try_for_overwrite(&budget, 5 * MAPPED_MIN_LEN),
            Err(BudgetError::ExceedsCapacity { .. })
        ));
        let address = held.as_ptr();
        drop(held);
        // The freed mapping is kept (by default up to the whole budget) and serves the next one.
        let again = ExactBuf::try_for_overwrite(&budget, 3 * MAPPED_MIN_LEN).unwrap();
        assert_eq!(again.as_ptr(), address);
    }

    #[test]
    fn into_vec_hands_over_the_allocation_and_leaves_the_budget() {
        let budget = MemoryBudget::new(1000);
        let mut buf = ExactBuf::try_new(&budget, 300).unwrap();
        buf[0] = 1;
        let address = buf.as_ptr();
        let vec = buf.into_vec();
        assert_eq!((vec.len(), vec.capacity()), (300, 300));
        assert_eq!(vec.as_ptr(), address, "no copy");
        assert_eq!(vec[0], 1);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn into_parts_keeps_the_bytes_accounted() {
        let budget = MemoryBudget::new(1000);
        let (vec, reservation) = ExactBuf::try_new(&budget, 300).unwrap().into_parts();
        assert_eq!(vec.len(), 300);
        assert_eq!(budget.reserved(), 300);
        drop(vec);
        drop(reservation);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn a_buffer_can_be_paid_for_by_an_earlier_reservation() {
        let budget = MemoryBudget::new(1000);
        let reservation = budget.try_acquire(123).unwrap();
        let buf = ExactBuf::from_reservation(reservation);
        assert_eq!(buf.len(), 123);
        assert_eq!(budget.reserved(), 123);
        let empty = ExactBuf::try_new(&budget, 0).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn from_the_threshold_up_the_buffer_is_a_mapping_of_exactly_its_length() {
        let budget = MemoryBudget::new(8 * MAPPED_MIN_LEN);
        let below = ExactBuf::try_new(&budget, MAPPED_MIN_LEN - 1).unwrap();
        assert!(!below.is_mapped());
        // Not a multiple of the page size: the slice is still exactly `len` bytes.
        let len = 3 * MAPPED_MIN_LEN + 5;
        let mut buf = ExactBuf::try_new(&budget, len).unwrap();
        assert!(buf.is_mapped());
        assert_eq!(buf.len(), len);
        assert_eq!(
            buf.as_ptr() as usize % 4096,
            0,
            "a mapping starts on a page"
        );
        assert!(buf.iter().all(|&b| b == 0));
        buf[len - 1] = 9;
        assert_eq!(budget.reserved(), (MAPPED_MIN_LEN - 1) + len);
        drop(buf);
        drop(below);
        // The mapping is kept for the next buffer, still reserved, until the limit says otherwise.
        assert_eq!(budget.reserved(), len);
        assert_eq!(budget.metrics().kept_bytes, len);
        budget.set_kept_limit(0);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn a_mapped_buffer_becomes_a_vector_by_copy() {
        let budget = MemoryBudget::new(2 * MAPPED_MIN_LEN);
        let mut buf = ExactBuf::try_new(&budget, MAPPED_MIN_LEN).unwrap();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let address = buf.as_ptr();
        let vec = buf.into_vec();
        assert_ne!(vec.as_ptr(), address, "a copy, not the mapping");
        assert_eq!(
            (vec.len(), vec.capacity()),
            (MAPPED_MIN_LEN, MAPPED_MIN_LEN)
        );
        assert!(vec.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        assert_eq!(budget.reserved(), 0);

        let (vec, reservation) = ExactBuf::try_new(&budget, MAPPED_MIN_LEN)
            .unwrap()
            .into_parts();
        assert_eq!(vec.len(), MAPPED_MIN_LEN);
        assert_eq!(reservation.size(), MAPPED_MIN_LEN);
        assert_eq!(budget.reserved(), MAPPED_MIN_LEN);
    }

    /// `for_overwrite` without waiting: every budget in these tests has room.
    fn overwrite(budget: &MemoryBudget, len: usize) -> ExactBuf {
        let mut future = std::pin::pin!(ExactBuf::for_overwrite(budget, len));
        match future
            .as_mut()
            .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
        {
            std::task::Poll::Ready(buf) => buf.unwrap(),
            std::task::Poll::Pending => panic!("for_overwrite waited"),
        }
    }

    #[test]
    fn a_freed_mapped_buffer_is_kept_reserved_and_serves_the_next_of_its_size() {
        let budget = MemoryBudget::new(8 * MAPPED_MIN_LEN);
        let len = 2 * MAPPED_MIN_LEN + 5;
        let mut first = overwrite(&budget, len);
        first.populate(0..len);
        first[len - 1] = 7;
        let address = first.as_ptr();
        drop(first);
        let metrics = budget.metrics();
        assert_eq!((metrics.kept_bytes, metrics.reserved_bytes), (len, len));

        let second = overwrite(&budget, len);
        assert_eq!(second.as_ptr(), address, "the same mapping");
        assert_eq!(second.len(), len);
        assert_eq!(
            second[len - 1],
            7,
            "an overwrite buffer holds the old bytes"
        );
        let metrics = budget.metrics();
        assert_eq!((metrics.kept_bytes, metrics.kept_reuses), (0, 1));
        assert_eq!(budget.reserved(), len);
        drop(second);

        // A fifth shorter still fits (the mapping is a quarter longer), showing only the bytes asked for and reserving the whole
        // mapping; shorter than that gets a fresh buffer.
        let shorter = overwrite(&budget, len - len / 5);
        assert_eq!(shorter.as_ptr(), address);
        assert_eq!(shorter.len(), len - len / 5);
        assert_eq!(shorter.reservation().size(), len);
        drop(shorter);
        let much_shorter = overwrite(&budget, len / 2);
        assert_ne!(much_shorter.as_ptr(), address);
        assert_eq!(
            budget.reserved(),
            len + len / 2,
            "kept plus the fresh buffer"
        );
        drop(much_shorter);
        assert_eq!(budget.metrics().kept_bytes, len + len / 2);

        // Zeroed buffers never take a kept mapping (they are zero), and heap buffers are not kept.
        let zeroed = ExactBuf::try_new(&budget, len).unwrap();
        assert_ne!(zeroed.as_ptr(), address);
        assert!(zeroed.iter().all(|&b| b == 0));
        drop(zeroed);
        let before = budget.metrics().kept_bytes;
        drop(overwrite(&budget, MAPPED_MIN_LEN - 1));
        assert_eq!(budget.metrics().kept_bytes, before);
    }

    #[test]
    fn a_buffer_mapped_afresh_frees_the_kept_ones_smaller_than_itself() {
        let budget = MemoryBudget::new(64 * MAPPED_MIN_LEN);
        let held = [2, 16, 4].map(|mib| overwrite(&budget, mib * MAPPED_MIN_LEN));
        drop(held);
        assert_eq!(budget.metrics().kept_bytes, 22 * MAPPED_MIN_LEN);
        // Larger than the 2 and 4 MiB ones, which it could not use: they go; the 16 MiB one stays.
        let grown = overwrite(&budget, 8 * MAPPED_MIN_LEN);
        assert_eq!(budget.metrics().kept_bytes, 16 * MAPPED_MIN_LEN);
        assert_eq!(budget.reserved(), 24 * MAPPED_MIN_LEN);
        drop(grown);
        // Smaller than everything kept: nothing is freed.
        drop(overwrite(&budget, MAPPED_MIN_LEN));
        assert_eq!(budget.metrics().kept_bytes, 25 * MAPPED_MIN_LEN);
    }

    #[test]
    fn kept_mappings_give_way_to_any_request_that_needs_their_bytes() {
        let budget = MemoryBudget::new(4 * MAPPED_MIN_LEN);
        drop(overwrite(&budget, 3 * MAPPED_MIN_LEN));
        assert_eq!(budget.metrics().kept_bytes, 3 * MAPPED_MIN_LEN);
        // Without waiting: the kept mapping is freed for it.
        let whole = budget.try_acquire(4 * MAPPED_MIN_LEN).unwrap();
        assert_eq!(budget.metrics().kept_bytes, 0);
        drop(whole);

        // While a request waits, a freed buffer's bytes go to it rather than being kept.
        let held = overwrite(&budget, 3 * MAPPED_MIN_LEN);
        let mut waiting = budget.acquire(2 * MAPPED_MIN_LEN);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(std::pin::Pin::new(&mut waiting).poll(&mut cx).is_pending());
        drop(held);
        assert_eq!(budget.metrics().kept_bytes, 0);
        match std::pin::Pin::new(&mut waiting).poll(&mut cx) {
            std::task::Poll::Ready(Ok(r)) => assert_eq!(r.size(), 2 * MAPPED_MIN_LEN),
            other => panic!("still waiting: {other:?}"),
        }
    }

    #[test]
    fn kept_mappings_are_bounded_by_count_limit_and_idle_time() {
        let budget = MemoryBudget::new(512 * MAPPED_MIN_LEN);
        // Each of a different size: none serves the next, so all are kept, up to MAX_KEPT.
        let lens: Vec<usize> = (0..crate::kept::MAX_KEPT + 2)
            .map(|i| MAPPED_MIN_LEN * 2usize.pow(i as u32 % 2) + i * 4096 * 30)
            .collect();
        let bufs: Vec<ExactBuf> = lens.iter().map(|&len| overwrite(&budget, len)).collect();
        drop(bufs);
        let kept: usize = lens[2..].iter().sum();
        assert_eq!(budget.metrics().kept_bytes, kept, "the two oldest freed");
        assert_eq!(budget.reserved(), kept);

        budget.free_kept();
        assert_eq!((budget.metrics().kept_bytes, budget.reserved()), (0, 0));
        drop(
            lens.iter()
                .map(|&len| overwrite(&budget, len))
                .collect::<Vec<_>>(),
        );
        budget.set_kept_limit(lens[lens.len() - 1]);
        assert_eq!(budget.metrics().kept_bytes, lens[lens.len() - 1]);
        budget.set_kept_limit(0);
        assert_eq!((budget.metrics().kept_bytes, budget.reserved()), (0, 0));
        drop(overwrite(&budget, MAPPED_MIN_LEN));
        assert_eq!(budget.reserved(), 0, "a limit of 0 keeps nothing");

        budget.set_kept_limit(usize::MAX);
        drop(overwrite(&budget, MAPPED_MIN_LEN));
        let now = std::time::Instant::now();
        let due = budget
            .inner_for_tests()
            .free_expired(now)
            .expect("one kept");
        assert!(due > now && due <= now + crate::KEPT_IDLE);
        let trimmed = || {
            budget
                .inner_for_tests()
                .trimmed
                .load(std::sync::atomic::Ordering::Acquire)
        };
        assert!(trimmed(), "a thread looks after what is kept");
        assert_eq!(budget.inner_for_tests().free_expired(due), None);
        // Nothing kept: the thread ends, and says so, so that the next kept buffer starts one.
        assert!(!trimmed());
        assert_eq!((budget.metrics().kept_bytes, budget.reserved()), (0, 0));
    }

    #[test]
    fn too_large_is_an_error() {
        let budget = MemoryBudget::new(1000);
        assert_eq!(
            ExactBuf::try_new(&budget, 1001).unwrap_err(),
            BudgetError::ExceedsCapacity {
                requested: 1001,
                capacity: 1000
            }
        );
    }
}
