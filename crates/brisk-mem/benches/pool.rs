//! The cost of the memory layer on the data path: taking and returning a pooled block, reserving and
//! releasing budget bytes, and creating an exact-size buffer.
//!
//! `cargo bench -p brisk-mem --bench pool`

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use brisk_mem::{BufferPool, ExactBuf, MemoryBudget};
use criterion::{Criterion, criterion_group, criterion_main};

const MIB: usize = 1024 * 1024;

/// Poll a future that completes without waiting (an uncontended budget).
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("future had to wait"),
    }
}

fn memory(c: &mut Criterion) {
    let budget = MemoryBudget::new(1024 * MIB);
    let pool = BufferPool::new(budget.clone());
    drop(now(pool.get(8 * MIB)).unwrap());
    drop(now(pool.get(64 * 1024)).unwrap());

    c.bench_function("pool get+drop 8 MiB (cached)", |b| {
        b.iter(|| drop(black_box(now(pool.get(black_box(8 * MIB))).unwrap())))
    });
    c.bench_function("pool get+drop 64 KiB (cached)", |b| {
        b.iter(|| drop(black_box(now(pool.get(black_box(64 * 1024))).unwrap())))
    });
    c.bench_function("budget acquire+release", |b| {
        b.iter(|| drop(black_box(now(budget.acquire(black_box(4096))).unwrap())))
    });
    // glibc serves 16 MiB from the heap once its dynamic mmap threshold has risen (it does after the
    // first free of an mmapped 16 MiB chunk), and then calloc zeroes with memset; above 32 MiB (the
    // threshold's ceiling) every allocation is fresh mmapped zero pages and nothing is touched.
    for mib in [16, 64] {
        c.bench_function(&format!("ExactBuf::new {mib} MiB (untouched)"), |b| {
            b.iter(|| {
                drop(black_box(
                    ExactBuf::try_new(&budget, black_box(mib * MIB)).unwrap(),
                ))
            })
        });
    }
}

criterion_group!(benches, memory);
criterion_main!(benches);
