//! The buffer pool: fixed-size blocks in power-of-two size classes from 64 KiB to 8 MiB, recycled
//! through per-class free lists, every byte paid for by a [`MemoryBudget`].
//!
//! Why these classes: 64 KiB is the smallest read that still amortizes a syscall and a TLS record
//! (16 KiB) well, and 8 MiB is the largest part size worth reading into one block (S3 multipart parts
//! are usually 8 MiB; larger transfers are split into parts). Powers of two waste at most half a block
//! on a rounded-up request and keep the number of free lists at eight.
//!
//! A block on a free list stays reserved: the budget bounds real memory, not only memory in use. The
//! free lists are capped at a retention limit ([`DEFAULT_RETENTION_BYTES`]) so an idle process gives
//! memory back, and they are emptied first whenever a reservation would otherwise wait.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use crate::budget::{BudgetError, MemoryBudget, Reclaim, Reservation};
use crate::default_budget::{BudgetChoice, process_default_budget, process_default_without_env};
use crate::mapping::AnonMapping;
use crate::metrics::MemoryMetrics;

/// The smallest block: a request below it still gets 64 KiB.
pub const MIN_BLOCK_SIZE: usize = 64 * 1024;

/// The largest block: a request above it gets 8 MiB and must be split by the caller.
pub const MAX_BLOCK_SIZE: usize = 8 * 1024 * 1024;

/// The block sizes, smallest first: every power of two from [`MIN_BLOCK_SIZE`] to [`MAX_BLOCK_SIZE`].
pub const SIZE_CLASSES: [usize; 8] = [
    MIN_BLOCK_SIZE,
    MIN_BLOCK_SIZE << 1,
    MIN_BLOCK_SIZE << 2,
    MIN_BLOCK_SIZE << 3,
    MIN_BLOCK_SIZE << 4,
    MIN_BLOCK_SIZE << 5,
    MIN_BLOCK_SIZE << 6,
    MAX_BLOCK_SIZE,
];

/// Default cap on the bytes kept cached on a pool's free lists: eight 8 MiB blocks, or 1024 blocks of
/// 64 KiB.
///
/// In steady state a transfer returns a block and takes the next one moments later, so the free lists
/// only need to hold the few blocks between a return and the next take. After a burst (a whole budget's
/// worth of parts finishing at once), everything above this goes back to the allocator instead of
/// staying resident while the process idles.
pub const DEFAULT_RETENTION_BYTES: usize = 64 * 1024 * 1024;

/// The floor of the process-wide pool's default budget ([`BufferPool::global`]), and that budget
/// where the machine's memory cannot be read: 1 GiB, 128 blocks of 8 MiB. Above it, the default is
/// a share of the memory the process may use ([`crate::choose_default_budget`]).
///
/// The bytes in flight needed to keep a link busy are throughput × time per request: at 10 Gbit/s
/// (1.25 GB/s) and 100 ms per 8 MiB part request, about 125 MB, 15 parts. 1 GiB leaves eight times that
/// as headroom for slower requests and for buffers held by the caller. It is a cap, not a
/// preallocation: memory is only taken as blocks are used.
pub const DEFAULT_GLOBAL_BUDGET_BYTES: usize = 1024 * 1024 * 1024;

/// Free lists are pre-sized so that caching a block never allocates, up to this many entries per class
/// (1024 × 32 bytes of bookkeeping); a larger retention limit lets them grow past it once.
const MAX_PRESIZED_FREE_LIST: usize = 1024;

static GLOBAL_POOL: OnceLock<(BufferPool, BudgetChoice)> = OnceLock::new();

/// Why the process-wide pool could not be configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GlobalPoolError {
    /// [`BufferPool::init_global`] ran after the global pool had been configured or first used.
    #[error(
        "the global buffer pool is already initialized with a budget of {capacity} bytes; \
         call BufferPool::init_global once, before the first use of BufferPool::global"
    )]
    AlreadyInitialized {
        /// The budget the global pool has.
        capacity: usize,
    },
}

/// A pool of reusable blocks, cheap to clone (an `Arc`); clones share the free lists.
#[derive(Clone)]
pub struct BufferPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    budget: MemoryBudget,
    retention_bytes: usize,
    lists: Mutex<FreeLists>,
}

