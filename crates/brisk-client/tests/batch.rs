//! Batch reads against real servers (`brisk serve`, in this process, and MinIO, a child process) and
//! against brisk-testkit's scripted fake S3 server, which ends connections with requests still
//! queued on them.
//!
//! Every completed range is compared with the object's bytes; every request must complete exactly
//! once. The counts asserted: connections (client metrics and the batch's own), sockets and threads
//! of the process less the in-process server's, and heap allocations per request (brisk-testkit's
//! counting global allocator, counting on the test's thread only).
//!
//! Tests take one lock so that thread, socket and allocation counts see only their own work.

mod support;

// brisk bench's /proc reader; these tests count only their own threads and sockets.
#[allow(dead_code)]
#[path = "../../brisk-cli/src/bench/procfs.rs"]
mod procfs;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisk_client::batch::{
    BatchOptions, BatchReader, Destination, Filled, Pipelining, ReadRequest,
};
use brisk_client::{Client, Credentials, Error, RetryPolicy};
use brisk_testkit::alloc::{CountingAllocator, count_future};
use brisk_testkit::fake_s3::{Ending, FakeS3, object_ranges};
use procfs::{sockets_now, threads_now};
use support::{ACCESS_KEY, SECRET_KEY, TestServer, brisk, in_process_brisk, minio, pattern};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The process's threads less the in-process `brisk serve`'s: the test's and the client's.
fn client_threads() -> u64 {
    threads_now().saturating_sub(in_process_brisk().threads())
}

/// The process's sockets less the in-process `brisk serve`'s (its listener and the connections it
/// accepted): the client's. Read in that order, a connection opened in between is not counted
/// twice.
fn client_sockets() -> u64 {
    let all = sockets_now();
    all.saturating_sub(in_process_brisk().sockets())
}

/// Each test runs alone (see the module doc), on a current-thread runtime, within a time limit.
/// A reader of `bucket` that joins touching and overlapping ranges into one GET.
fn coalescing_reader(client: &Client, bucket: &str) -> BatchReader {
    client
        .batch_reader(
            bucket,
            BatchOptions {
                coalesce: true,
                ..BatchOptions::default()
            },
        )
        .unwrap()
}

fn run<F: std::future::Future<Output = ()>>(test: F) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(120), test)
                .await
                .expect("test took longer than 120 s")
        });
}

fn client_of(endpoint: &str) -> Client {
    Client::builder()
        .endpoint(endpoint)
        .region("us-east-1")
        .credentials(Credentials::new(ACCESS_KEY, SECRET_KEY))
        .read_timeout(Duration::from_secs(20))
        .retry(RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
        })
        .build()
        .unwrap()
}

/// An object of 3 MiB + 1,234 bytes: several 256 KiB blocks and a ragged end.
const OBJECT_SIZE: usize = 3 * 1024 * 1024 + 1234;

async fn object_on(server: &TestServer, purpose: &str) -> (Client, String, Arc<Vec<u8>>) {
    let client = client_of(&server.endpoint);
    let bucket = support::new_bucket(&client, purpose).await;
    let object = Arc::new(pattern(OBJECT_SIZE, 7));
    client.put(&bucket, "object", &object).await.unwrap();
    (client, bucket, object)
}

/// Lengths at and around the read buffer (64 KiB) and block sizes (256 KiB, 1 MiB).
const LENGTHS: [usize; 11] = [
    1, 4095, 65_535, 65_536, 65_537, 262_143, 262_144, 262_145, 1_048_576, 1_048_577, 100_000,
];

/// Requests at pseudo-random offsets with the lengths above, alternating caller buffers and
/// pooled blocks, plus ranges that run past the end of the object and ranges that start there.
fn requests(seed: u64) -> Vec<ReadRequest> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    for i in 0..120u64 {
        let length = LENGTHS[(i as usize) % LENGTHS.len()];
        let offset = next() % (OBJECT_SIZE - length) as u64;
        let destination = if i % 2 == 0 {
            Destination::Buffer(vec![0xAA; length + (i as usize % 3)])
        } else {
            Destination::Pooled
        };
        out.push(ReadRequest::new(i, "object", offset, length, destination));
    }
    let end = OBJECT_SIZE as u64;
    // Runs past the end: the bytes that exist.
    out.push(ReadRequest::new(
        1000,
        "object",
        end - 10,
        100,
        Destination::Pooled,
    ));
    // Starts at the end, and past it: InvalidRange.
    out.push(ReadRequest::new(
        1001,
        "object",
        end,
        10,
        Destination::Pooled,
    ));
    out.push(ReadRequest::new(
        1002,
        "object",
        end + 5000,
        262_144,
        Destination::Buffer(vec![0; 262_144]),
    ));
    out
}

