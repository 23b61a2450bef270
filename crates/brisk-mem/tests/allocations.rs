//! Counts heap allocations made by the memory layer itself, with a counting global allocator.
//!
//! Counting is per thread and only inside [`count`], so tests running in parallel (and the
//! test harness) do not disturb each other's numbers. Every future here completes at its first poll and
//! is polled on the test's own thread with a no-op waker, so no runtime allocates behind the count.

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use brisk_mem::{
    BufferPool, ExactBuf, MAPPED_MIN_LEN, MAX_KEPT, MemoryBudget, PooledBlock, SIZE_CLASSES,
};

use brisk_testkit::alloc::{CountingAllocator, count};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

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
fn the_counter_sees_allocations() {
    let (_, counts) = count(|| std::hint::black_box(vec![1u8; 1000]));
    assert_eq!(counts.allocations, 1);
    assert_eq!(counts.bytes, 1000);
}

#[test]
fn pooled_get_and_drop_allocate_nothing_after_warm_up() {
    const CYCLES: usize = 10_000;
    const IN_FLIGHT: usize = 4;
    let pool = BufferPool::new(MemoryBudget::new(256 * MIB));
    // Warm-up: every class once with IN_FLIGHT blocks held at the same time.
    for &size in &SIZE_CLASSES {
        let blocks: Vec<PooledBlock> = (0..IN_FLIGHT)
            .map(|_| now(pool.get(size)).unwrap())
            .collect();
        drop(blocks);
    }
    let allocated_after_warm_up = pool.metrics().pool_blocks_allocated;

    let mut held: [Option<PooledBlock>; IN_FLIGHT] = Default::default();
    let ((), counts) = count(|| {
        for i in 0..CYCLES {
            let hint = SIZE_CLASSES[i % SIZE_CLASSES.len()] - i % 1000;
            let mut block = if i % 2 == 0 {
                now(pool.get(hint)).unwrap()
            } else {
                pool.try_get(hint).unwrap()
            };
            block[0] = i as u8;
            block.set_filled_len(1);
            // Keep a few blocks in flight so gets and drops interleave across classes.
            held[i % IN_FLIGHT] = Some(block);
        }
        held = Default::default();
    });
    assert_eq!(counts.allocations, 0, "{counts:?}");
    let metrics = pool.metrics();
    assert_eq!(metrics.pool_blocks_allocated, allocated_after_warm_up);
    assert_eq!(metrics.pool_hits, CYCLES as u64);
}

#[test]
fn blocks_paid_for_in_advance_allocate_nothing_after_warm_up() {
    let budget = MemoryBudget::new(64 * MIB);
    let pool = BufferPool::new(budget.clone());
    drop(now(pool.get(MIB)).unwrap());
    let ((), counts) = count(|| {
        for _ in 0..1_000 {
            let reservation = now(budget.acquire(MIB)).unwrap();
            let block = pool.get_with_reservation(MIB, reservation).unwrap();
            drop(block);
        }
    });
    assert_eq!(counts.allocations, 0, "{counts:?}");
}

#[test]
fn reservations_allocate_nothing() {
    let budget = MemoryBudget::new(MIB);
    let ((), counts) = count(|| {
        for i in 1..=10_000 {
            let mut reservation = now(budget.acquire(i)).unwrap();
            let part = reservation.split(i / 2);
            reservation.shrink_to(i / 4);
            drop((part, reservation, budget.try_acquire(i).unwrap()));
        }
    });
    assert_eq!(counts.allocations, 0, "{counts:?}");
    assert_eq!(budget.reserved(), 0);
}

#[test]
fn waiting_allocates_nothing_once_the_queue_has_grown() {
    const WAITERS: usize = 8;
    let budget = MemoryBudget::new(WAITERS);
    let cycle = || {
        let cx = &mut Context::from_waker(Waker::noop());
        let held = budget.try_acquire(WAITERS).unwrap();
        let mut waiting: [_; WAITERS] = std::array::from_fn(|_| budget.acquire(1));
        for acquire in &mut waiting {
            assert!(Pin::new(acquire).poll(cx).is_pending());
        }
        drop(held);
        for acquire in &mut waiting {
            assert!(Pin::new(acquire).poll(cx).is_ready());
        }
    };
    // The queue's storage grows on the first cycle and is kept.
    let ((), first) = count(cycle);
    assert!(first.allocations > 0, "the queue had to grow: {first:?}");
    let ((), counts) = count(|| {
        for _ in 0..100 {
            cycle();
        }
    });
    assert_eq!(counts.allocations, 0, "{counts:?}");
    assert_eq!(budget.metrics().waits, 101 * WAITERS as u64);
}