struct FreeLists {
    by_class: [Vec<CachedBlock>; SIZE_CLASSES.len()],
    cached_bytes: usize,
}

/// A free block and the reservation that pays for it. Field order matters: the memory is freed before
/// the bytes go back to the budget, so the next reservation cannot allocate while this one still
/// exists.
struct CachedBlock {
    buf: BlockMemory,
    reservation: Reservation,
}

/// The memory of one block: an anonymous private mapping of exactly the class size, not a heap
/// allocation.
///
/// Why: glibc raises its mmap threshold to the size of the largest mapped chunk it frees (up to 32 MiB),
/// after which 64 KiB–8 MiB blocks come from the heap, and a freed heap chunk stays resident. A pool
/// that frees cached blocks to make room under the budget would then free nothing the kernel sees: with
/// 16 downloads and 16 uploads under a 256 MiB budget the process grew 330 MiB
/// (`cargo test -p brisk-client --test budget -- --ignored`). A mapping goes back to the kernel when it
/// is dropped, so the budget bounds resident memory. A fresh mapping is zero pages that become resident
/// only as they are written; the cost is one `mmap`/`munmap` pair per pool miss, none per reuse.
///
/// Blocks of 2 MiB and up are backed by transparent huge pages where the kernel has them free
/// ([`crate::mapping`]): a fresh 8 MiB block then takes 4 page faults instead of 2048.
type BlockMemory = AnonMapping;

fn new_block_memory(size: usize) -> BlockMemory {
    // An anonymous mapping fails only when the address space or the kernel's map count is exhausted,
    // which is the same condition under which a heap allocation aborts the process.
    AnonMapping::new(size, false)
        .unwrap_or_else(|e| panic!("mapping a {size} byte pool block failed: {e}"))
}

/// A block's memory while a [`PooledBlock`] holds it; empty only inside `Drop`, which hands the
/// mapping back to the pool.
struct BlockBuf(Option<BlockMemory>);

impl Deref for BlockBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.as_deref().expect("a live block has its memory")
    }
}

impl DerefMut for BlockBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.0.as_deref_mut().expect("a live block has its memory")
    }
}

