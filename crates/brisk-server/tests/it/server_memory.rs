//! What an idle connection holds: no scratch buffer. A durable PUT of a read buffer or more is
//! staged in one, lent by the server's pool for the request and given back when it ends; the pool
//! keeps a few for the next requests and unmaps the rest.

use std::io::Write;
use std::time::{Duration, Instant};

use brisk_server::scratch::DEFAULT_KEPT;

use crate::http_support;
use brisk_testkit::http::Connection;

/// Waits (bounded) until `check` holds.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn idle_connections_hold_no_scratch_buffer_and_the_pool_keeps_a_few() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start_durable(dir.path());
    let pattern: Vec<u8> = (0..256 * 1024).map(|i| (i % 251) as u8).collect();
    let mut first = Connection::connect(server.local_addr());
    let (r, _) = first.request("PUT", "/scratch-bucket", b"");
    assert_eq!(r.status, 200, "{}", r.head);

    // Twelve connections, each with a 1 MiB durable PUT behind it (staged), left open.
    let connections = 12;
    let mut idle = Vec::new();
    for i in 0..connections {
        let mut client = Connection::connect(server.local_addr());
        client.send("PUT", &format!("/scratch-bucket/k{i}"), 1 << 20, &pattern);
        let r = client.receive("PUT", |_| {});
        assert_eq!(r.status, 200, "{}", r.head);
        idle.push(client);
    }
    // The last connection gives its buffer back just after its answer went out.
    eventually("no idle connection holds a buffer", || {
        server.running().scratch_stats().lent == 0
    });
    let stats = server.running().scratch_stats();
    assert!(
        (1..=DEFAULT_KEPT).contains(&stats.kept),
        "the pool keeps what it lent, up to its limit: {stats:?}"
    );

    // A body in flight holds one, and gives it back when its answer is out.
    let mut uploading = Connection::connect(server.local_addr());
    let half = 512 * 1024;
    uploading.send_raw(
        format!(
            "PUT /scratch-bucket/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
            2 * half
        )
        .as_bytes(),
    );
    uploading.send_raw(&pattern);
    uploading.send_raw(&pattern);
    eventually("the body in flight borrows a buffer", || {
        server.running().scratch_stats().lent == 1
    });
    uploading.send_raw(&pattern);
    uploading.send_raw(&pattern);
    let r = uploading.receive("PUT", |_| {});
    assert_eq!(r.status, 200, "{}", r.head);
    eventually("the finished upload gives its buffer back", || {
        server.running().scratch_stats().lent == 0
    });
    assert!(server.running().scratch_stats().kept <= DEFAULT_KEPT);

    // The stored bodies are whole.
    let mut got = Vec::new();
    let (r, body) = idle[3].request("GET", "/scratch-bucket/k3", b"");
    assert_eq!((r.status, body.len()), (200, 1 << 20));
    got.write_all(&body).unwrap();
    assert!(got.chunks(pattern.len()).all(|c| c == &pattern[..c.len()]));
    drop(idle);
    server.shutdown();
}
