//! The hard memory cap: a byte counter that never exceeds its capacity, with a fair FIFO queue of
//! requests waiting for bytes to be given back.
//!
//! Every buffer on brisk's data path is paid for by a [`Reservation`] taken from a [`MemoryBudget`]
//! *before* the buffer is allocated, and the reservation is released only *after* the buffer is freed,
//! so the sum of live reservations bounds the bytes actually held.
//!
//! Waiting is first come, first served: once a request is queued, later requests queue behind it even if
//! they are small enough to fit now. Without that, a steady stream of 64 KiB requests would keep an
//! 8 MiB request waiting forever.
//!
//! The budget may be shared with [`BufferPool`](crate::BufferPool)s whose free lists keep freed blocks
//! cached (and still reserved). When a request has to wait, the budget first asks those pools to free
//! enough cached blocks; while any request is waiting, pools free returned blocks instead of caching
//! them. Cached memory therefore never makes a request wait.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use crate::kept::{self, KeptMappings, MAX_KEPT};
use crate::mapping::AnonMapping;
use crate::metrics::{Counters, MemoryMetrics};

/// How many waiters are woken per batch after a release. The wakers are collected in a stack array and
/// woken after the budget's lock is dropped (waking never runs under it), without allocating; a release
/// that unblocks more waiters than this takes the lock again for the next batch.
const WAKE_BATCH: usize = 16;

/// Why a reservation could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// The request is larger than the whole budget: waiting would never end.
    #[error(
        "requested {requested} bytes, more than the memory budget's whole capacity of {capacity} bytes; \
         raise the budget (BRISK_MAX_MEMORY for the process-wide default, --max-memory for the CLI, \
         max_memory= for a Python client)"
    )]
    ExceedsCapacity {
        /// Bytes asked for.
        requested: usize,
        /// The budget's capacity.
        capacity: usize,
    },
    /// A non-waiting request could not be served now: either fewer bytes are free, or earlier requests
    /// are queued and come first.
    #[error(
        "requested {requested} bytes without waiting, but only {available} bytes of the memory budget \
         are free or earlier requests are queued"
    )]
    WouldWait {
        /// Bytes asked for.
        requested: usize,
        /// Bytes free at the time of the request.
        available: usize,
    },
    /// A reservation handed in to pay for a buffer is smaller than the buffer.
    #[error("a reservation of {reserved} bytes cannot pay for a buffer of {needed} bytes")]
    ReservationTooSmall {
        /// Bytes the reservation holds.
        reserved: usize,
        /// Bytes the buffer needs.
        needed: usize,
    },
}

/// Something that holds reserved memory it does not need (a pool's free lists) and can free it when
/// the budget is short.
pub(crate) trait Reclaim: Send + Sync {
    /// Free cached memory until at least `wanted` bytes have been released back to the budget, or
    /// nothing cached is left. Returns the bytes released.
    fn reclaim(&self, wanted: usize) -> usize;
}

/// A hard cap on the bytes reserved at once, shared by every holder of a clone.
///
/// Cloning is cheap (an `Arc`); all clones draw from the same capacity.
#[derive(Clone)]
pub struct MemoryBudget {
    inner: Arc<BudgetInner>,
}

pub(crate) struct BudgetInner {
    capacity: usize,
    state: Mutex<BudgetState>,
    counters: Counters,
    /// Pools sharing this budget, asked to free their cached blocks when a request must wait.
    reclaimers: Mutex<Vec<Weak<dyn Reclaim>>>,
    /// Freed exact buffers' mappings kept for the next exact buffer ([`crate::kept`]).
    kept: Mutex<KeptMappings>,
    /// Whether a thread frees `kept` mappings once idle ([`kept::watch`]).
    pub(crate) trimmed: AtomicBool,
}

struct BudgetState {
    reserved: usize,
    /// Waiting requests, oldest first. Ids increase from front to back, so a request finds its own
    /// entry by binary search.
    queue: VecDeque<Waiter>,
    /// Sum of `amount` over `queue`.
    queued_bytes: usize,
    next_id: u64,
}