fn lock(lists: &Mutex<FreeLists>) -> MutexGuard<'_, FreeLists> {
    // Free-list updates cannot panic halfway, so a poisoned lock still guards valid lists.
    lists.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The index into [`SIZE_CLASSES`] of the smallest class holding `size_hint` bytes (the largest class
/// for hints above [`MAX_BLOCK_SIZE`]).
fn class_index(size_hint: usize) -> usize {
    let size = size_hint
        .clamp(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE)
        .next_power_of_two();
    (size.trailing_zeros() - MIN_BLOCK_SIZE.trailing_zeros()) as usize
}

impl BufferPool {
    /// A pool drawing from `budget`, keeping at most [`DEFAULT_RETENTION_BYTES`] cached.
    pub fn new(budget: MemoryBudget) -> Self {
        Self::with_retention(budget, DEFAULT_RETENTION_BYTES)
    }

    /// A pool drawing from `budget`, keeping at most `retention_bytes` cached on its free lists
    /// (0 disables caching: every block is freed when dropped).
    pub fn with_retention(budget: MemoryBudget, retention_bytes: usize) -> Self {
        let by_class = SIZE_CLASSES
            .map(|size| Vec::with_capacity((retention_bytes / size).min(MAX_PRESIZED_FREE_LIST)));
        let inner = Arc::new(PoolInner {
            budget,
            retention_bytes,
            lists: Mutex::new(FreeLists {
                by_class,
                cached_bytes: 0,
            }),
        });
        let reclaimer: Weak<dyn Reclaim> = Arc::downgrade(&inner) as Weak<dyn Reclaim>;
        inner.budget.register_reclaimer(reclaimer);
        BufferPool { inner }
    }

    /// The process-wide pool, created on first use with the default budget
    /// ([`process_default_budget`](crate::process_default_budget): `BRISK_MAX_MEMORY`, else a share
    /// of the cgroup limit or of the machine's memory, at least [`DEFAULT_GLOBAL_BUDGET_BYTES`])
    /// unless [`init_global`](BufferPool::init_global) ran before. A `BRISK_MAX_MEMORY` that is not
    /// a size is ignored here (the clients' configuration reports it).
    pub fn global() -> &'static BufferPool {
        &Self::global_entry().0
    }

    /// The process-wide pool's budget size and where it came from.
    pub fn global_budget_choice() -> BudgetChoice {
        Self::global_entry().1
    }

    fn global_entry() -> &'static (BufferPool, BudgetChoice) {
        GLOBAL_POOL.get_or_init(|| {
            let choice = process_default_budget().unwrap_or_else(|_| process_default_without_env());
            (BufferPool::new(MemoryBudget::new(choice.bytes)), choice)
        })
    }

    /// Configure the process-wide pool: a budget of `budget_bytes` and a retention limit of
    /// `retention_bytes`. Works once, before the first [`global`](BufferPool::global).
    pub fn init_global(
        budget_bytes: usize,
        retention_bytes: usize,
    ) -> Result<&'static BufferPool, GlobalPoolError> {
        let mut created = false;
        let (pool, _) = GLOBAL_POOL.get_or_init(|| {
            created = true;
            (
                BufferPool::with_retention(MemoryBudget::new(budget_bytes), retention_bytes),
                BudgetChoice::setting(budget_bytes, "init_global"),
            )
        });
        if created {
            Ok(pool)
        } else {
            Err(GlobalPoolError::AlreadyInitialized {
                capacity: pool.budget().capacity(),
            })
        }
    }

    /// The size of the block [`get`](BufferPool::get) returns for `size_hint`: the smallest class
    /// ≥ `size_hint`, at most [`MAX_BLOCK_SIZE`]. Reserve this much to pay for a block in advance.
    pub fn block_size_for(size_hint: usize) -> usize {
        SIZE_CLASSES[class_index(size_hint)]
    }

    /// The budget every block of this pool is paid from.
    pub fn budget(&self) -> &MemoryBudget {
        &self.inner.budget
    }

    /// The cap on cached bytes.
    pub fn retention_bytes(&self) -> usize {
        self.inner.retention_bytes
    }

    /// Bytes cached on this pool's free lists now.
    pub fn cached_bytes(&self) -> usize {
        lock(&self.inner.lists).cached_bytes
    }

    /// A block of [`block_size_for(size_hint)`](BufferPool::block_size_for) bytes: a cached one if
    /// the class has one, otherwise a fresh one once the budget has room (waiting for it, FIFO).
    ///
    /// Fails only if the block is larger than the whole budget. Cancellation-safe.
    pub async fn get(&self, size_hint: usize) -> Result<PooledBlock, BudgetError> {
        let class = class_index(size_hint);
        if let Some(block) = self.take_cached(class) {
            return Ok(block);
        }
        let reservation = self.inner.budget.acquire(SIZE_CLASSES[class]).await?;
        Ok(self.allocate(class, reservation))
    }

    /// Like [`get`](BufferPool::get) but never waits: fails with [`BudgetError::WouldWait`] if the
    /// budget has no room now.
    pub fn try_get(&self, size_hint: usize) -> Result<PooledBlock, BudgetError> {
        let class = class_index(size_hint);
        if let Some(block) = self.take_cached(class) {
            return Ok(block);
        }
        let reservation = self.inner.budget.try_acquire(SIZE_CLASSES[class])?;
        Ok(self.allocate(class, reservation))
    }

    /// A block paid for by a reservation taken earlier (at schedule time), without waiting.
    ///
    /// The reservation must hold at least [`block_size_for(size_hint)`](BufferPool::block_size_for)
    /// bytes and come from this pool's budget. Bytes beyond the block size are given back; if a cached
    /// block is reused, the whole reservation is given back, because the cached block is already paid
    /// for.
    ///
    /// # Panics
    ///
    /// If the reservation comes from another budget.
    pub fn get_with_reservation(
        &self,
        size_hint: usize,
        mut reservation: Reservation,
    ) -> Result<PooledBlock, BudgetError> {
        assert!(
            reservation.budget().same_budget(&self.inner.budget),
            "a reservation from another memory budget cannot pay for this pool's blocks"
        );
        let class = class_index(size_hint);
        let size = SIZE_CLASSES[class];
        if reservation.size() < size {
            return Err(BudgetError::ReservationTooSmall {
                reserved: reservation.size(),
                needed: size,
            });
        }
        if let Some(block) = self.take_cached(class) {
            return Ok(block);
        }
        reservation.shrink_to(size);
        Ok(self.allocate(class, reservation))
    }

    /// Free every cached block. Returns the bytes given back.
    pub fn trim(&self) -> usize {
        self.inner.reclaim(usize::MAX)
    }

    /// The metrics of this pool's budget (shared with every pool drawing from the same budget).
    pub fn metrics(&self) -> MemoryMetrics {
        self.inner.budget.metrics()
    }

    fn take_cached(&self, class: usize) -> Option<PooledBlock> {
        let cached = {
            let mut lists = lock(&self.inner.lists);
            let cached = lists.by_class[class].pop()?;
            lists.cached_bytes -= SIZE_CLASSES[class];
            cached
        };
        let counters = self.inner.budget.counters();
        counters
            .pool_cached_bytes
            .fetch_sub(SIZE_CLASSES[class], Ordering::Relaxed);
        counters.pool_hits.fetch_add(1, Ordering::Relaxed);
        Some(PooledBlock {
            buf: BlockBuf(Some(cached.buf)),
            filled: 0,
            class,
            reservation: cached.reservation,
            pool: Arc::clone(&self.inner),
        })
    }

    fn allocate(&self, class: usize, reservation: Reservation) -> PooledBlock {
        debug_assert_eq!(reservation.size(), SIZE_CLASSES[class]);
        let buf = new_block_memory(SIZE_CLASSES[class]);
        self.inner
            .budget
            .counters()
            .pool_blocks_allocated
            .fetch_add(1, Ordering::Relaxed);
        PooledBlock {
            buf: BlockBuf(Some(buf)),
            filled: 0,
            class,
            reservation,
            pool: Arc::clone(&self.inner),
        }
    }
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("budget", &self.inner.budget)
            .field("retention_bytes", &self.inner.retention_bytes)
            .field("cached_bytes", &self.cached_bytes())
            .finish()
    }
}

