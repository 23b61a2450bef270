//! The counting global allocator of the allocation tests: it forwards every call to the system
//! allocator and, inside a counting [`Window`], counts allocations and tracks live and peak bytes.
//!
//! A test binary installs it once (a global allocator is per binary, so allocation tests keep a
//! binary of their own):
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: brisk_testkit::alloc::CountingAllocator = brisk_testkit::alloc::CountingAllocator;
//! ```
//!
//! Two kinds of window:
//!
//! - [`Window::this_thread`] (and [`count`], [`count_future`]) counts what the current thread
//!   allocates, so tests running in parallel in the same binary do not see each other's work. A
//!   future counted this way must be polled on this thread (a current-thread runtime).
//! - [`Window::process`] counts every thread of the process: for a server running on a runtime's
//!   workers. One process window is open at a time (a second one waits for the first to close), but
//!   whatever else the process does meanwhile is counted too.
//!
//! This module uses nothing but `std`, and it holds the only `unsafe` code of the workspace's tests.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The global allocator: [`System`], plus counting while a [`Window`] is open.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

/// What a window saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Allocations, zeroed allocations and reallocations.
    pub allocations: u64,
    /// Bytes asked for by those (a reallocation counts its new size).
    pub bytes: u64,
    /// The largest single allocation (or new size of a reallocation).
    pub largest: usize,
    /// Bytes allocated minus bytes freed since the window opened: negative when the window freed
    /// more than it allocated (memory allocated before it, or on another thread).
    pub live: i64,
    /// The highest `live` reached while the window was open (0 if it never rose).
    pub peak: u64,
}

thread_local! {
    // Cells without destructors: reading or writing them never allocates, and they stay usable
    // until the thread's very end.
    static THREAD_OPEN: Cell<bool> = const { Cell::new(false) };
    static THREAD_ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static THREAD_BYTES: Cell<u64> = const { Cell::new(0) };
    static THREAD_LARGEST: Cell<usize> = const { Cell::new(0) };
    static THREAD_LIVE: Cell<i64> = const { Cell::new(0) };
    static THREAD_PEAK: Cell<i64> = const { Cell::new(0) };
}

static PROCESS_OPEN: AtomicBool = AtomicBool::new(false);
static PROCESS_WINDOW: Mutex<()> = Mutex::new(());
static PROCESS_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static PROCESS_BYTES: AtomicU64 = AtomicU64::new(0);
static PROCESS_LARGEST: AtomicUsize = AtomicUsize::new(0);
static PROCESS_LIVE: AtomicI64 = AtomicI64::new(0);
static PROCESS_PEAK: AtomicI64 = AtomicI64::new(0);

