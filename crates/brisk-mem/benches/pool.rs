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
    // From MAPPED_MIN_LEN up an exact buffer is a mapping populated at creation: this is the cost of
    // making its pages resident (and of unmapping them), paid before the body arrives.
    for mib in [16, 64] {
        c.bench_function(&format!("ExactBuf::new {mib} MiB (populated)"), |b| {
            b.iter(|| {
                drop(black_box(
                    ExactBuf::try_new(&budget, black_box(mib * MIB)).unwrap(),
                ))
            })
        });
    }
}

/// What `ExactBuf` chooses between at `MAPPED_MIN_LEN`, each written in full (as a GET's body fills
/// it) and freed: a heap vector (in a loop glibc reuses the chunk freed the round before, warm pages
/// zeroed by calloc's memset, once its mmap threshold has risen above the size), a fresh mapping whose
/// pages fault as they are written (what calloc returns above the threshold), and a mapping populated
/// at creation (what `ExactBuf` uses from `MAPPED_MIN_LEN` up).
fn fresh_buffer_written_in_full(c: &mut Criterion) {
    let mut group = c.benchmark_group("fresh buffer, written in full");
    for kib in [256, 1024, 4096, 16384] {
        let n = kib * 1024;
        group.bench_function(format!("heap {kib} KiB"), |b| {
            b.iter(|| {
                let mut buf = vec![0u8; black_box(n)];
                buf.fill(1);
                black_box(&buf);
            })
        });
        // What calloc hands out above glibc's mmap threshold: fresh pages that fault as written.
        group.bench_function(format!("fresh mapping {kib} KiB"), |b| {
            b.iter(|| {
                let mut buf = memmap2::MmapMut::map_anon(black_box(n)).unwrap();
                buf.fill(1);
                black_box(&buf);
            })
        });
        group.bench_function(format!("populated mapping {kib} KiB"), |b| {
            b.iter(|| {
                let mut buf = memmap2::MmapOptions::new()
                    .len(black_box(n))
                    .populate()
                    .map_anon()
                    .unwrap();
                buf.fill(1);
                black_box(&buf);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, memory, fresh_buffer_written_in_full);
criterion_main!(benches);
