//! One point of the random-read benchmark: aligned blocks at random offsets of one object, read
//! for a fixed time at a fixed queue depth through [`BatchReader`](brisk_client::BatchReader), with
//! the figures a sweep compares (IOPS, MiB/s, client CPU per GiB, latency percentiles, threads,
//! sockets).
//!
//! The loop is closed: `queue_depth` caller buffers of `block_size` bytes are allocated once, and
//! each completion's buffer is submitted again at once for the next random block, so the batch
//! always has `queue_depth` requests in flight and the measurement allocates no buffer per read.
//!
//! Client CPU is the process's user + system time from `/proc/self/stat` (the counters `getrusage`
//! reads, in clock ticks of 10 ms): run the server in another process, or its CPU is counted too.
//!
//! `brisk bench random` and the suite's `random` case run it; brisk-client's `random_read` example
//! includes this file (and [`procfs`](super::procfs)) with `#[path]`, so it uses only brisk-client's
//! public API.

use std::time::{Duration, Instant};

use brisk_client::{
    BatchOptions, Client, Destination, Error, Filled, Pipelining, ReadRequest, Result,
};

use super::procfs::{process_cpu_seconds, sockets_now, threads_now};
use super::xorshift::XorShift;

/// What one sweep point reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasureOptions {
    /// The object read (it must exist and be at least one block long).
    pub key: String,
    /// Bytes per read; offsets are multiples of it.
    pub block_size: usize,
    /// Reads in flight.
    pub queue_depth: usize,
    /// Connections used at most.
    pub connections: usize,
    /// Whether requests are pipelined.
    pub pipelining: Pipelining,
    /// How long reads are issued.
    pub duration: Duration,
    /// Seed of the offsets' generator (the same seed reads the same blocks in the same order).
    pub seed: u64,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        Self {
            key: String::new(),
            block_size: 256 * 1024,
            queue_depth: brisk_client::batch::DEFAULT_QUEUE_DEPTH,
            connections: brisk_client::batch::DEFAULT_BATCH_CONNECTIONS,
            pipelining: Pipelining::Auto,
            duration: Duration::from_secs(15),
            seed: 0x5eed,
        }
    }
}

/// What one sweep point measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Reads completed within the duration.
    pub reads: u64,
    /// Reads that failed within the duration.
    pub errors: u64,
    /// Bytes read within the duration.
    pub bytes: u64,
    /// From the first request to the end of the duration.
    pub elapsed: Duration,
    /// Reads per second.
    pub iops: f64,
    /// MiB read per second.
    pub mib_per_s: f64,
    /// Client CPU (user + system) over the run, seconds.
    pub cpu_seconds: f64,
    /// Client CPU seconds per GiB read.
    pub cpu_s_per_gib: f64,
    /// Median latency from submission to completion.
    pub latency_p50: Duration,
    /// 99th percentile latency.
    pub latency_p99: Duration,
    /// Threads of the process during the run (`Threads:` of `/proc/self/status`).
    pub threads: u64,
    /// Sockets the process held at the end of the run (file descriptors that are sockets).
    pub sockets: u64,
    /// The most connections the batch held at once.
    pub connections: u64,
    /// Responses that pipelining overlapped.
    pub pipelined: u64,
    /// Whether the batch stopped pipelining.
    pub fell_back: bool,
}

/// Reads random `block_size` blocks of `bucket`/`options.key` for `options.duration` with
/// `options.queue_depth` reads in flight, and returns the figures.
///
/// The loop that consumes completions and submits the next reads runs as a task on the runtime's
/// workers, wherever `measure` is awaited from: awaited from `block_on`'s thread, every completion
/// would wake that thread from a worker (a futex wake-up and a context switch per read). Spawned,
/// a completion wakes its consumer on the worker that finished it. At 256 KiB and queue depth 64
/// against `brisk serve`, that cut the client's CPU per GiB by 7 % and 16 % (medians of two
/// interleaved series of 3 and 6 rounds). Outside a tokio runtime it panics, like `tokio::spawn`.
pub async fn measure(client: &Client, bucket: &str, options: &MeasureOptions) -> Result<Figures> {
    let (client, bucket, options) = (client.clone(), bucket.to_owned(), options.clone());
    match tokio::spawn(async move { measure_on_worker(&client, &bucket, &options).await }).await {
        Ok(result) => result,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Only a runtime shutting down cancels the task, and that drops this future too.
            Err(e) => unreachable!("the measuring task was cancelled: {e}"),
        },
    }
}