/// The anonymous mapping (`start..end`) of `/proc/self/maps` that holds `address`, if any.
#[cfg(target_os = "linux")]
fn anonymous_mapping_at(address: usize) -> Option<(usize, usize)> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        let perms = fields.next()?;
        // offset, device, inode, and no path: an anonymous mapping.
        let anonymous = fields.nth(2) == Some("0") && fields.next().is_none();
        (start <= address && address < end && perms.starts_with("rw") && anonymous)
            .then_some((start, end))
    })
}

#[test]
fn a_small_exact_buffer_is_one_heap_allocation_of_exactly_its_size() {
    let budget = MemoryBudget::new(512 * MIB);
    for n in [KIB, 64 * KIB, MAPPED_MIN_LEN - 1] {
        let (buf, counts) = count(|| now(ExactBuf::new(&budget, n)).unwrap());
        assert_eq!(counts.allocations, 1, "ExactBuf::new({n}): {counts:?}");
        assert_eq!(counts.bytes, n as u64);
        assert_eq!(counts.largest, n);
        assert_eq!(buf.len(), n);
        assert!(!buf.is_mapped());

        let (vec, counts) = count(|| buf.into_vec());
        assert_eq!(counts.allocations, 0, "into_vec copies nothing");
        assert_eq!((vec.len(), vec.capacity()), (n, n));

        let (buf, counts) = count(|| ExactBuf::try_new(&budget, n).unwrap());
        assert_eq!((counts.allocations, counts.largest), (1, n));
        drop(buf);
    }
    assert_eq!(budget.reserved(), 0);
}

/// From `MAPPED_MIN_LEN` up, an exact buffer takes nothing from the heap: its bytes are one anonymous
/// mapping that starts at the buffer and covers its length rounded up to whole pages (the kernel may
/// merge it with a neighbouring mapping, so the mapping found may be larger, never smaller).
#[test]
#[cfg(target_os = "linux")]
fn a_large_exact_buffer_is_one_mapping_and_no_heap_allocation() {
    const PAGE: usize = 4096;
    let budget = MemoryBudget::new(512 * MIB);
    for n in [MAPPED_MIN_LEN, MAPPED_MIN_LEN + 1, 16 * MIB, 256 * MIB] {
        let (buf, counts) = count(|| now(ExactBuf::new(&budget, n)).unwrap());
        assert_eq!(counts.allocations, 0, "ExactBuf::new({n}): {counts:?}");
        assert_eq!(buf.len(), n);
        assert!(buf.is_mapped());
        let address = buf.as_ptr() as usize;
        assert_eq!(address % PAGE, 0);
        let (start, end) = anonymous_mapping_at(address)
            .unwrap_or_else(|| panic!("no anonymous mapping holds the {n} byte buffer"));
        assert!(start <= address && address + n.next_multiple_of(PAGE) <= end);

        // Handing a mapping over as a vector is a copy: one allocation of exactly n bytes.
        let (vec, counts) = count(|| buf.into_vec());
        assert_eq!((counts.allocations, counts.largest), (1, n));
        assert_eq!((vec.len(), vec.capacity()), (n, n));
        drop(vec);

        let (buf, counts) = count(|| ExactBuf::try_new(&budget, n).unwrap());
        assert_eq!(counts.allocations, 0, "ExactBuf::try_new({n}): {counts:?}");
        drop(buf);
    }
    // Freed mapped buffers are kept for the next one, still reserved.
    assert_eq!(budget.reserved(), budget.metrics().kept_bytes);
    budget.set_kept_limit(0);
    assert_eq!(budget.reserved(), 0);
}

/// Keeping a freed mapped buffer and making the next one from it take nothing from the heap (once
/// the budget's first kept buffer has started the process's trimmer thread).
#[test]
#[cfg(target_os = "linux")]
fn a_kept_mapping_is_kept_and_reused_without_a_heap_allocation() {
    let budget = MemoryBudget::new(128 * MIB);
    drop(now(ExactBuf::for_overwrite(&budget, 16 * MIB)).unwrap());
    for _ in 0..3 {
        let (buf, counts) = count(|| now(ExactBuf::for_overwrite(&budget, 16 * MIB)).unwrap());
        assert_eq!(counts.allocations, 0, "for_overwrite: {counts:?}");
        let ((), counts) = count(|| drop(buf));
        assert_eq!(counts.allocations, 0, "keeping: {counts:?}");
    }
    let metrics = budget.metrics();
    assert_eq!((metrics.kept_reuses, metrics.kept_bytes), (3, 16 * MIB));

    // More buffers than are kept: keeping them, and letting the oldest go, allocates nothing.
    let many: Vec<ExactBuf> = (0..MAX_KEPT + 2)
        .map(|i| now(ExactBuf::for_overwrite(&budget, MIB + i * 4096)).unwrap())
        .collect();
    let ((), counts) = count(|| drop(many));
    assert_eq!(
        counts.allocations, 0,
        "keeping more than MAX_KEPT: {counts:?}"
    );
    assert!(budget.metrics().kept_bytes <= budget.capacity());
}