/// Takes every completion and checks it against `object`: right bytes, right errors, each id once.
async fn check_all(reader: &mut brisk_client::BatchReader, object: &[u8], expected: usize) {
    let mut seen = HashMap::new();
    while let Some(done) = reader.next().await {
        assert!(
            seen.insert(done.id, ()).is_none(),
            "request {} completed twice",
            done.id
        );
        let end = (done.offset as usize + done.length).min(object.len());
        match (&done.result, done.id) {
            (Err(Error::InvalidRange(_)), 1001 | 1002) => {}
            (Ok(n), _) if done.id < 1001 => {
                assert_eq!(
                    *n,
                    end - done.offset as usize,
                    "length of request {}",
                    done.id
                );
                assert!(
                    done.data().unwrap() == &object[done.offset as usize..end],
                    "bytes of request {} ({} at {})",
                    done.id,
                    done.length,
                    done.offset
                );
            }
            (other, id) => panic!("request {id}: unexpected result {other:?}"),
        }
        assert!(
            done.buffer.is_some(),
            "request {} came back without its buffer",
            done.id
        );
    }
    assert_eq!(seen.len(), expected, "completions");
}

async fn ranges_match(server: &TestServer, purpose: &str) {
    let (client, bucket, object) = object_on(server, purpose).await;
    for (round, pipelining) in [Pipelining::Auto, Pipelining::On, Pipelining::Off]
        .into_iter()
        .enumerate()
    {
        let options = BatchOptions {
            queue_depth: 24,
            connections: 3,
            pipelining,
            coalesce: false,
        };
        let mut reader = client.batch_reader(&bucket, options).unwrap();
        let batch = requests(round as u64 + 11);
        let expected = batch.len();
        for request in batch {
            reader.submit(request);
        }
        check_all(&mut reader, &object, expected).await;
        let stats = reader.stats();
        assert!(stats.max_connections <= 3, "{stats:?}");
        assert!(
            !stats.fell_back,
            "{} keeps connections: {stats:?}",
            server.name
        );
        if pipelining == Pipelining::Off {
            assert_eq!(stats.pipelined, 0, "{stats:?}");
        } else {
            assert!(
                stats.pipelined > 0,
                "{pipelining:?} on {}: {stats:?}",
                server.name
            );
        }
    }
    assert!(client.metrics().connections_opened <= 3);
}

#[test]
fn every_range_matches_the_object_on_brisk_serve() {
    run(ranges_match(brisk(), "batch-brisk"));
}

/// MinIO's server (Go's net/http) reads the next request of a connection only once it has
/// answered the previous one, so pipelined requests are answered one after the other: correct,
/// and no fall-back (it keeps connections).
#[test]
fn every_range_matches_the_object_on_minio() {
    run(ranges_match(minio(), "batch-minio"));
}

#[test]
fn touching_and_overlapping_ranges_are_coalesced_on_brisk_serve() {
    run(async {
        let (client, bucket, object) = object_on(brisk(), "batch-coalesce").await;
        let mut reader = coalescing_reader(&client, &bucket);
        // 16 ranges of 100,000 bytes every 90,000 bytes (overlapping by 10,000), then 8 that touch,
        // then two far apart: 3 merged GETs and 2 single ones.
        let mut batch = Vec::new();
        for i in 0..16u64 {
            batch.push(ReadRequest::new(
                i,
                "object",
                i * 90_000,
                100_000,
                Destination::Pooled,
            ));
        }
        for i in 0..8u64 {
            let offset = 2_000_000 + i * 65_536;
            batch.push(ReadRequest::new(
                100 + i,
                "object",
                offset,
                65_536,
                Destination::Pooled,
            ));
        }
        batch.push(ReadRequest::new(
            200,
            "object",
            3_000_000,
            10,
            Destination::Pooled,
        ));
        batch.push(ReadRequest::new(
            201,
            "object",
            3_100_000,
            10,
            Destination::Pooled,
        ));
        let count = batch.len();
        reader.submit_all(batch);
        let mut seen = 0;
        while let Some(done) = reader.next().await {
            let range = done.offset as usize..done.offset as usize + done.length;
            assert!(
                done.data().unwrap() == &object[range],
                "request {}",
                done.id
            );
            seen += 1;
        }
        assert_eq!(seen, count);
        assert_eq!(reader.stats().gets_sent, 4, "{:?}", reader.stats());
    });
}

