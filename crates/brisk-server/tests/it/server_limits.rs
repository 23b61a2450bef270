//! S3's size and numbering limits answered with S3's error codes before any body byte is stored,
//! and peers that stall (a head that never ends, a body that stops) disconnected by the idle and
//! request timeouts rather than holding a connection slot for ever.

use crate::http_support;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use brisk_server::ServerConfig;
use brisk_testkit::http::Connection;
use brisk_testkit::serve::InProcessServe;

/// S3's largest single PUT and largest part: 5 GiB.
const FIVE_GIB: u64 = 5 << 30;

/// Timeouts the stall tests set: short enough to keep the test fast, long enough that a loaded
/// machine does not trip them on a healthy request.
const SHORT_TIMEOUT: Duration = Duration::from_millis(400);

/// Upper bound on any wait in these tests: a server that never disconnects fails the test instead of
/// hanging it.
const TEST_BOUND: Duration = Duration::from_secs(10);

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

/// Sends only a request head announcing `length` body bytes and reads the answer.
fn head_only(client: &mut Connection, method: &str, path: &str, length: u64) -> (u16, String) {
    let head =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n\r\n");
    client.send_raw(head.as_bytes());
    let mut body = Vec::new();
    let r = client.receive(method, |d| body.extend_from_slice(d));
    (r.status, text(&body))
}

fn upload_id(create_response: &str) -> String {
    let start = create_response.find("<UploadId>").unwrap() + "<UploadId>".len();
    let end = create_response.find("</UploadId>").unwrap();
    create_response[start..end].to_owned()
}

#[test]
fn single_put_over_5_gib_is_entity_too_large_before_any_byte_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start(dir.path());
    let mut client = Connection::connect(server.local_addr());
    assert_eq!(client.request("PUT", "/limits", b"").0.status, 200);

    let (status, body) = head_only(&mut client, "PUT", "/limits/huge", FIVE_GIB + 1);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("<Code>EntityTooLarge</Code>"), "{body}");
    assert!(
        body.contains(&(FIVE_GIB + 1).to_string()),
        "the message names the size: {body}"
    );

    let mut client = Connection::connect(server.local_addr());
    let (r, _) = client.request("HEAD", "/limits/huge", b"");
    assert_eq!(r.status, 404, "nothing was stored");
    server.shutdown();
}

#[test]
fn part_over_5_gib_and_part_numbers_outside_1_to_10000_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start(dir.path());
    let mut client = Connection::connect(server.local_addr());
    assert_eq!(client.request("PUT", "/limits", b"").0.status, 200);
    let (r, body) = client.request("POST", "/limits/mp?uploads", b"");
    assert_eq!(r.status, 200, "{}", text(&body));
    let id = upload_id(&text(&body));

    let path = format!("/limits/mp?partNumber=1&uploadId={id}");
    let (status, body) = head_only(&mut client, "PUT", &path, FIVE_GIB + 1);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("<Code>EntityTooLarge</Code>"), "{body}");

    for number in ["0", "10001", "4294967296", "-1"] {
        let mut client = Connection::connect(server.local_addr());
        let path = format!("/limits/mp?partNumber={number}&uploadId={id}");
        let (r, body) = client.request("PUT", &path, b"part");
        let body = text(&body);
        assert_eq!(r.status, 400, "part {number}: {body}");
        assert!(
            body.contains("<Code>InvalidArgument</Code>"),
            "part {number}: {body}"
        );
    }
    for number in ["1", "10000"] {
        let mut client = Connection::connect(server.local_addr());
        let path = format!("/limits/mp?partNumber={number}&uploadId={id}");
        let (r, body) = client.request("PUT", &path, b"part");
        assert_eq!(r.status, 200, "part {number}: {}", text(&body));
    }
    server.shutdown();
}

/// Reads until the server closes the connection; returns what it sent and how long it took.
fn read_until_closed(stream: &mut TcpStream) -> (Vec<u8>, Duration) {
    stream.set_read_timeout(Some(TEST_BOUND)).unwrap();
    let started = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the server kept a stalled connection open ({e})"),
        }
    }
    (out, started.elapsed())
}