async fn measure_on_worker(
    client: &Client,
    bucket: &str,
    options: &MeasureOptions,
) -> Result<Figures> {
    if options.block_size == 0 || options.queue_depth == 0 {
        return Err(Error::InvalidArgument {
            what: "block size and queue depth must be at least 1".into(),
        });
    }
    let size = client.head(bucket, &options.key).await?.content_length;
    let blocks = size / options.block_size as u64;
    if blocks == 0 {
        return Err(Error::InvalidArgument {
            what: format!(
                "{} is {size} bytes, smaller than one {}-byte block",
                options.key, options.block_size
            ),
        });
    }
    let mut reader = client.batch_reader(
        bucket,
        BatchOptions {
            queue_depth: options.queue_depth,
            connections: options.connections,
            pipelining: options.pipelining,
            coalesce: false,
        },
    )?;
    let key: std::sync::Arc<str> = options.key.as_str().into();
    let mut random = XorShift::new(options.seed);
    // Latencies in microseconds; sized for 15 s at 100,000 IOPS so it rarely grows.
    let mut latencies: Vec<u32> = Vec::with_capacity(1 << 21);
    let mut started: Vec<Instant> = Vec::with_capacity(options.queue_depth);
    let cpu_before = process_cpu_seconds();
    let begin = Instant::now();
    let deadline = begin + options.duration;
    for slot in 0..options.queue_depth {
        started.push(Instant::now());
        let offset = random.below(blocks) * options.block_size as u64;
        reader.submit(ReadRequest::new(
            slot as u64,
            key.clone(),
            offset,
            options.block_size,
            Destination::Buffer(vec![0; options.block_size]),
        ));
    }
    let (mut reads, mut errors, mut bytes) = (0u64, 0u64, 0u64);
    let mut threads = 0;
    while let Some(done) = reader.next().await {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let slot = done.id as usize;
        latencies.push(
            now.duration_since(started[slot])
                .as_micros()
                .min(u32::MAX as u128) as u32,
        );
        match done.result {
            Ok(n) => {
                reads += 1;
                bytes += n as u64;
            }
            Err(_) => errors += 1,
        }
        if reads == 1000 {
            threads = threads_now();
        }
        let buffer = match done.buffer {
            Some(Filled::Buffer(b)) => b,
            _ => vec![0; options.block_size],
        };
        started[slot] = now;
        let offset = random.below(blocks) * options.block_size as u64;
        reader.submit(ReadRequest::new(
            done.id,
            key.clone(),
            offset,
            options.block_size,
            Destination::Buffer(buffer),
        ));
    }
    let elapsed = begin
        .elapsed()
        .min(options.duration.max(Duration::from_millis(1)));
    let cpu_seconds = process_cpu_seconds() - cpu_before;
    let sockets = sockets_now();
    let threads = threads.max(threads_now());
    let stats = reader.stats();
    drop(reader);
    latencies.sort_unstable();
    let percentile = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(Duration::ZERO, |&us| Duration::from_micros(us as u64))
    };
    let secs = elapsed.as_secs_f64();
    let gib = bytes as f64 / (1u64 << 30) as f64;
    Ok(Figures {
        reads,
        errors,
        bytes,
        elapsed,
        iops: reads as f64 / secs,
        mib_per_s: bytes as f64 / (1u64 << 20) as f64 / secs,
        cpu_seconds,
        cpu_s_per_gib: if gib > 0.0 { cpu_seconds / gib } else { 0.0 },
        latency_p50: percentile(0.50),
        latency_p99: percentile(0.99),
        threads,
        sockets,
        connections: stats.max_connections,
        pipelined: stats.pipelined,
        fell_back: stats.fell_back,
    })
}
