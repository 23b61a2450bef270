//! One memory budget shared by many large transfers: the process's peak resident memory, read from
//! the kernel (`VmHWM` in `/proc/self/status`), stays within the budget plus what the process held
//! before the transfers began.
//!
//! The workload: 16 downloads (`download`, parallel ranged GETs into pooled blocks) and 16 uploads
//! (`upload_reader` from a generated stream, parts in pooled blocks) at once, 4 parts in flight each,
//! under a 256 MiB budget. Unbounded, they would want 32 × 4 × 8 MiB = 1 GiB of part buffers.
//!
//! Two scales of the same workload:
//!
//! - `many_large_transfers_stay_within_one_budget` (CI): objects of 64 MiB (2 GiB moved in all), so
//!   the test stays near a minute on a shared 2-core machine in a debug build, against the suite's
//!   test server. The memory bound does not depend on the object size (parts are recycled), only the
//!   time does.
//! - `full_scale_transfers_stay_within_one_budget` (ignored: minutes and tens of GB of disk): objects
//!   of 1 GiB (32 GiB moved) against its own `brisk serve --no-fsync`. Run it with
//!   `BRISK_SCRATCH_DIR=/some/dir cargo test --release -p brisk-client --test budget -- --ignored
//!   --nocapture` after `cargo build --release -p brisk-cli`. To fit a shared disk, the 16 downloads
//!   read one 1 GiB object, the bytes of every download but the first are discarded as they land
//!   (the files are truncated while written), and every object and file is deleted as soon as its
//!   transfer is checked: the disk holds about 1 + 1 + 16 (uploaded parts) + 2 (the server
//!   concatenating parts, one per worker thread) GiB at most.
//!
//! The full-scale test is ignored unless asked for, so a run holds one workload and the peak is that
//! workload's and no other test's (do not run both with `--include-ignored`).

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use brisk_client::{Client, PayloadSigning, RetryPolicy, TransferOptions};
use brisk_mem::MemoryBudget;
use brisk_testkit::serve::{ServeCommand, ServeProcess};
use brisk_wire::sigv4::Credentials;
use support::{ACCESS_KEY, SECRET_KEY, bounded, builder, new_bucket};
use tokio::io::{AsyncRead, ReadBuf};

const MIB: usize = 1024 * 1024;
const GIB: usize = 1024 * MIB;
/// The shared budget.
const BUDGET: usize = 256 * MIB;
/// Transfers of each direction.
const TRANSFERS: usize = 16;
/// What the process may hold beyond the budget and its baseline: the runtime's worker stacks and
/// allocator arenas, 16 connections' 64 KiB read buffers, request heads. Measured growth outside the
/// budget is a few MiB; 32 MiB leaves room for allocator fragmentation without hiding a leak of
/// part buffers (one transfer's unbudgeted parts would be 32 MiB).
const SLACK: usize = 32 * MIB;

/// How large one run of the workload is.
#[derive(Debug, Clone, Copy)]
struct Scale {
    /// Bytes per object.
    object: usize,
    /// Distinct objects the downloads read (download `i` reads source `i % sources`).
    sources: usize,
    /// Delete each downloaded file and uploaded object once its transfer is checked, and discard
    /// the bytes of every download but the first as they land (disk space; see
    /// [`discard_downloaded_bytes`]).
    delete_as_done: bool,
}

/// Every 500 ms until `stop` is set, truncates to zero every file in `dir` except the first
/// download's (`dst0` and its temporary file): the downloads still write every byte (positional
/// writes past the end re-extend a file), but the disk does not have to hold 16 GiB of them. The
/// first download is kept whole and checked byte for byte.
fn discard_downloaded_bytes(dir: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name == "dst0" || name.starts_with(".dst0.") {
                    continue;
                }
                // A file renamed or deleted in between is not an error.
                if let Ok(file) = std::fs::OpenOptions::new().write(true).open(entry.path()) {
                    let _ = file.set_len(0);
                }
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    })
}

/// Deterministic bytes generated on the fly: an upload source that holds no memory.
struct Generated {
    len: usize,
    left: usize,
    seed: u8,
}

impl Generated {
    fn new(len: usize, seed: u8) -> Self {
        Generated {
            len,
            left: len,
            seed,
        }
    }

    /// The byte at `offset` of a stream with this seed.
    fn byte(offset: usize, seed: u8) -> u8 {
        (offset as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed
    }
}

impl AsyncRead for Generated {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.left.min(buf.remaining());
        let start = self.len - self.left;
        let seed = self.seed;
        let out = buf.initialize_unfilled_to(n);
        for (i, b) in out.iter_mut().enumerate() {
            *b = Generated::byte(start + i, seed);
        }
        buf.advance(n);
        self.left -= n;
        Poll::Ready(Ok(()))
    }
}

