//! Memory as the OS sees it: an exact-size buffer costs address space at creation, and resident pages
//! only as it is written (its zeroing comes from fresh zero pages, not from a memset).
//!
//! Alone in its test binary so that no other test moves the resident set while it is measured.

#![cfg(target_os = "linux")]

use brisk_mem::{BufferPool, ExactBuf, MemoryBudget};

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
fn buffers_become_resident_only_as_they_are_written() {
    let budget = MemoryBudget::new(512 * MIB);

    let before = resident_bytes();
    let mut buf = ExactBuf::try_new(&budget, 256 * MIB).unwrap();
    let created = resident_bytes();
    assert!(
        created.saturating_sub(before) < 16 * MIB,
        "a fresh 256 MiB buffer made {} MiB resident",
        created.saturating_sub(before) / MIB
    );

    // Writing 64 MiB of it makes (about) 64 MiB resident: the measurement sees real pages.
    for offset in (0..64 * MIB).step_by(PAGE) {
        buf[offset] = 1;
    }
    let written = resident_bytes();
    assert!(
        written.saturating_sub(created) >= 60 * MIB,
        "writing 64 MiB made only {} MiB resident",
        written.saturating_sub(created) / MIB
    );
    drop(buf);

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