/// Exact buffers made without populating (as Python's `get_ranges` makes them) are populated by
/// the read a step ahead of the bytes: ranges of several populating steps, two that overlap (one
/// coalesced GET, the second member partly copied from the first) and one that runs past the end
/// come back exact, the rest of their buffers zero.
#[test]
fn unpopulated_exact_buffers_are_filled_exactly_on_brisk_serve() {
    run(async {
        let client = client_of(&brisk().endpoint);
        let bucket = support::new_bucket(&client, "batch-exact").await;
        let object = pattern(9 * 1024 * 1024 + 77, 9);
        client.put(&bucket, "object", &object).await.unwrap();
        let mut reader = coalescing_reader(&client, &bucket);
        let ranges: [(u64, usize); 4] = [
            (1000, 5 * 1024 * 1024 + 3),
            (6_000_000, 2 * 1024 * 1024),
            (7_000_000, 1024 * 1024 + 1),
            (9 * 1024 * 1024, 4 * 1024 * 1024),
        ];
        let mut batch = Vec::new();
        for (id, &(offset, length)) in ranges.iter().enumerate() {
            let buffer = brisk_mem::ExactBuf::for_overwrite(client.memory_budget(), length)
                .await
                .unwrap();
            batch.push(ReadRequest::new(
                id as u64,
                "object",
                offset,
                length,
                Destination::Lent(Box::new(buffer)),
            ));
        }
        reader.submit_all(batch);
        let mut seen = 0;
        while let Some(done) = reader.next().await {
            let start = done.offset as usize;
            let end = (start + done.length).min(object.len());
            assert_eq!(
                *done.result.as_ref().unwrap(),
                end - start,
                "request {}",
                done.id
            );
            let Some(Filled::Lent(buffer)) = &done.buffer else {
                panic!("request {} came back without its buffer", done.id);
            };
            let bytes = (**buffer).as_ref();
            assert!(
                bytes[..end - start] == object[start..end],
                "request {}",
                done.id
            );
            assert!(
                bytes[end - start..].iter().all(|&b| b == 0),
                "request {}",
                done.id
            );
            seen += 1;
        }
        assert_eq!(seen, ranges.len());
    });
}

/// A server closes each connection after 3 responses with more requests queued on it: those are
/// sent again on another connection; every request completes once, with the right bytes.
#[test]
fn requests_queued_on_a_closed_connection_are_sent_again() {
    run(async {
        let object = Arc::new(pattern(OBJECT_SIZE, 3));
        let server =
            FakeS3::start_with(object_ranges(Arc::clone(&object)), Ending::CloseAfter(3)).await;
        let endpoint = &server.endpoint;
        // A response cut by the close counts as a failed attempt: room for a few.
        let client = Client::builder()
            .endpoint(endpoint)
            .region("us-east-1")
            .credentials(Credentials::new(ACCESS_KEY, SECRET_KEY))
            .retry(RetryPolicy {
                max_attempts: 10,
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(10),
            })
            .build()
            .unwrap();
        let mut reader = client
            .batch_reader(
                "bucket",
                BatchOptions {
                    queue_depth: 32,
                    connections: 4,
                    pipelining: Pipelining::Auto,
                    coalesce: false,
                },
            )
            .unwrap();
        let batch = requests(5);
        let expected = batch.len();
        for request in batch {
            reader.submit(request);
        }
        check_all(&mut reader, &object, expected).await;
        let stats = reader.stats();
        assert!(stats.resent > 0, "{stats:?}");
        assert!(
            !stats.fell_back,
            "3 answers per connection is keep-alive: {stats:?}"
        );
        assert!(server.pipelined() > 0);
        // Each request was answered once; the others the server read were sent again.
        let requests = server.requests() as u64;
        assert!(requests >= expected as u64, "{requests}");
        assert!(stats.max_connections <= 4, "{stats:?}");
    });
}

