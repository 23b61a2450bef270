//! Counts heap allocations on the client's read paths against a real server, with a counting global
//! allocator.
//!
//! Counting is per thread: the test runs on a current-thread runtime, so every allocation the client
//! makes happens on the test's thread, and the server (another process) is not counted. The claims:
//!
//! - `get_into` allocates the same number of times for 128 KiB, 1 MiB and 64 MiB (a few socket reads
//!   against more than a thousand): the body path allocates **nothing** per read; what remains is per
//!   request (mostly the signed head: 37 allocations, 2.3 KB, on 2026-11-27; 45 and 3.7 KB before the
//!   signer's and the head's cuts). Objects of a
//!   few bytes come with slightly different response headers from MinIO, so they are not compared.
//! - `get_bytes` allocates the same number of times for 1 MiB and 64 MiB: no growth. From
//!   `MAPPED_MIN_LEN` (1 MiB) up its buffer is a populated mapping, so the heap sees only get_into's
//!   per-request allocations; the 128 KiB object's buffer is one heap allocation of exactly 128 KiB.
//! - `get_bytes` reserves exactly the object's `Content-Length` from the budget, after the response
//!   head: a missing object reserves nothing.

mod support;

use std::time::Duration;

use brisk_mem::{MAPPED_MIN_LEN, MemoryBudget};
use brisk_testkit::alloc::{CountingAllocator, count_future};
use support::{bounded, builder, client, new_bucket, pattern};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const MIB: usize = 1024 * 1024;

#[tokio::test(flavor = "current_thread")]
async fn read_paths_allocate_per_request_not_per_byte() {
    bounded(Duration::from_secs(120), async {
        let c = client();
        let bucket = new_bucket(&c, "allocations").await;
        read_paths_allocate_per_request(&c, &bucket).await;
    })
    .await;
}

/// The same claims for the Azure dialect, against Azurite: the engine's read paths are the same,
/// only the request's addressing and signing differ (and the check of the blob's MD5, which
/// allocates nothing).
#[tokio::test(flavor = "current_thread")]
async fn azure_read_paths_allocate_per_request_not_per_byte() {
    bounded(Duration::from_secs(120), async {
        let c = support::azure_client();
        let container = new_bucket(&c, "allocations").await;
        read_paths_allocate_per_request(&c, &container).await;
    })
    .await;
}

async fn read_paths_allocate_per_request(c: &brisk_client::Client, bucket: &str) {
    {
        let bucket = bucket.to_owned();
        // Keys of equal length, so the per-request strings are the same size.
        let objects = [
            ("obj-128kb", 128 * 1024),
            ("obj-1-mib", MIB),
            ("obj-64mib", 64 * MIB),
        ];
        for (key, len) in objects {
            c.put(&bucket, key, &pattern(len, 9)).await.unwrap();
        }
        let mut dst = vec![0u8; 64 * MIB];

        // Warm-up: the connection, its read buffer and every lazily built structure.
        for (key, _) in objects {
            c.get_into(&bucket, key, &mut dst).await.unwrap();
            drop(c.get_bytes(&bucket, key).await.unwrap());
        }

        // Counted from here: a server may close a connection left idle while the objects were
        // made (Azurite after 5 s, which a debug build's 64 MiB pattern can take on a busy machine).
        let opened_before = c.metrics().connections_opened;
        let mut get_into = Vec::new();
        for (key, len) in objects {
            let (n, counts) = count_future(c.get_into(&bucket, key, &mut dst)).await;
            assert_eq!(n.unwrap(), len);
            get_into.push((len, counts.allocations, counts.bytes));
        }
        let mut get_bytes = Vec::new();
        for (key, len) in &objects {
            let (buf, counts) = count_future(c.get_bytes(&bucket, key)).await;
            let buf = buf.unwrap();
            assert_eq!(buf.len(), *len);
            assert_eq!(buf.is_mapped(), *len >= MAPPED_MIN_LEN);
            get_bytes.push((*len, counts.allocations, counts.bytes));
        }
        println!("get_into  (object bytes, allocations, bytes allocated): {get_into:?}");
        println!("get_bytes (object bytes, allocations, bytes allocated): {get_bytes:?}");

        let (_, base_allocs, _) = get_into[0];
        for &(len, allocations, bytes) in &get_into {
            assert_eq!(
                allocations, base_allocs,
                "get_into of {len} bytes: {get_into:?}"
            );
            // Per-request strings differ by a few digits (Content-Length, ETag), never by a buffer.
            assert!(bytes < 16 * 1024, "get_into of {len} bytes: {get_into:?}");
        }
        // Below MAPPED_MIN_LEN the object's buffer is one heap allocation of exactly its size on top
        // of get_into's per-request ones; from there up it is a mapping and the heap sees only the
        // per-request allocations. Either way the count does not grow with the size.
        for &(len, allocations, bytes) in &get_bytes {
            if len >= MAPPED_MIN_LEN {
                assert_eq!(allocations, base_allocs, "{get_bytes:?} vs {get_into:?}");
                assert!(bytes < 16 * 1024, "{get_bytes:?}");
            } else {
                assert_eq!(
                    allocations,
                    base_allocs + 1,
                    "{get_bytes:?} vs {get_into:?}"
                );
                assert!(bytes - (len as u64) < 16 * 1024, "{get_bytes:?}");
            }
        }
        assert_eq!(get_bytes[1].1, get_bytes[2].1, "{get_bytes:?}");
        // Every counted read reused the warm connection.
        assert_eq!(c.metrics().connections_opened, opened_before);
    }
}

/// The budget pays for exactly `Content-Length` bytes, taken once the head has said how many: the
/// peak reservation is the object's size, and a GET that fails at the head reserves nothing.
#[tokio::test(flavor = "current_thread")]
async fn get_bytes_reserves_the_content_length_after_the_head() {
    bounded(Duration::from_secs(60), async {
        let budget = MemoryBudget::new(64 * MIB);
        let c = builder().memory_budget(budget.clone()).build().unwrap();
        let bucket = new_bucket(&c, "reserve").await;
        assert!(c.get_bytes(&bucket, "missing").await.is_err());
        assert_eq!(budget.metrics().peak_reserved_bytes, 0);

        let len = 3 * MIB + 17;
        c.put(&bucket, "k", &pattern(len, 3)).await.unwrap();
        let buf = c.get_bytes(&bucket, "k").await.unwrap();
        assert_eq!(buf.len(), len);
        assert_eq!(budget.reserved(), len);
        drop(buf);
        // Kept, still reserved, for the next read of its size, which takes it without reserving
        // more and leaves it kept again.
        assert_eq!(budget.reserved(), len);
        assert_eq!(budget.metrics().kept_bytes, len);
        let again = c.get_bytes(&bucket, "k").await.unwrap();
        assert!(again[..] == pattern(len, 3)[..]);
        assert_eq!(budget.metrics().kept_reuses, 1);
        drop(again);
        assert_eq!(budget.metrics().peak_reserved_bytes, len);
        budget.set_kept_limit(0);
        assert_eq!(budget.reserved(), 0);
    })
    .await;
}
