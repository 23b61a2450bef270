//! Listing memory does not grow with the number of keys in the bucket: the peak heap while paging
//! through 100,000 keys is about the peak for 1,000 keys.
//!
//! A counting global allocator measures the heap; this file holds a single test so no other test's
//! allocations run concurrently in this binary.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use brisk_server::store::{ListQuery, Store, StoreConfig};
use common::new_object;

/// Wraps the system allocator and tracks live bytes and their peak.
struct CountingAllocator;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; only counters are added.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, forwarded unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

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

    let baseline = LIVE.load(Ordering::Relaxed);
    PEAK.store(baseline, Ordering::Relaxed);

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

    PEAK.load(Ordering::Relaxed) - baseline
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
