//! The in-process server over real sockets: concurrent PUTs of one key, durable bodies, keep-alive
//! reuse, error documents, and unknown operations.

use crate::http_support;
use brisk_testkit::http::Connection;

#[test]
fn concurrent_puts_of_one_key_leave_one_whole_version() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start(dir.path());
    let addr = server.local_addr();
    let mut c = Connection::connect(addr);
    assert_eq!(c.request("PUT", "/race-bucket", b"").0.status, 200);
    let size = 3 << 20;
    let writers: Vec<_> = (0..8u8)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Connection::connect(addr);
                let body = vec![b'a' + i; size];
                let (r, _) = c.request("PUT", "/race-bucket/same", &body);
                assert_eq!(r.status, 200, "{}", r.head);
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let (r, body) = c.request("GET", "/race-bucket/same", b"");
    assert_eq!((r.status, body.len()), (200, size));
    assert!(
        body.iter().all(|&b| b == body[0]),
        "the object is one writer's body, not a mix"
    );
    drop(c);
    server.shutdown();
}

/// With fsync on, bodies of a read buffer or more are staged and written with `O_DIRECT` (or
/// buffered where the file system refuses it): around the stage and block sizes, every byte comes
/// back and the ETag is the body's MD5, on one keep-alive connection that reuses its stage.
#[test]
fn durable_bodies_around_the_stage_size_come_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start_durable(dir.path());
    let mut c = Connection::connect(server.local_addr());
    assert_eq!(c.request("PUT", "/durable", b"").0.status, 200);
    let stage = 256 << 10;
    for len in [
        stage - 1,
        stage,
        stage + 1,
        4 * stage + 4095,
        12 * stage + 77,
    ] {
        let body: Vec<u8> = (0..len).map(|i| (i * 131 + i / 4096) as u8).collect();
        let (r, _) = c.request("PUT", &format!("/durable/k{len}"), &body);
        assert_eq!(r.status, 200, "{}", r.head);
        let etag = brisk_wire::checksum::Md5::digest(&body).to_etag();
        assert!(
            r.head
                .to_ascii_lowercase()
                .contains(&format!("etag: {etag}")),
            "len {len}: {}",
            r.head
        );
        let (r, back) = c.request("GET", &format!("/durable/k{len}"), b"");
        assert_eq!((r.status, back.len()), (200, len));
        assert!(back == body, "len {len}: the body came back changed");
    }
    drop(c);
    server.shutdown();
}

#[test]
fn errors_are_s3_documents_and_the_connection_survives_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start(dir.path());
    let mut c = Connection::connect(server.local_addr());
    let (r, body) = c.request("GET", "/missing-bucket/key", b"");
    let text = String::from_utf8_lossy(&body);
    assert_eq!(r.status, 404);
    assert!(text.contains("<Code>NoSuchBucket</Code>"), "{text}");
    assert!(
        r.head.to_ascii_lowercase().contains("x-amz-request-id:"),
        "{}",
        r.head
    );
    let (r, body) = c.request("GET", "/some-bucket?policy", b"");
    assert_eq!(r.status, 501);
    assert!(String::from_utf8_lossy(&body).contains("NotImplemented"));
    // Same connection, still usable.
    assert_eq!(c.request("PUT", "/some-bucket", b"").0.status, 200);
    let (r, body) = c.request("PUT", "/some-bucket/k", b"hello");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&body));
    let (r, body) = c.request("GET", "/some-bucket/k", b"");
    assert_eq!((r.status, body.as_slice()), (200, b"hello".as_slice()));
    drop(c);
    server.shutdown();
}