/// A server without keep-alive (`Connection: close` on every response): the batch falls back to
/// one request per connection and still completes everything.
#[test]
fn a_server_without_keep_alive_gets_one_request_per_connection() {
    run(async {
        let object = Arc::new(pattern(OBJECT_SIZE, 4));
        let server =
            FakeS3::start_with(object_ranges(Arc::clone(&object)), Ending::NoKeepAlive).await;
        let endpoint = &server.endpoint;
        let client = client_of(endpoint);
        let mut reader = client
            .batch_reader(
                "bucket",
                BatchOptions {
                    queue_depth: 16,
                    connections: 2,
                    pipelining: Pipelining::Auto,
                    coalesce: false,
                },
            )
            .unwrap();
        let batch = requests(9);
        let expected = batch.len();
        for request in batch {
            reader.submit(request);
        }
        check_all(&mut reader, &object, expected).await;
        let stats = reader.stats();
        assert!(stats.fell_back, "{stats:?}");
        // Before the fall-back the first connections carried several heads; after it, one each.
        let connections = server.connections() as u64;
        assert_eq!(connections, stats.connections_used, "{stats:?}");
        assert!(connections >= expected as u64, "{connections} connections");
        assert!(
            stats.resent <= 16,
            "only the first pipelines were sent again: {stats:?}"
        );
    });
}

/// With pipelining off, the server never finds a request waiting behind one it answers; with it
/// on, it does.
#[test]
fn pipelining_on_and_off_as_the_server_sees_it() {
    run(async {
        let object = Arc::new(pattern(OBJECT_SIZE, 5));
        for (pipelining, expect_pipelined) in [(Pipelining::Off, false), (Pipelining::On, true)] {
            let server =
                FakeS3::start_with(object_ranges(Arc::clone(&object)), Ending::KeepAlive).await;
            let client = client_of(&server.endpoint);
            let mut reader = client
                .batch_reader(
                    "bucket",
                    BatchOptions {
                        queue_depth: 16,
                        connections: 2,
                        pipelining,
                        coalesce: false,
                    },
                )
                .unwrap();
            let batch = requests(21);
            let expected = batch.len();
            for request in batch {
                reader.submit(request);
            }
            check_all(&mut reader, &object, expected).await;
            assert_eq!(server.connections(), 2);
            assert_eq!(server.pipelined() > 0, expect_pipelined, "{pipelining:?}");
        }
    });
}

/// The most heap allocations one 256 KiB read of a batch may make, on average. It makes about
/// 19: the signature's 7, the request head's buffers, the range, the completion; it made 46 (and
/// regrew the head's buffers through 17 reallocations) while every request built its target
/// anew, the signer formatted its scope and copied the canonical request, and the head grew field
/// by field. A few per request more, at 25,000 reads a second, are a measurable share of the
/// client's CPU.
const READ_ALLOCATION_BUDGET: f64 = 22.0;