impl PoolInner {
    /// Cache a returned block, or free it if requests are waiting for memory or the free lists are at
    /// their retention limit.
    fn give_back(&self, class: usize, buf: BlockMemory, reservation: Reservation) {
        let size = SIZE_CLASSES[class];
        let counters = self.budget.counters();
        {
            let mut lists = lock(&self.lists);
            // Read under the free-list lock: a request that queues on the budget then reclaims, which
            // takes this lock, so either it sees this block on the list or this check sees it waiting.
            if self.budget.waiting() == 0 && lists.cached_bytes + size <= self.retention_bytes {
                lists.by_class[class].push(CachedBlock { buf, reservation });
                lists.cached_bytes += size;
                counters
                    .pool_cached_bytes
                    .fetch_add(size, Ordering::Relaxed);
                return;
            }
        }
        drop(CachedBlock { buf, reservation });
        counters.pool_blocks_freed.fetch_add(1, Ordering::Relaxed);
    }
}

impl Reclaim for PoolInner {
    /// Frees the largest blocks first: the fewest deallocations for the bytes wanted.
    fn reclaim(&self, wanted: usize) -> usize {
        let counters = self.budget.counters();
        let mut freed = 0;
        let mut lists = lock(&self.lists);
        for class in (0..SIZE_CLASSES.len()).rev() {
            while freed < wanted {
                let Some(block) = lists.by_class[class].pop() else {
                    break;
                };
                let size = SIZE_CLASSES[class];
                lists.cached_bytes -= size;
                counters
                    .pool_cached_bytes
                    .fetch_sub(size, Ordering::Relaxed);
                counters.pool_blocks_freed.fetch_add(1, Ordering::Relaxed);
                drop(block);
                freed += size;
            }
        }
        freed
    }
}

