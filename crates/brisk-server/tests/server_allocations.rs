//! Allocations per request do not grow with the body: a counting global allocator sees a PUT and a
//! GET of 64 MiB cost the same number of allocations as a PUT and a GET of 1 MiB, within a small
//! constant. A per-chunk allocation would add a thousand (64 MiB / 64 KiB read buffer).

mod http_support;

use brisk_testkit::alloc::{CountingAllocator, Window};
use brisk_testkit::http::Connection;

// Counted process-wide: the server allocates on its runtime's workers, not on the test's thread.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The tests here count with process-wide windows, which see every thread of this binary: run one at
/// a time, or one test's allocations land in the other's window (seen on a loaded CI machine: a
/// 64-part GET "cost" 65 allocations while the body test ran beside it; alone it costs 24).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Allocations of one PUT plus one GET of `size` bytes on a warm connection.
fn put_get(client: &mut Connection, size: u64, pattern: &[u8]) -> u64 {
    let window = Window::process();
    client.send("PUT", "/alloc-bucket/object", size, pattern);
    let put = client.receive("PUT", |_| {});
    assert_eq!(put.status, 200, "{}", put.head);
    client.send("GET", "/alloc-bucket/object", 0, &[]);
    let mut received = 0u64;
    let get = client.receive("GET", |d| received += d.len() as u64);
    let allocations = window.stop().allocations;
    assert_eq!((get.status, received), (200, size), "{}", get.head);
    allocations
}

#[test]
fn allocations_per_request_do_not_grow_with_the_body() {
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start(dir.path());
    let mut client = Connection::connect(server.local_addr());
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
    server.shutdown();
}

/// Completes `parts` parts of 4 KiB, each sent with its CRC32C as S3 clients send them, into `key`.
fn put_multipart(client: &mut Connection, key: &str, parts: u32) {
    use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer};
    let (r, body) = client.request("POST", &format!("/alloc-bucket/{key}?uploads"), b"");
    assert_eq!(r.status, 200, "{}", r.head);
    let body = String::from_utf8(body).unwrap();
    let id = body
        .split("<UploadId>")
        .nth(1)
        .and_then(|rest| rest.split("</UploadId>").next())
        .unwrap()
        .to_owned();
    let mut listed = String::from("<CompleteMultipartUpload>");
    for n in 1..=parts {
        let data = vec![n as u8; 4096];
        let crc = Checksummer::checksum(ChecksumAlgorithm::Crc32c, &data).to_base64();
        let head = format!(
            "PUT /alloc-bucket/{key}?partNumber={n}&uploadId={id} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
             Content-Length: 4096\r\nx-amz-checksum-crc32c: {crc}\r\n\r\n"
        );
        client.send_raw(head.as_bytes());
        client.send_raw(&data);
        let r = client.receive("PUT", |_| {});
        assert_eq!(r.status, 200, "{}", r.head);
        let etag = r
            .head
            .lines()
            .find_map(|l| l.strip_prefix("etag: ").or(l.strip_prefix("ETag: ")))
            .unwrap()
            .trim()
            .to_owned();
        listed += &format!(
            "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag>\
             <ChecksumCRC32C>{crc}</ChecksumCRC32C></Part>"
        );
    }
    listed += "</CompleteMultipartUpload>";
    let (r, body) = client.request(
        "POST",
        &format!("/alloc-bucket/{key}?uploadId={id}"),
        listed.as_bytes(),
    );
    assert_eq!(
        r.status,
        200,
        "{} {}",
        r.head,
        String::from_utf8_lossy(&body)
    );
}

/// Fewest allocations of a 4 KiB ranged GET of `key` (in its first part) over 5 tries.
fn ranged_get(client: &mut Connection, key: &str) -> u64 {
    let request = format!(
        "GET /alloc-bucket/{key} HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=100-4195\r\n\r\n"
    );
    (0..5)
        .map(|_| {
            let window = Window::process();
            client.send_raw(request.as_bytes());
            let r = client.receive("GET", |_| {});
            let allocations = window.stop().allocations;
            assert_eq!(r.status, 206, "{}", r.head);
            allocations
        })
        .min()
        .unwrap()
}

/// A ranged GET of an object completed from many checksummed parts costs what one of a two-part
/// object does: the parts' layout decodes without an allocation per part, and only the part the
/// range falls in is opened.
#[test]
fn allocations_per_ranged_get_do_not_grow_with_the_parts() {
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut config = brisk_server::ServerConfig::new(dir.path(), None);
    config.min_part_size = 1;
    let server = http_support::start_with(config);
    let mut client = Connection::connect(server.local_addr());
    let (r, _) = client.request("PUT", "/alloc-bucket", b"");
    assert_eq!(r.status, 200);
    put_multipart(&mut client, "two", 2);
    put_multipart(&mut client, "many", 64);
    ranged_get(&mut client, "two");
    let two = ranged_get(&mut client, "two");
    let many = ranged_get(&mut client, "many");
    println!("allocations per ranged GET: 2 parts {two}, 64 parts {many}");
    assert!(
        many <= two + 4,
        "a GET of a 64-part object cost {many} allocations, of a 2-part one {two}: something \
         allocates per part"
    );
    drop(client);
    server.shutdown();
}
