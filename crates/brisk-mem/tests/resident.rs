//! Memory as the OS sees it: a large exact-size buffer is resident from its creation (populated, so
//! the read that fills it takes no page faults) and no more than its size; pool blocks cost resident
//! pages only as they are written; a freed exact buffer is kept resident until it has been idle for
//! `KEPT_IDLE`.
//!
//! Alone in its test binary so that no other test moves the resident set while it is measured.

#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use brisk_mem::{BufferPool, ExactBuf, KEPT_IDLE, MemoryBudget};

const MIB: usize = 1024 * 1024;
const PAGE: usize = 4096;

/// The process's resident set in bytes, from `/proc/self/status`.
fn resident_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("VmRSS line");
    let kib: usize = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmRSS value in kB");
    kib * 1024
}

#[test]
fn exact_buffers_are_resident_from_creation_and_pool_blocks_as_they_are_written() {
    let budget = MemoryBudget::new(512 * MIB);

    // A large exact buffer is populated when it is made: resident at once, so that the socket's
    // copy into it takes no page faults. It holds no more than its own size, and writing it all
    // adds nothing.
    let before = resident_bytes();
    let mut buf = ExactBuf::try_new(&budget, 256 * MIB).unwrap();
    let created = resident_bytes();
    let grown = created.saturating_sub(before);
    assert!(
        (250 * MIB..=260 * MIB).contains(&grown),
        "a fresh 256 MiB buffer made {} MiB resident",
        grown / MIB
    );
    for offset in (0..256 * MIB).step_by(PAGE) {
        buf[offset] = 1;
    }
    let written = resident_bytes();
    assert!(
        written.saturating_sub(created) < 8 * MIB,
        "writing the populated buffer made {} MiB more resident",
        written.saturating_sub(created) / MIB
    );
    // Dropping it keeps its mapping resident (and reserved) for the next exact buffer; the
    // process's trimmer thread gives the pages back to the kernel once it has been idle for
    // KEPT_IDLE (a mapping, whatever glibc's thresholds).
    drop(buf);
    assert_eq!(budget.metrics().kept_bytes, 256 * MIB);
    let kept = resident_bytes();
    assert!(
        written.saturating_sub(kept) < 8 * MIB,
        "a kept buffer gave back {} MiB",
        written.saturating_sub(kept) / MIB
    );
    // Wait for the reservation, not `kept_bytes`: the trimmer takes the mapping off the kept list
    // (the metric falls) before it unmaps it and gives its bytes back to the budget.
    let deadline = Instant::now() + KEPT_IDLE + Duration::from_secs(20);
    while budget.reserved() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let dropped = resident_bytes();
    assert_eq!(budget.reserved(), 0, "the trimmer freed the kept buffer");
    assert_eq!(
        budget.metrics().kept_bytes,
        0,
        "nothing is kept after the trim"
    );
    assert!(
        written.saturating_sub(dropped) >= 250 * MIB,
        "freeing the kept buffer gave back only {} MiB",
        written.saturating_sub(dropped) / MIB
    );

    let pool = BufferPool::new(budget);
    let before = resident_bytes();
    let blocks: Vec<_> = (0..8).map(|_| pool.try_get(8 * MIB).unwrap()).collect();
    let taken = resident_bytes();
    assert!(
        taken.saturating_sub(before) < 8 * MIB,
        "eight fresh 8 MiB blocks made {} MiB resident",
        taken.saturating_sub(before) / MIB
    );
    drop(blocks);
}
