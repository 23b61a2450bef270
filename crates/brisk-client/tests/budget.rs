//! One memory budget shared by many large transfers: the process's peak resident memory, read from
//! the kernel (`VmHWM` in `/proc/self/status`), stays within the budget plus what the process held
//! before the transfers began.
//!
//! The workload: 16 downloads (`download`, parallel ranged GETs into pooled blocks) and 16 uploads
//! (`upload_reader` from a generated stream, parts in pooled blocks) at once, 4 parts in flight each,
//! under a 256 MiB budget. Unbounded, they would want 32 × 4 × 8 MiB = 1 GiB of part buffers. Objects
//! are 64 MiB (2 GiB moved in all), not the 128 MiB of a full-size run, so the test stays near a
//! minute on a shared 2-core machine in a debug build; the memory bound does not depend on the object
//! size (parts are recycled), only the time does.
//!
//! This binary holds this one test, so the peak is this workload's and no other test's.

mod support;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use brisk_client::{PayloadSigning, TransferOptions};
use brisk_mem::MemoryBudget;
use support::{bounded, builder, new_bucket};
use tokio::io::{AsyncRead, ReadBuf};

const MIB: usize = 1024 * 1024;
/// The shared budget.
const BUDGET: usize = 256 * MIB;
/// Transfers of each direction.
const TRANSFERS: usize = 16;
/// Bytes per object.
const OBJECT: usize = 64 * MIB;
/// What the process may hold beyond the budget and its baseline: the runtime's worker stacks and
/// allocator arenas, 16 connections' 64 KiB read buffers, request heads. Measured growth outside the
/// budget is a few MiB; 32 MiB leaves room for allocator fragmentation without hiding a leak of
/// part buffers (one transfer's unbudgeted parts would be 32 MiB).
const SLACK: usize = 32 * MIB;

/// Deterministic bytes generated on the fly: an upload source that holds no memory.
struct Generated {
    left: usize,
    seed: u8,
}

impl AsyncRead for Generated {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.left.min(buf.remaining());
        let start = OBJECT - self.left;
        let seed = self.seed;
        let out = buf.initialize_unfilled_to(n);
        for (i, b) in out.iter_mut().enumerate() {
            *b = ((start + i) as u32)
                .wrapping_mul(2_654_435_761)
                .to_le_bytes()[1]
                ^ seed;
        }
        buf.advance(n);
        self.left -= n;
        Poll::Ready(Ok(()))
    }
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`).
fn proc_status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("{field} not in /proc/self/status"));
    let kib: usize = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("a number of kB");
    kib * 1024
}

/// Peak resident growth stays under the budget. Pool blocks are anonymous mappings (see
/// `brisk_mem::pool`), so a block freed to make room for a waiter goes back to the kernel: with heap
/// blocks glibc kept them and the same run grew 330 MiB over a 256 MiB budget; with mappings, 218 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_large_transfers_stay_within_one_budget() {
    bounded(Duration::from_secs(240), async {
        let budget = MemoryBudget::new(BUDGET);
        let client = builder().memory_budget(budget.clone()).build().unwrap();
        let bucket = new_bucket(&client, "budget").await;
        let options = TransferOptions {
            payload_signing: PayloadSigning::Unsigned,
            ..TransferOptions::default()
        };
        // The objects the downloads read, uploaded one at a time before the measurement.
        for i in 0..TRANSFERS {
            let mut source = Generated {
                left: OBJECT,
                seed: i as u8,
            };
            client
                .upload_reader(&bucket, &format!("src{i}"), &mut source, options)
                .await
                .unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let baseline = proc_status_bytes("VmRSS:");
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..TRANSFERS {
            let (c, b, path) = (
                client.clone(),
                bucket.clone(),
                dir.path().join(format!("dst{i}")),
            );
            tasks.spawn(async move {
                let n = c.download(&b, &format!("src{i}"), &path, options).await?;
                assert_eq!(n, OBJECT as u64);
                Ok::<_, brisk_client::Error>(())
            });
            let (c, b) = (client.clone(), bucket.clone());
            tasks.spawn(async move {
                let mut source = Generated {
                    left: OBJECT,
                    seed: 100 + i as u8,
                };
                let r = c
                    .upload_reader(&b, &format!("up{i}"), &mut source, options)
                    .await?;
                assert_eq!(r.size, OBJECT as u64);
                Ok(())
            });
        }
        while let Some(joined) = tasks.join_next().await {
            joined.unwrap().unwrap();
        }
        let elapsed = started.elapsed();
        let peak = proc_status_bytes("VmHWM:");
        let metrics = budget.metrics();
        let moved = 2 * TRANSFERS * OBJECT;
        eprintln!(
            "{TRANSFERS} downloads + {TRANSFERS} uploads of {} MiB under a {} MiB budget: {:.1} s \
             ({:.0} MiB/s), baseline RSS {} MiB, peak RSS {} MiB (growth {} MiB), peak reserved {} MiB, \
             waits for the budget {}",
            OBJECT / MIB,
            BUDGET / MIB,
            elapsed.as_secs_f64(),
            moved as f64 / MIB as f64 / elapsed.as_secs_f64(),
            baseline / MIB,
            peak / MIB,
            peak.saturating_sub(baseline) / MIB,
            metrics.peak_reserved_bytes / MIB,
            metrics.waits,
        );
        eprintln!("budget metrics: {metrics:?}");
        assert!(metrics.peak_reserved_bytes <= BUDGET);
        assert!(
            metrics.waits > 0,
            "the workload asks for more than the budget, so some parts must have waited"
        );
        assert!(
            peak <= baseline + BUDGET + SLACK,
            "peak RSS {peak} exceeds baseline {baseline} + budget {BUDGET} + slack {SLACK}"
        );
        // The files are whole (spot check: the first download's bytes).
        let first = std::fs::read(dir.path().join("dst0")).unwrap();
        let mut expected = vec![0u8; OBJECT];
        let mut source = Generated {
            left: OBJECT,
            seed: 0,
        };
        let mut buf = ReadBuf::new(&mut expected);
        let waker = std::task::Waker::noop();
        let _ = Pin::new(&mut source).poll_read(&mut Context::from_waker(waker), &mut buf);
        assert!(first == expected);
    })
    .await;
}
