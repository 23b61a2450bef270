//! The counting allocator counts what its windows should see, and only that.

use std::hint::black_box;

use brisk_testkit::alloc::{CountingAllocator, Window, count};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn a_thread_window_counts_allocations_bytes_and_the_largest() {
    let (v, counts) = count(|| {
        let small = black_box(vec![1u8; 100]);
        drop(small);
        black_box(vec![2u8; 1000])
    });
    assert_eq!(v.len(), 1000);
    assert_eq!(counts.allocations, 2);
    assert_eq!(counts.bytes, 1100);
    assert_eq!(counts.largest, 1000);
    // The 100 bytes were freed, the 1000 are still held.
    assert_eq!(counts.live, 1000);
    assert_eq!(counts.peak, 1000);
}

#[test]
fn live_and_peak_follow_frees_and_reallocations() {
    let held = black_box(vec![0u8; 4096]);
    let window = Window::this_thread();
    let mut v: Vec<u8> = Vec::with_capacity(10);
    v.extend_from_slice(&[1; 10]);
    v.reserve_exact(90);
    drop(held);
    let counts = window.counts();
    // Freed what was allocated before the window: live is negative; the peak is what the window
    // itself held at most.
    assert_eq!(counts.live, 100 - 4096);
    assert_eq!(counts.peak, 100);
    assert_eq!(counts.allocations, 2, "one allocation and one reallocation");
    drop(v);
    assert_eq!(window.stop().live, -4096);
}

#[test]
fn nothing_is_counted_outside_a_window_or_on_other_threads() {
    let window = Window::this_thread();
    std::thread::spawn(|| black_box(vec![0u8; 1 << 20]).len())
        .join()
        .unwrap();
    let counts = window.stop();
    // The spawn itself allocates on this thread; the other thread's megabyte is not counted.
    assert!(counts.largest < 1 << 20, "{counts:?}");
    drop(black_box(vec![0u8; 10]));
    let (_, counts) = count(|| ());
    assert_eq!(counts.allocations, 0, "{counts:?}");
}

#[test]
fn a_process_window_counts_every_thread() {
    let window = Window::process();
    std::thread::spawn(|| black_box(vec![0u8; 3 << 20]).len())
        .join()
        .unwrap();
    let counts = window.stop();
    assert!(counts.largest >= 3 << 20, "{counts:?}");
    // A process window sees every thread, including the other tests of this binary running beside
    // this one: while the 3 MiB was held, they may have freed a little of what they allocated
    // before the window opened, which lowers the process-wide live count. Allow that much.
    const OTHER_TESTS_SLACK: u64 = 64 << 10;
    assert!(counts.peak >= (3 << 20) - OTHER_TESTS_SLACK, "{counts:?}");
}

#[test]
#[should_panic(expected = "already open")]
fn windows_on_one_thread_do_not_nest() {
    let _outer = Window::this_thread();
    let _inner = Window::this_thread();
}