struct Waiter {
    id: u64,
    amount: usize,
    waker: Waker,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the state consistent before anything that can panic, so a poisoned
    // lock still guards valid data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MemoryBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        MemoryBudget {
            inner: Arc::new(BudgetInner {
                capacity,
                state: Mutex::new(BudgetState {
                    reserved: 0,
                    queue: VecDeque::new(),
                    queued_bytes: 0,
                    next_id: 0,
                }),
                counters: Counters::default(),
                reclaimers: Mutex::new(Vec::new()),
                kept: Mutex::new(KeptMappings::new(capacity)),
                trimmed: AtomicBool::new(false),
            }),
        }
    }

    /// The cap, in bytes.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// Bytes reserved now (in use and cached by pools).
    pub fn reserved(&self) -> usize {
        self.inner.counters.reserved.load(Ordering::Relaxed)
    }

    /// Bytes that could be reserved now without waiting, ignoring queued requests.
    pub fn available(&self) -> usize {
        self.capacity().saturating_sub(self.reserved())
    }

    /// How many requests are queued waiting for bytes.
    pub fn waiting(&self) -> usize {
        self.inner.counters.waiting.load(Ordering::SeqCst)
    }

    /// Reserve `amount` bytes, waiting (in FIFO order) until they are free.
    ///
    /// Fails at once with [`BudgetError::ExceedsCapacity`] if `amount` is larger than the capacity.
    /// Dropping the returned future before it completes gives up its place in the queue; if the bytes
    /// had already been granted, they are released. Either way nothing leaks and the requests behind it
    /// move up.
    pub fn acquire(&self, amount: usize) -> Acquire {
        Acquire {
            budget: self.clone(),
            amount,
            stage: AcquireStage::Start,
        }
    }

    /// Reserve `amount` bytes if that is possible now without overtaking a queued request.
    ///
    /// If the bytes are held by pools' cached blocks, those are freed first.
    pub fn try_acquire(&self, amount: usize) -> Result<Reservation, BudgetError> {
        self.check_capacity(amount)?;
        let shortfall = {
            let mut state = lock(&self.inner.state);
            if let Some(reservation) = self.reserve_if_free(&mut state, amount) {
                return Ok(reservation);
            }
            if !state.queue.is_empty() {
                return Err(self.would_wait(&state, amount));
            }
            amount - (self.inner.capacity - state.reserved)
        };
        self.inner.reclaim(shortfall);
        let mut state = lock(&self.inner.state);
        match self.reserve_if_free(&mut state, amount) {
            Some(reservation) => Ok(reservation),
            None => Err(self.would_wait(&state, amount)),
        }
    }

    /// Bytes of freed exact buffers of 1 MiB and more this budget keeps resident for the next exact
    /// buffer that fits ([`ExactBuf::for_overwrite`](crate::ExactBuf::for_overwrite)), each for at
    /// most [`KEPT_IDLE`](crate::KEPT_IDLE); by default the whole capacity, and 0 keeps none. Kept
    /// bytes stay reserved, and are the first given back when a request would otherwise wait.
    /// Lowering the limit frees what is over it now.
    pub fn set_kept_limit(&self, bytes: usize) {
        lock(&self.inner.kept).set_limit(bytes);
        self.inner.free_over_limit();
    }

    /// Free every kept buffer now (the limit stays): for a caller about to change what it reads,
    /// or that wants its resident set back at once rather than after [`KEPT_IDLE`](crate::KEPT_IDLE).
    pub fn free_kept(&self) {
        self.inner.free_kept(usize::MAX);
    }

    /// Free the kept mappings smaller than `len` bytes.
    pub(crate) fn free_kept_smaller_than(&self, len: usize) {
        self.inner
            .free_kept_with(|kept, free| kept.remove_smaller_than(len, free));
    }

    /// Take a kept mapping of at least `len` bytes (and at most a quarter more), showing `len`
    /// bytes, with a reservation of its whole capacity paying for it.
    pub(crate) fn take_kept(&self, len: usize) -> Option<(AnonMapping, Reservation)> {
        let (map, reserved) = self.inner.with_kept(|kept| kept.take(len))?;
        self.inner
            .counters
            .kept_reuses
            .fetch_add(1, Ordering::Relaxed);
        let reservation = Reservation {
            budget: self.clone(),
            size: reserved,
        };
        Some((map, reservation))
    }

    /// A snapshot of the budget's counters, including those of every pool that draws from it.
    pub fn metrics(&self) -> MemoryMetrics {
        self.inner.counters.snapshot(self.inner.capacity)
    }

    /// Whether `other` is a clone of this budget (draws from the same capacity).
    pub fn same_budget(&self, other: &MemoryBudget) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    #[cfg(test)]
    pub(crate) fn inner_for_tests(&self) -> &BudgetInner {
        &self.inner
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    pub(crate) fn register_reclaimer(&self, reclaimer: Weak<dyn Reclaim>) {
        let mut reclaimers = lock(&self.inner.reclaimers);
        reclaimers.retain(|r| r.strong_count() > 0);
        reclaimers.push(reclaimer);
    }

    fn check_capacity(&self, amount: usize) -> Result<(), BudgetError> {
        if amount > self.inner.capacity {
            return Err(BudgetError::ExceedsCapacity {
                requested: amount,
                capacity: self.inner.capacity,
            });
        }
        Ok(())
    }

    fn would_wait(&self, state: &BudgetState, amount: usize) -> BudgetError {
        BudgetError::WouldWait {
            requested: amount,
            available: self.inner.capacity - state.reserved,
        }
    }

    /// Reserve at once if nobody is queued and the bytes are free.
    fn reserve_if_free(&self, state: &mut BudgetState, amount: usize) -> Option<Reservation> {
        if state.queue.is_empty() && amount <= self.inner.capacity - state.reserved {
            self.inner.add_reserved(state, amount);
            Some(Reservation {
                budget: self.clone(),
                size: amount,
            })
        } else {
            None
        }
    }
}