/// 256 reads of 256 KiB at queue depth 64 over 4 connections: the process gains no thread and at
/// most 4 sockets besides the in-process server's, the client opens at most 4 connections, and the heap allocations per read are
/// a few hundred bytes of request head whatever the block size (no buffer per request).
#[test]
fn threads_sockets_and_allocations_are_bounded_on_brisk_serve() {
    run(async {
        let (client, bucket, _object) = object_on(brisk(), "batch-counts").await;
        let options = BatchOptions {
            queue_depth: 64,
            connections: 4,
            pipelining: Pipelining::Auto,
            coalesce: false,
        };
        async fn batch(
            client: &Client,
            bucket: &str,
            options: BatchOptions,
            buffers: Vec<Vec<u8>>,
            watch_sockets: bool,
        ) -> (Vec<Vec<u8>>, u64) {
            let mut reader = client.batch_reader(bucket, options).unwrap();
            let block = buffers[0].len();
            let blocks = (OBJECT_SIZE / block) as u64;
            let count = buffers.len() as u64;
            for (i, buffer) in buffers.into_iter().enumerate() {
                let offset = (i as u64 * 7 % blocks) * block as u64;
                reader.submit(ReadRequest::new(
                    i as u64,
                    "object",
                    offset,
                    block,
                    Destination::Buffer(buffer),
                ));
            }
            let mut back = Vec::with_capacity(count as usize);
            let mut sockets = 0;
            while let Some(done) = reader.next().await {
                assert_eq!(*done.result.as_ref().unwrap(), block);
                if watch_sockets {
                    sockets = sockets.max(client_sockets());
                }
                match done.buffer {
                    Some(Filled::Buffer(b)) => back.push(b),
                    other => panic!("{other:?}"),
                }
            }
            assert!(reader.stats().max_connections <= 4);
            (back, sockets)
        }
        let threads = client_threads();
        let sockets_before = client_sockets();
        // Warm-up: opens the connections (and their read buffers) once.
        let buffers = (0..256).map(|_| vec![0u8; 262_144]).collect();
        let (buffers, sockets) = batch(&client, &bucket, options, buffers, true).await;
        assert!(
            sockets - sockets_before <= 4,
            "{sockets} sockets, {sockets_before} before"
        );
        assert_eq!(client_threads(), threads, "threads");

        let (small, counts) = count_future(batch(&client, &bucket, options, buffers, false)).await;
        let (small_allocs, small_bytes) = (counts.allocations, counts.bytes);
        let big_buffers = (0..256).map(|_| vec![0u8; 1_048_576]).collect();
        let (_, counts) = count_future(batch(&client, &bucket, options, big_buffers, false)).await;
        let (big_allocs, big_bytes) = (counts.allocations, counts.bytes);
        drop(small);
        let per_read = small_bytes / 256;
        assert!(
            per_read < 8 * 1024,
            "{per_read} bytes allocated per 256 KiB read"
        );
        let allocs_per_read = small_allocs as f64 / 256.0;
        assert!(
            allocs_per_read <= READ_ALLOCATION_BUDGET,
            "{allocs_per_read} allocations per read (budget {READ_ALLOCATION_BUDGET})"
        );
        // 4x the block size, about the same allocations: none of them scales with the block.
        assert!(
            big_bytes < small_bytes + small_bytes / 4,
            "{small_bytes} vs {big_bytes}"
        );
        assert!(
            big_allocs < small_allocs + small_allocs / 4,
            "{small_allocs} vs {big_allocs}"
        );
        assert!(
            client.metrics().connections_opened <= 4,
            "{:?}",
            client.metrics()
        );
        assert_eq!(client_threads(), threads, "threads");
    });
}

/// With the default options, a batch sends each request on a connection of its own up to the
/// default 64 connections (none pipelined at queue depth 64) and pipelines only past that (queue
/// depth 256: never more than 64 connections, whatever the timing).
#[test]
fn the_default_batch_uses_a_connection_per_request_up_to_64() {
    run(async {
        let (client, bucket, object) = object_on(brisk(), "batch-defaults").await;
        let block = 65_536;
        let blocks = (OBJECT_SIZE / block) as u64;
        for queue_depth in [64, 256] {
            let options = BatchOptions {
                queue_depth,
                ..BatchOptions::default()
            };
            let opened_before = client.metrics().connections_opened;
            let mut reader = client.batch_reader(&bucket, options).unwrap();
            for i in 0..512u64 {
                let offset = (i * 7 % blocks) * block as u64;
                reader.submit(ReadRequest::new(
                    i,
                    "object",
                    offset,
                    block,
                    Destination::Pooled,
                ));
            }
            let mut completed = 0;
            while let Some(done) = reader.next().await {
                let at = done.offset as usize;
                assert!(done.data().unwrap() == &object[at..at + block]);
                completed += 1;
            }
            assert_eq!(completed, 512);
            let stats = reader.stats();
            assert!(stats.max_connections <= 64, "QD {queue_depth}: {stats:?}");
            assert!(
                client.metrics().connections_opened - opened_before <= 64,
                "QD {queue_depth}: {:?}",
                client.metrics()
            );
            if queue_depth == 64 {
                assert_eq!(stats.pipelined, 0, "QD 64: one request per connection");
            }
        }
    });
}
