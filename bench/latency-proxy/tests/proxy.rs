//! The proxy in front of a small in-process HTTP/1.1 server: bytes pass unchanged both ways
//! (pipelined GETs, a HEAD, a PUT with a body, a chunked answer), a delay is observed, and pipelined
//! requests are delayed each from its own arrival in parallel mode, one after another in serial
//! mode. Times are checked only against what the model makes certain: lower bounds, and in parallel
//! mode an upper bound several first-byte latencies wide.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use latency_proxy::{Mode, Model};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server received and wrote, over all its connections.
#[derive(Default)]
struct Seen {
    received: Vec<u8>,
    written: Vec<u8>,
}

fn body(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// Answers each request as soon as its head (and body) is in: `GET /N` with N bytes, `HEAD /N`
/// with the head of that, `PUT` with the length it received, `GET /chunked` with a chunked body.
async fn server(seen: Arc<Mutex<Seen>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut conn, _) = listener.accept().await.unwrap();
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let mut pending = Vec::new();
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    seen.lock().unwrap().received.extend_from_slice(&buf[..n]);
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8(pending[..end + 4].to_vec()).unwrap();
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("Content-Length: "))
                            .map_or(0, |v| v.trim().parse().unwrap());
                        if pending.len() < end + 4 + length {
                            break;
                        }
                        pending.drain(..end + 4 + length);
                        let mut words = head.split_whitespace();
                        let method = words.next().unwrap().to_string();
                        let path = words.next().unwrap().to_string();
                        let answer = answer(&method, &path, length);
                        seen.lock().unwrap().written.extend_from_slice(&answer);
                        conn.write_all(&answer).await.unwrap();
                    }
                }
            });
        }
    });
    addr
}

fn answer(method: &str, path: &str, received: usize) -> Vec<u8> {
    if path == "/chunked" {
        return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;e=1\r\n!\r\n0\r\n\r\n".to_vec();
    }
    if method == "PUT" {
        return format!("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Received: {received}\r\n\r\n")
            .into_bytes();
    }
    let len: usize = path[1..].parse().unwrap();
    let mut out = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n").into_bytes();
    if method == "GET" {
        out.extend_from_slice(&body(len));
    }
    out
}

fn model(rtt_ms: u64, first_byte_ms: u64, mode: Mode) -> Model {
    Model {
        rtt: Duration::from_millis(rtt_ms),
        first_byte: Duration::from_millis(first_byte_ms),
        mode,
    }
}

async fn proxy(model: Model) -> (latency_proxy::Proxy, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let upstream = server(Arc::clone(&seen)).await;
    let proxy = latency_proxy::start("127.0.0.1:0".parse().unwrap(), upstream, model)
        .await
        .unwrap();
    (proxy, seen)
}

/// Reads until `len` bytes came (bounded by a timeout).
async fn read_exactly(conn: &mut TcpStream, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    tokio::time::timeout(Duration::from_secs(30), conn.read_exact(&mut out))
        .await
        .expect("the answers arrive")
        .unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_pass_unchanged_both_ways() {
    let (proxy, seen) = proxy(model(1, 1, Mode::Parallel)).await;
    let mut requests = Vec::new();
    requests.extend_from_slice(b"GET /300000 HTTP/1.1\r\nHost: x\r\n\r\n");
    requests.extend_from_slice(b"HEAD /5000 HTTP/1.1\r\nHost: x\r\n\r\n");
    requests.extend_from_slice(b"PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n");
    requests.extend_from_slice(&body(70000));
    requests.extend_from_slice(b"GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n");
    requests.extend_from_slice(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n");
    let expected: Vec<u8> = [
        answer("GET", "/300000", 0),
        answer("HEAD", "/5000", 0),
        answer("PUT", "/up", 70000),
        answer("GET", "/chunked", 0),
        answer("GET", "/1", 0),
    ]
    .concat();
    let mut conn = TcpStream::connect(proxy.addr).await.unwrap();
    // Written in pieces that cut heads and bodies anywhere.
    for piece in requests.chunks(9973) {
        conn.write_all(piece).await.unwrap();
    }
    let got = read_exactly(&mut conn, expected.len()).await;
    assert!(got == expected, "the answers arrive unchanged");
    let seen = seen.lock().unwrap();
    assert!(seen.received == requests, "the requests arrive unchanged");
    assert!(seen.written == expected);
    assert_eq!(
        proxy
            .counts
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        5
    );
    assert_eq!(
        proxy
            .counts
            .responses
            .load(std::sync::atomic::Ordering::Relaxed),
        5
    );
}

/// Sends `n` pipelined GETs in one write on a new connection; returns the time from the connect to
/// the last answer's last byte.
async fn pipelined(model: Model, n: usize) -> Duration {
    let (proxy, _) = proxy(model).await;
    let started = Instant::now();
    let mut conn = TcpStream::connect(proxy.addr).await.unwrap();
    let requests = "GET /1000 HTTP/1.1\r\nHost: x\r\n\r\n".repeat(n);
    conn.write_all(requests.as_bytes()).await.unwrap();
    let one = answer("GET", "/1000", 0);
    let got = read_exactly(&mut conn, one.len() * n).await;
    assert!(got == one.repeat(n));
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_waits_the_handshake_the_round_trip_and_the_first_byte_latency() {
    let took = pipelined(model(40, 60, Mode::Parallel), 1).await;
    // Handshake (one round trip), the request's way, L, the answer's way.
    assert!(took >= Duration::from_millis(40 + 40 + 60), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_not_serialised_in_parallel_mode() {
    let n = 5;
    let took = pipelined(model(0, 400, Mode::Parallel), n).await;
    assert!(took >= Duration::from_millis(400), "{took:?}");
    // Serialised, the five would take 2 s; together they take one L.
    assert!(took < Duration::from_millis(400 * n as u64), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_wait_for_each_other_in_serial_mode() {
    let n = 4;
    let took = pipelined(model(0, 100, Mode::Serial), n).await;
    assert!(took >= Duration::from_millis(100 * n as u64), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bodies_pass_whole_to_a_slow_reader_and_from_a_fast_writer() {
    let (proxy, seen) = proxy(model(2, 1, Mode::Parallel)).await;
    let put_len = 6 << 20;
    let mut requests =
        format!("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: {put_len}\r\n\r\n").into_bytes();
    requests.extend_from_slice(&body(put_len));
    requests.extend_from_slice(b"GET /25165824 HTTP/1.1\r\nHost: x\r\n\r\n");
    let expected = [answer("PUT", "/up", put_len), answer("GET", "/25165824", 0)].concat();
    let mut conn = TcpStream::connect(proxy.addr).await.unwrap();
    let (mut read, mut write) = conn.split();
    let sending = async {
        write.write_all(&requests).await.unwrap();
    };
    // The reader holds back at first, so the proxy's pipe fills and it stops reading the server.
    let receiving = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut got = vec![0u8; expected.len()];
        let mut pos = 0;
        while pos < got.len() {
            let end = (pos + 8192).min(got.len());
            let n = read.read(&mut got[pos..end]).await.unwrap();
            assert!(n > 0, "the answers end early at {pos}");
            pos += n;
        }
        got
    };
    let (_, got) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(sending, receiving)
    })
    .await
    .expect("the exchange completes");
    assert!(got == expected, "the answers arrive unchanged");
    assert!(
        seen.lock().unwrap().received == requests,
        "the requests arrive unchanged"
    );
}