impl fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("capacity", &self.capacity())
            .field("reserved", &self.reserved())
            .field("waiting", &self.waiting())
            .finish()
    }
}

impl BudgetInner {
    /// Runs `f` on the kept mappings under their lock, then publishes their byte count for
    /// [`metrics`](MemoryBudget::metrics), which reads it without the lock.
    fn with_kept<R>(&self, f: impl FnOnce(&mut KeptMappings) -> R) -> R {
        let mut kept = lock(&self.kept);
        let result = f(&mut kept);
        self.counters
            .kept_bytes
            .store(kept.bytes(), Ordering::Relaxed);
        result
    }

    /// Free the oldest kept mappings while more are kept than the limits allow.
    fn free_over_limit(&self) {
        self.free_kept_with(|kept, free| kept.remove_over_limit(free));
    }

    /// Free the kept mappings idle for [`KEPT_IDLE`](crate::KEPT_IDLE) at `now`; returns when the
    /// next one will be. With nothing kept, `None`, and the trimming thread is marked gone (under
    /// the lock a buffer is kept under, so the next one starts another).
    pub(crate) fn free_expired(&self, now: std::time::Instant) -> Option<std::time::Instant> {
        let mut next = None;
        self.free_kept_with(|kept, free| {
            let (released, due) = kept.remove_expired(now, free);
            if due.is_none() {
                self.trimmed.store(false, Ordering::Release);
            }
            next = due;
            released
        });
        next
    }

    fn add_reserved(&self, state: &mut BudgetState, amount: usize) {
        state.reserved += amount;
        debug_assert!(state.reserved <= self.capacity);
        self.counters
            .reserved
            .store(state.reserved, Ordering::Relaxed);
        self.counters
            .peak_reserved
            .fetch_max(state.reserved, Ordering::Relaxed);
    }

    /// Give back `amount` bytes and serve waiters.
    fn release(&self, amount: usize) {
        if amount == 0 {
            return;
        }
        let mut state = lock(&self.state);
        state.reserved -= amount;
        self.counters
            .reserved
            .store(state.reserved, Ordering::Relaxed);
        self.grant_waiters(state);
    }

