//! Allocations per request do not grow with the body: a counting global allocator sees a PUT and a
//! GET of 64 MiB cost the same number of allocations as a PUT and a GET of 1 MiB, within a small
//! constant. A per-chunk allocation would add a thousand (64 MiB / 64 KiB read buffer).

mod http_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use http_support::Client;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations of one PUT plus one GET of `size` bytes on a warm connection.
fn put_get(client: &mut Client, size: u64, pattern: &[u8]) -> u64 {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    client.send("PUT", "/alloc-bucket/object", size, pattern);
    let put = client.receive("PUT", |_| {});
    assert_eq!(put.status, 200, "{}", put.head);
    client.send("GET", "/alloc-bucket/object", 0, &[]);
    let mut received = 0u64;
    let get = client.receive("GET", |d| received += d.len() as u64);
    assert_eq!((get.status, received), (200, size), "{}", get.head);
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

#[test]
fn allocations_per_request_do_not_grow_with_the_body() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = http_support::runtime();
    let server = http_support::start(&runtime, dir.path());
    let mut client = Client::connect(server.local_addr());
    let (r, _) = client.request("PUT", "/alloc-bucket", b"");
    assert_eq!(r.status, 200);
    let pattern = vec![0x5a; 256 * 1024];
    // Warm up: the connection's buffers, the store's caches, the runtime's threads.
    for _ in 0..3 {
        put_get(&mut client, 1 << 20, &pattern);
    }
    let small = (0..3)
        .map(|_| put_get(&mut client, 1 << 20, &pattern))
        .min()
        .unwrap();
    let large = (0..3)
        .map(|_| put_get(&mut client, 64 << 20, &pattern))
        .min()
        .unwrap();
    println!("allocations per PUT+GET: 1 MiB {small}, 64 MiB {large}");
    assert!(
        large <= small + 64,
        "64 MiB cost {large} allocations, 1 MiB {small}: something allocates per chunk"
    );
    drop(client);
    runtime.block_on(server.shutdown());
}