/// A block from a [`BufferPool`], returned to it when dropped.
///
/// Derefs to the whole block: `[u8]` of exactly the class size ([`capacity`](PooledBlock::capacity)),
/// so `block.len() == block.capacity()` always. The filled-length helpers track how much of it holds
/// data. A reused block is not cleared: bytes past the filled length are whatever the previous user
/// left there (zeros in a fresh block).
pub struct PooledBlock {
    buf: BlockBuf,
    filled: usize,
    class: usize,
    reservation: Reservation,
    pool: Arc<PoolInner>,
}

impl PooledBlock {
    /// The block's size in bytes (its size class).
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Bytes marked as filled.
    pub fn filled_len(&self) -> usize {
        self.filled
    }

    /// Mark the first `len` bytes as filled.
    ///
    /// # Panics
    ///
    /// If `len > self.capacity()`.
    pub fn set_filled_len(&mut self, len: usize) {
        assert!(
            len <= self.buf.len(),
            "filled length {len} is past the end of a {} byte block",
            self.buf.len()
        );
        self.filled = len;
    }

    /// Mark `n` more bytes as filled (after writing them into [`unfilled_mut`](Self::unfilled_mut)).
    ///
    /// # Panics
    ///
    /// If that would pass the end of the block.
    pub fn advance(&mut self, n: usize) {
        let len = self
            .filled
            .checked_add(n)
            .expect("filled length overflows usize");
        self.set_filled_len(len);
    }

    /// Mark the block empty.
    pub fn clear(&mut self) {
        self.filled = 0;
    }

    /// Bytes left after the filled part.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.filled
    }

    /// Whether every byte is filled.
    pub fn is_full(&self) -> bool {
        self.filled == self.buf.len()
    }

    /// The filled part.
    pub fn filled(&self) -> &[u8] {
        &self.buf[..self.filled]
    }

    /// The filled part, mutable.
    pub fn filled_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.filled]
    }

    /// The part after the filled bytes, to read into.
    pub fn unfilled_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.filled..]
    }
}

impl Deref for PooledBlock {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf
    }
}

impl DerefMut for PooledBlock {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl AsRef<[u8]> for PooledBlock {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl AsMut<[u8]> for PooledBlock {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl Drop for PooledBlock {
    fn drop(&mut self) {
        let Some(buf) = self.buf.0.take() else { return };
        let reservation = self.reservation.take();
        self.pool.give_back(self.class, buf, reservation);
    }
}

impl fmt::Debug for PooledBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledBlock")
            .field("capacity", &self.buf.len())
            .field("filled", &self.filled)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;

    /// Poll a future that must complete without waiting.
    fn now<F: Future>(future: F) -> F::Output {
        match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("future had to wait"),
        }
    }

    #[test]
    fn size_hints_map_to_the_smallest_class_that_holds_them() {
        let cases = [
            (0, 64 * KIB),
            (1, 64 * KIB),
            (64 * KIB, 64 * KIB),
            (64 * KIB + 1, 128 * KIB),
            (MIB, MIB),
            (MIB + 1, 2 * MIB),
            (5 * MIB, 8 * MIB),
            (8 * MIB, 8 * MIB),
            (8 * MIB + 1, 8 * MIB),
            (usize::MAX, 8 * MIB),
        ];
        for (hint, size) in cases {
            assert_eq!(BufferPool::block_size_for(hint), size, "hint {hint}");
        }
        for (index, size) in SIZE_CLASSES.iter().enumerate() {
            assert_eq!(class_index(*size), index);
            assert!(size.is_power_of_two());
        }
    }

    #[test]
    fn blocks_have_their_class_size_and_are_reused() {
        let pool = BufferPool::new(MemoryBudget::new(64 * MIB));
        let mut block = now(pool.get(100 * KIB)).unwrap();
        assert_eq!(block.capacity(), 128 * KIB);
        assert_eq!(block.len(), 128 * KIB);
        block[..5].copy_from_slice(b"hello");
        block.set_filled_len(5);
        let address = block.as_ptr();
        drop(block);
        assert_eq!(pool.cached_bytes(), 128 * KIB);
        assert_eq!(pool.budget().reserved(), 128 * KIB);

        let block = now(pool.get(128 * KIB)).unwrap();
        assert_eq!(
            block.as_ptr(),
            address,
            "the cached block is handed out again"
        );
        assert_eq!(block.filled_len(), 0, "a reused block starts empty");
        let metrics = pool.metrics();
        assert_eq!(metrics.pool_blocks_allocated, 1);
        assert_eq!(metrics.pool_hits, 1);
        assert_eq!(metrics.pool_cached_bytes, 0);
    }