    /// Grant queued requests, oldest first, while the oldest fits; wake them after unlocking.
    fn grant_waiters<'a>(&'a self, mut state: MutexGuard<'a, BudgetState>) {
        loop {
            let mut wakers: [Option<Waker>; WAKE_BATCH] = Default::default();
            let mut woken = 0;
            while woken < WAKE_BATCH {
                let Some(front) = state.queue.front() else {
                    break;
                };
                if front.amount > self.capacity - state.reserved {
                    break;
                }
                let Some(waiter) = state.queue.pop_front() else {
                    break;
                };
                state.queued_bytes -= waiter.amount;
                self.add_reserved(&mut state, waiter.amount);
                self.counters.waiting.fetch_sub(1, Ordering::SeqCst);
                wakers[woken] = Some(waiter.waker);
                woken += 1;
            }
            drop(state);
            for waker in wakers.iter_mut().take(woken).filter_map(Option::take) {
                waker.wake();
            }
            if woken < WAKE_BATCH {
                return;
            }
            state = lock(&self.state);
        }
    }

    /// Free kept mappings (newest first) until at least `wanted` bytes are released or none is
    /// left, unmapping them outside the lock; returns the bytes released.
    fn free_kept(&self, wanted: usize) -> usize {
        self.free_kept_with(|kept, free| kept.reclaim(wanted, free))
    }

    /// Free the kept mappings `remove` takes out (handing each to its `free`, and returning their
    /// reserved bytes): unmapped after the lock is let go, then their bytes released.
    fn free_kept_with(
        &self,
        remove: impl FnOnce(&mut KeptMappings, &mut dyn FnMut(AnonMapping)) -> usize,
    ) -> usize {
        let mut unmap: [Option<AnonMapping>; MAX_KEPT + 1] = [const { None }; MAX_KEPT + 1];
        let mut freed = 0;
        let released = self.with_kept(|kept| {
            remove(kept, &mut |map| {
                unmap[freed] = Some(map);
                freed += 1;
            })
        });
        drop(unmap);
        self.release(released);
        released
    }

    /// Free up to `wanted` bytes of kept mappings and, if that is not enough, ask the pools sharing
    /// this budget to free cached blocks.
    fn reclaim(&self, mut wanted: usize) {
        if wanted == 0 {
            return;
        }
        wanted = wanted.saturating_sub(self.free_kept(wanted));
        if wanted == 0 {
            return;
        }
        // Lock order: reclaimers, then a pool's free lists, then the budget state.
        let reclaimers = lock(&self.reclaimers);
        for reclaimer in reclaimers.iter().filter_map(Weak::upgrade) {
            wanted = wanted.saturating_sub(reclaimer.reclaim(wanted));
            if wanted == 0 {
                break;
            }
        }
    }
}

/// Bytes reserved from a [`MemoryBudget`], given back when dropped.
///
/// A reservation is for actual sizes: take what the buffer needs, and give back early what turns out
/// not to be needed with [`shrink_to`](Reservation::shrink_to) or [`split`](Reservation::split).
pub struct Reservation {
    budget: MemoryBudget,
    size: usize,
}

impl Reservation {
    /// Bytes held.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The budget the bytes are reserved from.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Give back everything above `new_size` bytes now. Does nothing if `new_size >= self.size()`.
    pub fn shrink_to(&mut self, new_size: usize) {
        if new_size < self.size {
            let released = self.size - new_size;
            self.size = new_size;
            self.budget.inner.release(released);
        }
    }

    /// Move `bytes` of this reservation into a new one (for example, one part of a transfer reserved
    /// as a whole).
    ///
    /// # Panics
    ///
    /// If `bytes > self.size()`.
    pub fn split(&mut self, bytes: usize) -> Reservation {
        assert!(
            bytes <= self.size,
            "cannot split {bytes} bytes off a reservation of {} bytes",
            self.size
        );
        self.size -= bytes;
        Reservation {
            budget: self.budget.clone(),
            size: bytes,
        }
    }

    /// Add another reservation from the same budget to this one.
    ///
    /// # Panics
    ///
    /// If `other` was reserved from a different budget.
    pub fn merge(&mut self, mut other: Reservation) {
        assert!(
            self.budget.same_budget(&other.budget),
            "cannot merge reservations of different memory budgets"
        );
        self.size += std::mem::take(&mut other.size);
    }
}