fn short_timeout_server(root: &std::path::Path) -> InProcessServe {
    let mut config = ServerConfig::new(root, None);
    config.limits.idle_timeout = SHORT_TIMEOUT;
    config.limits.request_timeout = SHORT_TIMEOUT;
    http_support::start_with(config)
}

#[test]
fn a_head_that_never_ends_is_answered_408_and_disconnected_by_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = short_timeout_server(dir.path());
    let mut stream = TcpStream::connect(server.local_addr()).unwrap();
    stream
        .write_all(b"PUT /b/k HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        .unwrap();
    let (answer, waited) = read_until_closed(&mut stream);
    let answer = text(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("<Code>RequestTimeout</Code>"), "{answer}");
    assert!(
        waited >= SHORT_TIMEOUT / 2,
        "closed after {waited:?}, before the timeout"
    );
    assert!(waited < TEST_BOUND, "closed after {waited:?}");
    server.shutdown();
}

#[test]
fn a_body_that_stops_is_answered_408_and_disconnected_by_the_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = short_timeout_server(dir.path());
    let mut client = Connection::connect(server.local_addr());
    assert_eq!(client.request("PUT", "/slow", b"").0.status, 200);

    let mut stream = TcpStream::connect(server.local_addr()).unwrap();
    stream
        .write_all(
            b"PUT /slow/k HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n0123456789",
        )
        .unwrap();
    let (answer, waited) = read_until_closed(&mut stream);
    let answer = text(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("<Code>RequestTimeout</Code>"), "{answer}");
    assert!(
        waited >= SHORT_TIMEOUT / 2,
        "answered after {waited:?}, before the timeout"
    );

    // The first connection sat idle past the idle timeout meanwhile: ask on a new one.
    let mut client = Connection::connect(server.local_addr());
    let (r, _) = client.request("HEAD", "/slow/k", b"");
    assert_eq!(r.status, 404, "the partial body was not stored");
    server.shutdown();
}

/// A body trickled in just often enough to pass every read timeout is still cut once its average
/// rate falls below the minimum (here 10,000 bytes/s after a grace of the request timeout): it
/// cannot hold the connection, and its read buffer, for as long as it likes.
#[test]
fn a_body_trickled_below_the_minimum_rate_is_answered_408() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(dir.path(), None);
    config.limits.idle_timeout = SHORT_TIMEOUT;
    config.limits.request_timeout = SHORT_TIMEOUT;
    config.limits.min_body_rate = 10_000;
    let server = http_support::start_with(config);
    let mut client = Connection::connect(server.local_addr());
    assert_eq!(client.request("PUT", "/trickle", b"").0.status, 200);

    let mut stream = TcpStream::connect(server.local_addr()).unwrap();
    stream
        .write_all(b"PUT /trickle/k HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    // 10 bytes every 100 ms (100 bytes/s): each read comes well within the 400 ms request timeout.
    let mut writer = stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..(TEST_BOUND.as_millis() / 100) {
            if writer.write_all(b"0123456789").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (answer, waited) = read_until_closed(&mut stream);
    let answer = text(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("<Code>RequestTimeout</Code>"), "{answer}");
    assert!(answer.contains("below the minimum"), "{answer}");
    assert!(
        waited >= SHORT_TIMEOUT,
        "cut after {waited:?}, inside the grace period"
    );
    assert!(waited < TEST_BOUND, "cut only after {waited:?}");
    drop(stream);
    trickle.join().unwrap();

    let mut client = Connection::connect(server.local_addr());
    assert_eq!(client.request("HEAD", "/trickle/k", b"").0.status, 404);
    // A body at a healthy rate is untouched by the same bound.
    assert_eq!(
        client
            .request("PUT", "/trickle/ok", &[7u8; 200_000])
            .0
            .status,
        200
    );
    server.shutdown();
}