/// Whether the file at `path` holds exactly the generated stream of `len` bytes with `seed`, read
/// 8 MiB at a time.
fn file_matches(path: &Path, len: usize, seed: u8) -> bool {
    let mut file = std::fs::File::open(path).unwrap();
    let mut chunk = vec![0u8; 8 * MIB];
    let mut offset = 0;
    loop {
        let n = file.read(&mut chunk).unwrap();
        if n == 0 {
            return offset == len;
        }
        if chunk[..n]
            .iter()
            .enumerate()
            .any(|(i, &b)| b != Generated::byte(offset + i, seed))
        {
            return false;
        }
        offset += n;
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

/// Runs the workload at `scale` under `budget` (which `client` must use), downloads into `dir`, and
/// checks the memory bound.
async fn transfers_within_one_budget(
    client: Client,
    budget: MemoryBudget,
    dir: &Path,
    scale: Scale,
) {
    let bucket = new_bucket(&client, "budget").await;
    let options = TransferOptions {
        payload_signing: PayloadSigning::Unsigned,
        ..TransferOptions::default()
    };
    let object = scale.object;
    // The objects the downloads read, uploaded one at a time before the measurement.
    for i in 0..scale.sources {
        let mut source = Generated::new(object, i as u8);
        client
            .upload_reader(&bucket, &format!("src{i}"), &mut source, options.clone())
            .await
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let discarding = scale
        .delete_as_done
        .then(|| discard_downloaded_bytes(dir.to_owned(), Arc::clone(&stop)));
    let baseline = proc_status_bytes("VmRSS:");
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..TRANSFERS {
        let (c, b, path) = (client.clone(), bucket.clone(), dir.join(format!("dst{i}")));
        let download_options = options.clone();
        tasks.spawn(async move {
            let source = i % scale.sources;
            let n = c
                .download(&b, &format!("src{source}"), &path, download_options)
                .await?;
            assert_eq!(n, object as u64);
            // The first download is checked byte for byte after the measurement.
            if scale.delete_as_done && i != 0 {
                std::fs::remove_file(&path).unwrap();
            }
            Ok::<_, brisk_client::Error>(())
        });
        let (c, b) = (client.clone(), bucket.clone());
        let upload_options = options.clone();
        tasks.spawn(async move {
            let key = format!("up{i}");
            let mut source = Generated::new(object, 100 + i as u8);
            let r = c
                .upload_reader(&b, &key, &mut source, upload_options)
                .await?;
            assert_eq!(r.size, object as u64);
            if scale.delete_as_done {
                c.delete(&b, &key).await?;
            }
            Ok(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.unwrap().unwrap();
    }
    let elapsed = started.elapsed();
    let peak = proc_status_bytes("VmHWM:");
    stop.store(true, Ordering::Relaxed);
    if let Some(thread) = discarding {
        thread.join().unwrap();
    }
    let metrics = budget.metrics();
    let moved = 2 * TRANSFERS * object;
    eprintln!(
        "{TRANSFERS} downloads + {TRANSFERS} uploads of {} MiB under a {} MiB budget: {:.1} s \
         ({:.0} MiB/s), baseline RSS {} MiB, peak RSS {} MiB (growth {} MiB), peak reserved {} MiB, \
         waits for the budget {}",
        object / MIB,
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
    let first = dir.join("dst0");
    assert!(file_matches(&first, object, 0));
    if scale.delete_as_done {
        std::fs::remove_file(&first).unwrap();
        for i in 0..scale.sources {
            client.delete(&bucket, &format!("src{i}")).await.unwrap();
        }
    }
}

/// Peak resident growth stays under the budget. Pool blocks are anonymous mappings (see
/// `brisk_mem::pool`), so a block freed to make room for a waiter goes back to the kernel: with heap
/// blocks glibc kept them and the same run grew 330 MiB over a 256 MiB budget; with mappings, 218 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_large_transfers_stay_within_one_budget() {
    bounded(Duration::from_secs(240), async {
        let budget = MemoryBudget::new(BUDGET);
        let client = builder().memory_budget(budget.clone()).build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let scale = Scale {
            object: 64 * MIB,
            sources: TRANSFERS,
            delete_as_done: false,
        };
        transfers_within_one_budget(client, budget, dir.path(), scale).await;
    })
    .await;
}

/// `brisk serve --no-fsync` as a child process (so that the process's peak resident memory is the
/// client's alone), from `BRISK_BIN` or `<workspace>/target/release/brisk`, with its data under
/// `root`; killed when dropped.
fn no_fsync_serve(root: &Path) -> ServeProcess {
    let binary = std::env::var_os("BRISK_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| brisk_testkit::process::workspace_root().join("target/release/brisk"));
    assert!(
        binary.is_file(),
        "brisk binary not found at {}: run `cargo build --release -p brisk-cli` (or set BRISK_BIN)",
        binary.display()
    );
    let data = root.join("data");
    std::fs::create_dir_all(&data).unwrap();
    ServeCommand::new(binary)
        .args(&["--no-fsync"])
        .stderr(Stdio::null())
        .start(&data)
}

/// The scale: 16 downloads and 16 uploads of 1 GiB at once under a 256 MiB budget, against
/// `brisk serve --no-fsync`. Files go under `BRISK_SCRATCH_DIR` (default: the system's temporary
/// directory); see the module docs for the disk it needs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes and tens of GB of disk; run by hand, see the module docs"]
async fn full_scale_transfers_stay_within_one_budget() {
    let scratch = std::env::var_os("BRISK_SCRATCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let root = tempfile::tempdir_in(&scratch).unwrap();
    let server = no_fsync_serve(root.path());
    let downloads = root.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    bounded(Duration::from_secs(3600), async {
        let budget = MemoryBudget::new(BUDGET);
        let client = Client::builder()
            .endpoint(server.url.clone())
            .region("us-east-1")
            .credentials(Credentials::new(ACCESS_KEY, SECRET_KEY))
            .read_timeout(Duration::from_secs(120))
            .retry(RetryPolicy {
                max_attempts: 3,
                initial_backoff: Duration::from_millis(5),
                max_backoff: Duration::from_millis(50),
            })
            .memory_budget(budget.clone())
            .build()
            .unwrap();
        let scale = Scale {
            object: GIB,
            sources: 1,
            delete_as_done: true,
        };
        transfers_within_one_budget(client, budget, &downloads, scale).await;
    })
    .await;
    drop(server);
}