impl Reservation {
    /// Keep `map`, a freed exact buffer whose capacity this reservation paid for, for the next exact
    /// buffer ([`crate::kept`]), its bytes staying reserved; or free it, and give the bytes back,
    /// when the budget keeps nothing of that size or requests are waiting for bytes.
    pub(crate) fn keep_mapping(mut self, map: AnonMapping) {
        let inner = &self.budget.inner;
        let size = self.size;
        let refused = if map.capacity() != size || inner.counters.waiting.load(Ordering::SeqCst) > 0
        {
            Some(map)
        } else {
            inner.with_kept(|kept| {
                if !kept.accepts(size) {
                    return Some(map);
                }
                kept.keep(map, size);
                None
            })
        };
        if let Some(map) = refused {
            // The memory first, then the bytes (when `self` drops), as for any buffer.
            drop(map);
            return;
        }
        self.size = 0;
        // A request that queued after the check above and reclaimed before the push would wait
        // while this mapping holds its bytes: it counted itself as waiting before it reclaimed
        // (both `SeqCst`), so a waiter that the check missed is seen here, and gets them.
        if inner.counters.waiting.load(Ordering::SeqCst) > 0 {
            inner.free_kept(usize::MAX);
        }
        inner.free_over_limit();
        kept::watch(&self.budget.inner);
    }

    /// Move all bytes into a new reservation, leaving this one empty (so a `Drop` impl can hand the
    /// bytes on).
    pub(crate) fn take(&mut self) -> Reservation {
        let size = self.size;
        self.split(size)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.inner.release(self.size);
    }
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("size", &self.size)
            .finish()
    }
}

/// The future returned by [`MemoryBudget::acquire`]. Cancellation-safe: see there.
pub struct Acquire {
    budget: MemoryBudget,
    amount: usize,
    stage: AcquireStage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AcquireStage {
    /// Not polled yet.
    Start,
    /// In the queue under this id (or already granted and removed from it).
    Queued(u64),
    /// The reservation or the error has been returned.
    Done,
}

impl Acquire {
    fn ready(&mut self) -> Poll<Result<Reservation, BudgetError>> {
        self.stage = AcquireStage::Done;
        Poll::Ready(Ok(Reservation {
            budget: self.budget.clone(),
            size: self.amount,
        }))
    }