    #[test]
    fn filled_length_helpers_track_the_data() {
        let pool = BufferPool::new(MemoryBudget::new(MIB));
        let mut block = pool.try_get(1).unwrap();
        assert_eq!(block.remaining(), 64 * KIB);
        block.unfilled_mut()[..3].copy_from_slice(b"abc");
        block.advance(3);
        block.unfilled_mut()[..2].copy_from_slice(b"de");
        block.advance(2);
        assert_eq!(block.filled(), b"abcde");
        block.filled_mut()[0] = b'A';
        assert_eq!(block.filled(), b"Abcde");
        assert_eq!(block.remaining(), 64 * KIB - 5);
        block.set_filled_len(64 * KIB);
        assert!(block.is_full());
        block.clear();
        assert_eq!(block.filled_len(), 0);
    }

    #[test]
    #[should_panic(expected = "past the end")]
    fn filling_past_the_end_panics() {
        let pool = BufferPool::new(MemoryBudget::new(MIB));
        let mut block = pool.try_get(1).unwrap();
        block.advance(64 * KIB + 1);
    }

    #[test]
    fn a_block_larger_than_the_budget_is_an_error() {
        let pool = BufferPool::new(MemoryBudget::new(MIB));
        assert_eq!(
            now(pool.get(2 * MIB)).unwrap_err(),
            BudgetError::ExceedsCapacity {
                requested: 2 * MIB,
                capacity: MIB
            }
        );
    }

    #[test]
    fn free_lists_keep_at_most_the_retention_limit() {
        let pool = BufferPool::with_retention(MemoryBudget::new(64 * MIB), 3 * MIB);
        let blocks: Vec<PooledBlock> = (0..5).map(|_| pool.try_get(MIB).unwrap()).collect();
        assert_eq!(pool.budget().reserved(), 5 * MIB);
        drop(blocks);
        assert_eq!(pool.cached_bytes(), 3 * MIB);
        assert_eq!(
            pool.budget().reserved(),
            3 * MIB,
            "freed blocks are no longer reserved"
        );
        assert_eq!(pool.metrics().pool_blocks_freed, 2);
        assert_eq!(pool.trim(), 3 * MIB);
        assert_eq!(pool.budget().reserved(), 0);
    }

    #[test]
    fn zero_retention_caches_nothing() {
        let pool = BufferPool::with_retention(MemoryBudget::new(MIB), 0);
        drop(pool.try_get(1).unwrap());
        assert_eq!(pool.cached_bytes(), 0);
        assert_eq!(pool.budget().reserved(), 0);
    }

    #[test]
    fn cached_blocks_of_other_classes_are_freed_when_the_budget_is_full() {
        let pool = BufferPool::new(MemoryBudget::new(8 * MIB));
        let small: Vec<PooledBlock> = (0..128).map(|_| pool.try_get(64 * KIB).unwrap()).collect();
        drop(small);
        assert_eq!(pool.cached_bytes(), 8 * MIB);
        assert_eq!(pool.budget().available(), 0);

        // Without waiting, through the non-waiting path ...
        let large = pool.try_get(8 * MIB).unwrap();
        assert_eq!(pool.cached_bytes(), 0);
        assert_eq!(pool.metrics().pool_blocks_freed, 128);
        drop(large);

        // ... and through the waiting one.
        let medium: Vec<PooledBlock> = (0..8).map(|_| pool.try_get(MIB).unwrap()).collect();
        drop(medium);
        let large = now(pool.get(8 * MIB)).unwrap();
        assert_eq!(large.capacity(), 8 * MIB);
        assert_eq!(pool.budget().reserved(), 8 * MIB);
    }

