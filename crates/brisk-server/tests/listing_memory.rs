//! Listing memory does not grow with the number of keys in the bucket: the peak heap while paging
//! through 100,000 keys is about the peak for 1,000 keys.
//!
//! A counting global allocator measures the heap; this file holds a single test so no other test's
//! allocations run concurrently in this binary.

mod common;

use brisk_server::store::{ListQuery, Store, StoreConfig};
use brisk_testkit::alloc::{CountingAllocator, Window};
use common::new_object;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The metadata page cache is a fixed cap; a small one makes the comparison sensitive to anything
/// else that would grow with the key count.
const CACHE_BYTES: usize = 256 * 1024;

fn config() -> StoreConfig {
    StoreConfig {
        fsync: false,
        metadata_cache_bytes: CACHE_BYTES,
        ..StoreConfig::default()
    }
}

fn key(i: usize) -> String {
    format!("dir{:02}/sub{}/file{:06}", i % 100, (i / 100) % 10, i)
}

/// Builds a bucket of `count` keys, reopens the store (empty cache), then pages through all keys and
/// through the top-level common prefixes. Returns the peak heap growth during the paging in bytes.
fn peak_while_listing(count: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), config()).unwrap();
        store.create_bucket("bkt").unwrap();
        store
            .put_object("bkt", &key(0), b"x", new_object("e"))
            .unwrap();
        let keys: Vec<String> = (1..count).map(key).collect();
        store
            .bulk_copy_for_tests("bkt", &key(0), keys.iter().map(String::as_str))
            .unwrap();
    }
    let store = Store::open(dir.path(), config()).unwrap();
    let index_bytes = std::fs::metadata(dir.path().join("metadata.redb"))
        .unwrap()
        .len();
    eprintln!("{count} keys: metadata database is {index_bytes} bytes");

    let window = Window::process();

    let mut listed = 0;
    let mut query = ListQuery::default();
    loop {
        let page = store.list_objects("bkt", &query).unwrap();
        listed += page.objects.len();
        if !page.is_truncated {
            break;
        }
        query.continuation_token = page.next_continuation_token;
    }
    assert_eq!(listed, count);
    let prefixes = ListQuery {
        delimiter: Some("/".into()),
        ..ListQuery::default()
    };
    assert_eq!(
        store
            .list_objects("bkt", &prefixes)
            .unwrap()
            .common_prefixes
            .len(),
        count.min(100)
    );

    window.stop().peak as usize
}

#[test]
fn listing_memory_does_not_grow_with_key_count() {
    let small = peak_while_listing(1_000);
    let large = peak_while_listing(100_000);
    eprintln!("peak heap growth while listing: 1,000 keys {small} B, 100,000 keys {large} B");
    // The 100,000-key metadata database is ~17 MB; holding a fifth of it would exceed the 2 MiB bound.
    // What may differ between the two runs is how full the fixed-size page cache gets.
    assert!(
        large <= small + CACHE_BYTES,
        "listing 100x more keys raised the peak from {small} to {large} bytes"
    );
    assert!(large < 2 * 1024 * 1024, "peak {large} bytes");
}