    /// Granted requests have been removed from the queue by the releaser, which also reserved their
    /// bytes; a request still in the queue refreshes its waker.
    fn poll_queued(
        &mut self,
        id: u64,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Reservation, BudgetError>> {
        let mut state = lock(&self.budget.inner.state);
        match state.queue.binary_search_by_key(&id, |w| w.id) {
            Ok(index) => {
                let waiter = &mut state.queue[index];
                if !waiter.waker.will_wake(cx.waker()) {
                    waiter.waker = cx.waker().clone();
                }
                Poll::Pending
            }
            Err(_) => {
                drop(state);
                self.ready()
            }
        }
    }
}

impl Future for Acquire {
    type Output = Result<Reservation, BudgetError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match this.stage {
            AcquireStage::Start => {
                if let Err(error) = this.budget.check_capacity(this.amount) {
                    this.stage = AcquireStage::Done;
                    return Poll::Ready(Err(error));
                }
                let inner = &this.budget.inner;
                let (id, shortfall) = {
                    let mut state = lock(&inner.state);
                    if let Some(reservation) = this.budget.reserve_if_free(&mut state, this.amount)
                    {
                        this.stage = AcquireStage::Done;
                        return Poll::Ready(Ok(reservation));
                    }
                    let id = state.next_id;
                    state.next_id += 1;
                    state.queue.push_back(Waiter {
                        id,
                        amount: this.amount,
                        waker: cx.waker().clone(),
                    });
                    state.queued_bytes += this.amount;
                    inner.counters.waiting.fetch_add(1, Ordering::SeqCst);
                    inner.counters.waits.fetch_add(1, Ordering::Relaxed);
                    let free = inner.capacity - state.reserved;
                    (id, state.queued_bytes.saturating_sub(free))
                };
                this.stage = AcquireStage::Queued(id);
                // Queued first, reclaimed second: from now on pools free returned blocks instead of
                // caching them, so after this call no cached block can hold bytes this request needs.
                inner.reclaim(shortfall);
                this.poll_queued(id, cx)
            }
            AcquireStage::Queued(id) => this.poll_queued(id, cx),
            AcquireStage::Done => panic!("memory budget Acquire polled after it completed"),
        }
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        let AcquireStage::Queued(id) = self.stage else {
            return;
        };
        let inner = &self.budget.inner;
        let mut state = lock(&inner.state);
        match state.queue.binary_search_by_key(&id, |w| w.id) {
            Ok(index) => {
                state.queue.remove(index);
                state.queued_bytes -= self.amount;
                inner.counters.waiting.fetch_sub(1, Ordering::SeqCst);
            }
            // Granted but never collected: the bytes were reserved on our behalf.
            Err(_) => {
                state.reserved -= self.amount;
                inner
                    .counters
                    .reserved
                    .store(state.reserved, Ordering::Relaxed);
            }
        }
        // Removing the head of the queue may let the requests behind it proceed.
        inner.grant_waiters(state);
    }
}

impl fmt::Debug for Acquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("amount", &self.amount)
            .field("stage", &self.stage)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    /// A waker that counts how often it was woken.
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting_waker() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        (Arc::clone(&counter), Waker::from(Arc::clone(&counter)))
    }

    fn poll(acquire: &mut Acquire) -> Poll<Result<Reservation, BudgetError>> {
        Pin::new(acquire).poll(&mut Context::from_waker(Waker::noop()))
    }

    fn poll_ready(acquire: &mut Acquire) -> Reservation {
        match poll(acquire) {
            Poll::Ready(result) => result.expect("acquire failed"),
            Poll::Pending => panic!("acquire is still waiting"),
        }
    }

    #[test]
    fn acquire_within_capacity_completes_at_first_poll() {
        let budget = MemoryBudget::new(100);
        let reservation = poll_ready(&mut budget.acquire(60));
        assert_eq!(reservation.size(), 60);
        assert_eq!(budget.reserved(), 60);
        assert_eq!(budget.available(), 40);
        drop(reservation);
        assert_eq!(budget.reserved(), 0);
        assert_eq!(budget.metrics().peak_reserved_bytes, 60);
        assert_eq!(budget.metrics().waits, 0);
    }

    #[test]
    fn request_larger_than_capacity_fails_at_once() {
        let budget = MemoryBudget::new(100);
        let expected = BudgetError::ExceedsCapacity {
            requested: 101,
            capacity: 100,
        };
        match poll(&mut budget.acquire(101)) {
            Poll::Ready(Err(error)) => assert_eq!(error, expected),
            other => panic!("expected ExceedsCapacity, got {other:?}"),
        }
        assert_eq!(budget.try_acquire(101).unwrap_err(), expected);
        assert_eq!(budget.waiting(), 0);
        assert!(expected.to_string().contains("101"));
    }

    #[test]
    fn whole_capacity_and_zero_bytes_are_valid_requests() {
        let budget = MemoryBudget::new(100);
        let all = budget.try_acquire(100).unwrap();
        let nothing = poll_ready(&mut budget.acquire(0));
        assert_eq!(nothing.size(), 0);
        drop(all);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn try_acquire_reports_what_is_free() {
        let budget = MemoryBudget::new(100);
        let _held = budget.try_acquire(70).unwrap();
        assert_eq!(
            budget.try_acquire(31).unwrap_err(),
            BudgetError::WouldWait {
                requested: 31,
                available: 30
            }
        );
        assert!(budget.try_acquire(30).is_ok());
    }

    #[test]
    fn waiter_is_granted_and_woken_on_release() {
        let budget = MemoryBudget::new(100);
        let held = budget.try_acquire(100).unwrap();
        let (wakes, waker) = counting_waker();
        let mut acquire = budget.acquire(40);
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut acquire).poll(&mut cx).is_pending());
        assert_eq!(budget.waiting(), 1);
        assert_eq!(budget.metrics().waits, 1);
        drop(held);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        // The bytes are reserved on the waiter's behalf before it is polled again.
        assert_eq!(budget.reserved(), 40);
        let reservation = poll_ready(&mut acquire);
        assert_eq!(reservation.size(), 40);
        assert_eq!(budget.waiting(), 0);
    }

    #[test]
    fn queue_is_first_come_first_served() {
        let budget = MemoryBudget::new(100);
        let mut held = budget.try_acquire(100).unwrap();
        let mut large = budget.acquire(80);
        let mut small = budget.acquire(10);
        assert!(poll(&mut large).is_pending());
        assert!(poll(&mut small).is_pending());

        // 20 bytes free: enough for the small request, but the large one is first in line.
        held.shrink_to(80);
        assert_eq!(held.size(), 80);
        assert!(poll(&mut small).is_pending());
        assert!(matches!(
            budget.try_acquire(5),
            Err(BudgetError::WouldWait { .. })
        ));

        drop(held);
        let large = poll_ready(&mut large);
        let small = poll_ready(&mut small);
        assert_eq!(budget.reserved(), 90);
        drop((large, small));
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn dropping_a_queued_acquire_leaves_the_queue_and_unblocks_the_next() {
        let budget = MemoryBudget::new(100);
        let held = budget.try_acquire(50).unwrap();
        let mut blocked_head = budget.acquire(90);
        let mut behind = budget.acquire(30);
        assert!(poll(&mut blocked_head).is_pending());
        assert!(poll(&mut behind).is_pending());
        assert_eq!(budget.waiting(), 2);

        drop(blocked_head);
        assert_eq!(budget.waiting(), 0);
        let behind = poll_ready(&mut behind);
        assert_eq!(budget.reserved(), 80);
        drop((held, behind));
        assert_eq!(budget.reserved(), 0);
        assert!(budget.try_acquire(100).is_ok());
    }

    #[test]
    fn dropping_a_granted_but_uncollected_acquire_releases_its_bytes() {
        let budget = MemoryBudget::new(100);
        let held = budget.try_acquire(100).unwrap();
        let mut acquire = budget.acquire(60);
        assert!(poll(&mut acquire).is_pending());
        drop(held);
        assert_eq!(budget.reserved(), 60);
        drop(acquire);
        assert_eq!(budget.reserved(), 0);
        assert_eq!(budget.waiting(), 0);
    }

    #[test]
    fn shrinking_a_reservation_serves_waiters() {
        let budget = MemoryBudget::new(100);
        let mut held = budget.try_acquire(100).unwrap();
        let mut acquire = budget.acquire(30);
        assert!(poll(&mut acquire).is_pending());
        held.shrink_to(200);
        assert_eq!(held.size(), 100, "growing is not shrinking");
        held.shrink_to(70);
        assert_eq!(poll_ready(&mut acquire).size(), 30);
    }

    #[test]
    fn split_and_merge_keep_the_total() {
        let budget = MemoryBudget::new(100);
        let mut whole = budget.try_acquire(90).unwrap();
        let part = whole.split(40);
        assert_eq!((whole.size(), part.size()), (50, 40));
        assert_eq!(budget.reserved(), 90);
        drop(part);
        assert_eq!(budget.reserved(), 50);
        let other = budget.try_acquire(10).unwrap();
        whole.merge(other);
        assert_eq!(whole.size(), 60);
        assert_eq!(budget.reserved(), 60);
        drop(whole);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    #[should_panic(expected = "cannot split 11 bytes")]
    fn splitting_more_than_held_panics() {
        let budget = MemoryBudget::new(100);
        let mut reservation = budget.try_acquire(10).unwrap();
        let _ = reservation.split(11);
    }

    #[test]
    #[should_panic(expected = "different memory budgets")]
    fn merging_across_budgets_panics() {
        let a = MemoryBudget::new(100);
        let b = MemoryBudget::new(100);
        let mut from_a = a.try_acquire(10).unwrap();
        from_a.merge(b.try_acquire(10).unwrap());
    }

    #[test]
    fn one_release_wakes_more_waiters_than_one_batch() {
        let waiters = WAKE_BATCH * 2 + 3;
        let budget = MemoryBudget::new(waiters);
        let held = budget.try_acquire(waiters).unwrap();
        let mut acquires: Vec<Acquire> = (0..waiters).map(|_| budget.acquire(1)).collect();
        for acquire in &mut acquires {
            assert!(poll(acquire).is_pending());
        }
        drop(held);
        assert_eq!(budget.waiting(), 0);
        for acquire in &mut acquires {
            assert_eq!(poll_ready(acquire).size(), 1);
        }
        assert_eq!(budget.reserved(), 0);
    }
}