/// Records an allocation of `size` bytes (`freed` bytes given back at the same time, for a
/// reallocation) in the windows open now.
fn record_allocation(size: usize, freed: usize) {
    let growth = size as i64 - freed as i64;
    // `try_with`: during thread teardown the thread-locals may be gone; nothing of a window then.
    let _ = THREAD_OPEN.try_with(|open| {
        if open.get() {
            THREAD_ALLOCATIONS.set(THREAD_ALLOCATIONS.get() + 1);
            THREAD_BYTES.set(THREAD_BYTES.get() + size as u64);
            THREAD_LARGEST.set(THREAD_LARGEST.get().max(size));
            let live = THREAD_LIVE.get() + growth;
            THREAD_LIVE.set(live);
            THREAD_PEAK.set(THREAD_PEAK.get().max(live));
        }
    });
    if PROCESS_OPEN.load(Ordering::Relaxed) {
        PROCESS_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        PROCESS_BYTES.fetch_add(size as u64, Ordering::Relaxed);
        PROCESS_LARGEST.fetch_max(size, Ordering::Relaxed);
        let live = PROCESS_LIVE.fetch_add(growth, Ordering::Relaxed) + growth;
        PROCESS_PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

/// Records that `size` bytes were freed.
fn record_free(size: usize) {
    let _ = THREAD_OPEN.try_with(|open| {
        if open.get() {
            THREAD_LIVE.set(THREAD_LIVE.get() - size as i64);
        }
    });
    if PROCESS_OPEN.load(Ordering::Relaxed) {
        PROCESS_LIVE.fetch_sub(size as i64, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract, and returns what `System` returned. The bookkeeping around the calls only
// touches thread-local `Cell`s without destructors and static atomics: it neither allocates (so it
// cannot recurse into the allocator) nor unwinds.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout (of non-zero size, as the contract requires) is passed
        // through unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            record_allocation(layout.size(), 0);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`. Forwarding (instead of the default alloc + memset) keeps calloc's
        // fresh zero pages untouched, as in a program without this allocator.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            record_allocation(layout.size(), 0);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, that is by `System` (every method
        // forwards), with this layout: the caller's guarantees, passed on.
        unsafe { System.dealloc(ptr, layout) };
        record_free(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, `ptr` came from `System` with `layout`; `new_size` is the
        // caller's, with the caller's guarantees (non-zero, no overflow when rounded to the
        // alignment).
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            record_allocation(new_size, layout.size());
        }
        new
    }
}

/// Which allocations a window counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Thread,
    Process,
}

/// An open counting window; closed by [`stop`](Self::stop) or when dropped.
#[derive(Debug)]
#[must_use = "a window counts only while it is open"]
pub struct Window {
    scope: Scope,
    _exclusive: Option<MutexGuard<'static, ()>>,
    /// A thread's window reads that thread's counters: it stays on it.
    _not_send: PhantomData<*const ()>,
}

impl Window {
    /// Opens a window on the current thread's allocations.
    ///
    /// # Panics
    ///
    /// If a window is already open on this thread, or if [`CountingAllocator`] is not this test
    /// binary's global allocator (a window would count nothing, and every test would pass).
    pub fn this_thread() -> Self {
        assert!(
            !THREAD_OPEN.get(),
            "a counting window is already open on this thread"
        );
        reset_thread();
        THREAD_OPEN.set(true);
        let window = Self {
            scope: Scope::Thread,
            _exclusive: None,
            _not_send: PhantomData,
        };
        drop(std::hint::black_box(Box::new(0u64)));
        assert!(
            THREAD_ALLOCATIONS.get() > 0,
            "brisk_testkit::alloc::CountingAllocator is not the #[global_allocator] of this test binary"
        );
        reset_thread();
        window
    }

    /// Opens a window on the whole process's allocations, once no other process window is open.
    ///
    /// # Panics
    ///
    /// If [`CountingAllocator`] is not this test binary's global allocator.
    pub fn process() -> Self {
        let exclusive = PROCESS_WINDOW.lock().unwrap_or_else(|e| e.into_inner());
        reset_process();
        PROCESS_OPEN.store(true, Ordering::SeqCst);
        let window = Self {
            scope: Scope::Process,
            _exclusive: Some(exclusive),
            _not_send: PhantomData,
        };
        drop(std::hint::black_box(Box::new(0u64)));
        assert!(
            PROCESS_ALLOCATIONS.load(Ordering::SeqCst) > 0,
            "brisk_testkit::alloc::CountingAllocator is not the #[global_allocator] of this test binary"
        );
        reset_process();
        window
    }

    /// What the window has seen so far.
    pub fn counts(&self) -> Counts {
        match self.scope {
            Scope::Thread => Counts {
                allocations: THREAD_ALLOCATIONS.get(),
                bytes: THREAD_BYTES.get(),
                largest: THREAD_LARGEST.get(),
                live: THREAD_LIVE.get(),
                peak: THREAD_PEAK.get().max(0) as u64,
            },
            Scope::Process => Counts {
                allocations: PROCESS_ALLOCATIONS.load(Ordering::SeqCst),
                bytes: PROCESS_BYTES.load(Ordering::SeqCst),
                largest: PROCESS_LARGEST.load(Ordering::SeqCst),
                live: PROCESS_LIVE.load(Ordering::SeqCst),
                peak: PROCESS_PEAK.load(Ordering::SeqCst).max(0) as u64,
            },
        }
    }

    /// Closes the window and returns what it saw.
    pub fn stop(self) -> Counts {
        let counts = self.counts();
        drop(self);
        counts
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        match self.scope {
            Scope::Thread => THREAD_OPEN.set(false),
            Scope::Process => PROCESS_OPEN.store(false, Ordering::SeqCst),
        }
    }
}

fn reset_thread() {
    THREAD_ALLOCATIONS.set(0);
    THREAD_BYTES.set(0);
    THREAD_LARGEST.set(0);
    THREAD_LIVE.set(0);
    THREAD_PEAK.set(0);
}

fn reset_process() {
    PROCESS_ALLOCATIONS.store(0, Ordering::SeqCst);
    PROCESS_BYTES.store(0, Ordering::SeqCst);
    PROCESS_LARGEST.store(0, Ordering::SeqCst);
    PROCESS_LIVE.store(0, Ordering::SeqCst);
    PROCESS_PEAK.store(0, Ordering::SeqCst);
}

/// Runs `f` in a window on this thread: its result and what it allocated.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Counts) {
    let window = Window::this_thread();
    let result = f();
    (result, window.stop())
}

/// Runs `future` to its end in a window on this thread: its output and what it allocated while
/// polled. The future must be polled on this thread (a current-thread runtime), and the window
/// also counts what other tasks of that runtime allocate meanwhile.
pub async fn count_future<F: std::future::Future>(future: F) -> (F::Output, Counts) {
    let window = Window::this_thread();
    let output = future.await;
    (output, window.stop())
}