    #[test]
    fn cached_blocks_are_freed_for_other_budget_users() {
        let budget = MemoryBudget::new(4 * MIB);
        let pool = BufferPool::new(budget.clone());
        drop(
            (0..4)
                .map(|_| pool.try_get(MIB).unwrap())
                .collect::<Vec<_>>(),
        );
        assert_eq!(budget.available(), 0);
        let reservation = now(budget.acquire(3 * MIB)).unwrap();
        assert_eq!(reservation.size(), 3 * MIB);
        assert_eq!(pool.cached_bytes(), MIB, "only what was needed is freed");
    }

    #[test]
    fn returned_blocks_are_freed_while_requests_wait() {
        let budget = MemoryBudget::new(2 * MIB);
        let pool = BufferPool::new(budget.clone());
        let first = pool.try_get(MIB).unwrap();
        let second = pool.try_get(MIB).unwrap();
        let mut waiting = pin!(budget.acquire(2 * MIB));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        drop(first);
        assert_eq!(pool.cached_bytes(), 0, "not cached: someone is waiting");
        drop(second);
        match waiting.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(reservation)) => assert_eq!(reservation.size(), 2 * MIB),
            other => panic!("expected the waiting request to be served, got {other:?}"),
        }
    }

    #[test]
    fn a_block_can_be_paid_for_by_an_earlier_reservation() {
        let budget = MemoryBudget::new(4 * MIB);
        let pool = BufferPool::new(budget.clone());

        let too_small = budget.try_acquire(MIB - 1).unwrap();
        assert_eq!(
            pool.get_with_reservation(MIB, too_small).unwrap_err(),
            BudgetError::ReservationTooSmall {
                reserved: MIB - 1,
                needed: MIB
            }
        );

        let generous = budget.try_acquire(3 * MIB).unwrap();
        let block = pool.get_with_reservation(MIB, generous).unwrap();
        assert_eq!(block.capacity(), MIB);
        assert_eq!(budget.reserved(), MIB, "the excess went back");
        drop(block);

        let reservation = budget.try_acquire(MIB).unwrap();
        assert_eq!(budget.reserved(), 2 * MIB);
        let reused = pool.get_with_reservation(MIB, reservation).unwrap();
        assert_eq!(budget.reserved(), MIB, "a cached block is already paid for");
        assert_eq!(pool.metrics().pool_hits, 1);
        drop(reused);
    }

    #[test]
    #[should_panic(expected = "another memory budget")]
    fn a_reservation_from_another_budget_cannot_pay() {
        let pool = BufferPool::new(MemoryBudget::new(MIB));
        let other = MemoryBudget::new(MIB);
        let _ = pool.get_with_reservation(1, other.try_acquire(64 * KIB).unwrap());
    }

    #[test]
    fn pools_sharing_a_budget_report_together_and_dropped_pools_release_their_cache() {
        let budget = MemoryBudget::new(4 * MIB);
        let a = BufferPool::new(budget.clone());
        let b = BufferPool::new(budget.clone());
        drop(a.try_get(MIB).unwrap());
        drop(b.try_get(MIB).unwrap());
        assert_eq!(budget.metrics().pool_cached_bytes, 2 * MIB);
        assert_eq!(budget.metrics().pool_blocks_allocated, 2);
        drop(a);
        assert_eq!(budget.reserved(), MIB);
        let _all_free = budget.try_acquire(4 * MIB).unwrap();
        assert_eq!(b.cached_bytes(), 0);
    }

    #[test]
    fn the_global_pool_is_configured_once() {
        let pool = BufferPool::init_global(32 * MIB, 4 * MIB).unwrap();
        assert_eq!(pool.budget().capacity(), 32 * MIB);
        assert!(std::ptr::eq(pool, BufferPool::global()));
        assert_eq!(
            BufferPool::global_budget_choice(),
            BudgetChoice::setting(32 * MIB, "init_global")
        );
        let error = BufferPool::init_global(MIB, 0).unwrap_err();
        assert_eq!(
            error,
            GlobalPoolError::AlreadyInitialized { capacity: 32 * MIB }
        );
        drop(BufferPool::global().try_get(1).unwrap());
    }
}
