//! `HttpConnection` end to end, over in-memory duplex pipes and real TCP sockets on 127.0.0.1: keep-alive,
//! pipelining, `Expect: 100-continue` from both ends, bodies read straight into the caller's buffer,
//! truncated bodies and timeouts. Every test is bounded in time.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use brisk_wire::http::{
    BodyFraming, ConnectionConfig, ContinueOutcome, Headers, HttpConnection, HttpError, Limits,
    RequestHead, ResponseHead,
};
use tokio::io::{
    AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf, duplex,
};
use tokio::net::{TcpListener, TcpStream};

/// Upper bound on any one test: none should come close.
const TEST_DEADLINE: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(TEST_DEADLINE, fut)
        .await
        .expect("test exceeded its deadline")
}

fn config(read_buffer_size: usize) -> ConnectionConfig {
    ConnectionConfig {
        read_buffer_size,
        limits: Limits::default(),
        release_idle_buffer_after: None,
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn request(method: &str, target: &str) -> RequestHead {
    let mut head = RequestHead::with_request_line(method, target).unwrap();
    head.headers_mut().append("Host", "127.0.0.1").unwrap();
    head
}

fn ok_response(body_len: u64) -> ResponseHead {
    let mut head = ResponseHead::with_status(200).unwrap();
    head.headers_mut().set_content_length(body_len);
    head
}

async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    (client.unwrap(), accepted.unwrap().0)
}

/// A server that answers every request on `stream` with its method, target and body echoed back, until
/// the client closes. Returns how many requests it served.
async fn echo_server<S>(stream: S, read_buffer_size: usize) -> Result<usize, HttpError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = HttpConnection::with_config(stream, config(read_buffer_size));
    let mut head = RequestHead::new();
    let mut body = Vec::new();
    let mut served = 0;
    while conn.read_request_head(&mut head).await? {
        body.clear();
        while let Some(chunk) = conn.body_chunk().await? {
            body.extend_from_slice(chunk);
        }
        let mut reply = format!("{} {} ", head.method(), head.target()).into_bytes();
        reply.extend_from_slice(&body);
        conn.write_response(&ok_response(reply.len() as u64), &reply)
            .await?;
        served += 1;
        if !head.keep_alive() {
            break;
        }
    }
    Ok(served)
}

async fn keep_alive_exchange<S>(client: S, server: S)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let server = tokio::spawn(echo_server(server, 1024));
    let mut conn = HttpConnection::with_config(client, config(1024));
    let mut resp = ResponseHead::new();
    let mut dst = vec![0u8; 64 * 1024];
    for i in 0..3 {
        let body = pattern(10_000 + i);
        let mut req = request("PUT", &format!("/bucket/key-{i}"));
        req.headers_mut().set_content_length(body.len() as u64);
        conn.write_request(&req, &body).await.unwrap();
        conn.read_response_head(&mut resp, "PUT").await.unwrap();
        assert_eq!(resp.status(), 200);
        let n = conn.read_body_into(&mut dst).await.unwrap();
        let prefix = format!("PUT /bucket/key-{i} ");
        assert_eq!(&dst[..prefix.len()], prefix.as_bytes());
        assert_eq!(&dst[prefix.len()..n], &body[..]);
        assert!(conn.is_reusable());
    }
    drop(conn);
    assert_eq!(server.await.unwrap().unwrap(), 3);
}

#[tokio::test]
async fn keep_alive_reuses_one_duplex_connection() {
    bounded(async {
        let (client, server) = duplex(8 * 1024);
        keep_alive_exchange(client, server).await;
    })
    .await;
}

#[tokio::test]
async fn keep_alive_reuses_one_tcp_connection() {
    bounded(async {
        let (client, server) = tcp_pair().await;
        keep_alive_exchange(client, server).await;
    })
    .await;
}

/// Three requests (Content-Length body, chunked body, no body) written back to back in one write.
const PIPELINED: &[u8] = b"PUT /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello\
PUT /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\nX-T: 1\r\n\r\n\
GET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";

async fn pipelined_requests<S>(mut client: S, server: S, read_buffer_size: usize)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let server = tokio::spawn(echo_server(server, read_buffer_size));
    client.write_all(PIPELINED).await.unwrap();
    client.flush().await.unwrap();
    let mut conn = HttpConnection::new(client);
    let mut resp = ResponseHead::new();
    let mut dst = [0u8; 256];
    let mut replies = Vec::new();
    for _ in 0..3 {
        conn.read_response_head(&mut resp, "GET").await.unwrap();
        let n = conn.read_body_into(&mut dst).await.unwrap();
        replies.push(String::from_utf8(dst[..n].to_vec()).unwrap());
    }
    assert_eq!(replies, ["PUT /a hello", "PUT /b abcdefg", "GET /c "]);
    assert_eq!(server.await.unwrap().unwrap(), 3);
}

#[tokio::test]
async fn pipelined_requests_in_one_write_are_parsed_in_turn_over_duplex() {
    bounded(async {
        for read_buffer_size in [64, 100, 4096] {
            let (client, server) = duplex(64 * 1024);
            pipelined_requests(client, server, read_buffer_size).await;
        }
    })
    .await;
}

#[tokio::test]
async fn pipelined_requests_in_one_write_are_parsed_in_turn_over_tcp() {
    bounded(async {
        let (client, server) = tcp_pair().await;
        pipelined_requests(client, server, 4096).await;
    })
    .await;
}

#[tokio::test]
async fn leftover_bytes_after_a_body_stay_for_the_next_head() {
    bounded(async {
        let (mut client, server) = duplex(64 * 1024);
        client.write_all(PIPELINED).await.unwrap();
        let mut conn = HttpConnection::new(server);
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        assert_eq!(conn.incoming_framing(), BodyFraming::ContentLength(5));
        let mut body = [0u8; 16];
        assert_eq!(conn.read_body_into(&mut body).await.unwrap(), 5);
        assert!(conn.buffered().starts_with(b"PUT /b HTTP/1.1\r\n"));
        assert!(conn.read_request_head(&mut head).await.unwrap());
        assert_eq!(conn.incoming_framing(), BodyFraming::Chunked);
        assert_eq!(conn.read_body_into(&mut body).await.unwrap(), 7);
        assert_eq!(&body[..7], b"abcdefg");
        assert_eq!(conn.trailers().unwrap().get_str("x-t"), Some("1"));
        assert!(conn.read_request_head(&mut head).await.unwrap());
        assert_eq!(head.target(), "/c");
        assert!(!head.keep_alive());
        drop(client);
        assert!(!conn.read_request_head(&mut head).await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn an_unread_small_body_is_drained_and_a_large_one_closes() {
    bounded(async {
        let (mut client, server) = duplex(64 * 1024);
        let limits = Limits {
            max_drain_bytes: 100,
            ..Limits::default()
        };
        let mut conn = HttpConnection::with_config(
            server,
            ConnectionConfig {
                read_buffer_size: 1024,
                limits,
                release_idle_buffer_after: None,
            },
        );
        client
            .write_all(b"PUT /small HTTP/1.1\r\nContent-Length: 100\r\n\r\n")
            .await
            .unwrap();
        client.write_all(&[b'x'; 100]).await.unwrap();
        client
            .write_all(b"PUT /big HTTP/1.1\r\nContent-Length: 101\r\n\r\n")
            .await
            .unwrap();
        client.write_all(&[b'y'; 101]).await.unwrap();
        client
            .write_all(b"GET /never HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        // The body of /small is not read: the next head drains it.
        assert!(conn.read_request_head(&mut head).await.unwrap());
        assert_eq!(head.target(), "/big");
        assert!(!conn.is_reusable());
        match conn.read_request_head(&mut head).await {
            Err(HttpError::UndrainedBody { limit: 100 }) => {}
            other => panic!("expected UndrainedBody, got {other:?}"),
        }
        assert!(matches!(
            conn.read_request_head(&mut head).await,
            Err(HttpError::ConnectionBroken)
        ));
    })
    .await;
}

#[tokio::test]
async fn server_sends_100_continue_only_when_it_reads_the_body() {
    bounded(async {
        let (mut client, server) = duplex(64 * 1024);
        let mut conn = HttpConnection::new(server);
        client
            .write_all(b"PUT /k HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
            .await
            .unwrap();
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        assert!(head.expects_continue());

        // Nothing has been sent to the client yet.
        let mut probe = [0u8; 64];
        let early = tokio::time::timeout(Duration::from_millis(50), client.read(&mut probe)).await;
        assert!(early.is_err(), "server answered before reading the body");

        let reader = tokio::spawn(async move {
            let mut body = [0u8; 4];
            let n = conn.read_body_into(&mut body).await.unwrap();
            (conn, body, n)
        });
        let expected = b"HTTP/1.1 100 Continue\r\n\r\n";
        let mut got = vec![0u8; expected.len()];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(got, expected);
        client.write_all(b"data").await.unwrap();
        let (conn, body, n) = reader.await.unwrap();
        assert_eq!(&body[..n], b"data");
        assert!(conn.is_reusable());
    })
    .await;
}

#[tokio::test]
async fn server_answering_without_the_body_sends_no_continue_and_closes() {
    bounded(async {
        let (mut client, server) = duplex(64 * 1024);
        let mut conn = HttpConnection::new(server);
        client
            .write_all(b"PUT /k HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
            .await
            .unwrap();
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        let mut denied = ResponseHead::with_status(403).unwrap();
        denied.headers_mut().set_content_length(0);
        conn.write_response(&denied, b"").await.unwrap();
        assert!(!conn.is_reusable());
        assert!(!conn.discard_body().await.unwrap());
        let mut got = vec![0u8; 64];
        let n = client.read(&mut got).await.unwrap();
        assert!(got[..n].starts_with(b"HTTP/1.1 403 Forbidden\r\n"));
    })
    .await;
}

/// A raw server for the client-side `Expect` tests: reads one request head, then runs `script`.
async fn raw_server_reading_head(server: &mut DuplexStream) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        server.read_exact(&mut byte).await.unwrap();
        seen.push(byte[0]);
    }
    seen
}

fn put_with_expect(len: u64) -> RequestHead {
    let mut req = request("PUT", "/k");
    req.headers_mut().set_content_length(len);
    req.headers_mut().append("Expect", "100-continue").unwrap();
    req
}

#[tokio::test]
async fn client_sends_the_body_after_100_continue() {
    bounded(async {
        let (client, mut server) = duplex(64 * 1024);
        let server = tokio::spawn(async move {
            let head = raw_server_reading_head(&mut server).await;
            assert!(head.starts_with(b"PUT /k HTTP/1.1\r\n"));
            server
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .unwrap();
            let mut body = [0u8; 4];
            server.read_exact(&mut body).await.unwrap();
            assert_eq!(&body, b"data");
            server
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .await
                .unwrap();
            server
        });
        let mut conn = HttpConnection::new(client);
        conn.queue_request_head(&put_with_expect(4));
        let mut resp = ResponseHead::new();
        let outcome = conn
            .await_continue(&mut resp, "PUT", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(outcome, ContinueOutcome::Continue);
        conn.write_body(b"data").await.unwrap();
        conn.flush().await.unwrap();
        conn.read_response_head(&mut resp, "PUT").await.unwrap();
        assert_eq!(resp.status(), 200);
        assert!(conn.is_reusable());
        server.await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn client_sends_the_body_anyway_after_its_wait_and_skips_a_late_100() {
    bounded(async {
        let (client, mut server) = duplex(64 * 1024);
        let server = tokio::spawn(async move {
            raw_server_reading_head(&mut server).await;
            let mut body = [0u8; 4];
            server.read_exact(&mut body).await.unwrap();
            assert_eq!(&body, b"data");
            server
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
                .await
                .unwrap();
            server
        });
        let mut conn = HttpConnection::new(client);
        conn.queue_request_head(&put_with_expect(4));
        let mut resp = ResponseHead::new();
        let started = tokio::time::Instant::now();
        let outcome = conn
            .await_continue(&mut resp, "PUT", Duration::from_millis(100))
            .await
            .unwrap();
        assert_eq!(outcome, ContinueOutcome::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(100));
        conn.write_body(b"data").await.unwrap();
        conn.read_response_head(&mut resp, "PUT").await.unwrap();
        assert_eq!(resp.status(), 201);
        let mut body = [0u8; 8];
        assert_eq!(conn.read_body_into(&mut body).await.unwrap(), 2);
        assert_eq!(&body[..2], b"ok");
        server.await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn client_does_not_send_the_body_after_a_final_answer() {
    bounded(async {
        let (client, mut server) = duplex(64 * 1024);
        let server = tokio::spawn(async move {
            raw_server_reading_head(&mut server).await;
            server
                .write_all(b"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 3\r\n\r\nno!")
                .await
                .unwrap();
            server
        });
        let mut conn = HttpConnection::new(client);
        conn.queue_request_head(&put_with_expect(4));
        let mut resp = ResponseHead::new();
        let outcome = conn
            .await_continue(&mut resp, "PUT", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(outcome, ContinueOutcome::Final);
        assert_eq!(resp.status(), 417);
        let mut body = [0u8; 8];
        assert_eq!(conn.read_body_into(&mut body).await.unwrap(), 3);
        assert!(!conn.is_reusable());
        server.await.unwrap();
    })
    .await;
}

/// A stream that counts the bytes delivered by reads whose destination was larger than `threshold`:
/// those can only be reads straight into a caller's buffer, since the connection's own buffer is
/// `threshold` bytes.
struct ReadSizeProbe<S> {
    inner: S,
    threshold: usize,
    large_read_bytes: Arc<AtomicU64>,
}

impl<S: AsyncRead + Unpin> AsyncRead for ReadSizeProbe<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let capacity = buf.remaining();
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = result
            && capacity > self.threshold
        {
            let n = (buf.filled().len() - before) as u64;
            self.large_read_bytes.fetch_add(n, Ordering::Relaxed);
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ReadSizeProbe<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

async fn large_body_straight_into_destination<S>(client: S, server: S, chunked: bool)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    const READ_BUFFER: usize = 4 * 1024;
    const BODY: usize = 8 * 1024 * 1024;
    let body = pattern(BODY);
    let expected = body.clone();
    let server = tokio::spawn(async move {
        let mut conn = HttpConnection::new(server);
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        let mut resp = ResponseHead::with_status(200).unwrap();
        if chunked {
            resp.headers_mut()
                .append("Transfer-Encoding", "chunked")
                .unwrap();
            conn.queue_response_head(&resp);
            for part in body.chunks(1024 * 1024) {
                conn.write_chunk(part).await.unwrap();
            }
            conn.finish_chunked(&Headers::new()).await.unwrap();
        } else {
            resp.headers_mut().set_content_length(body.len() as u64);
            conn.write_response(&resp, &body).await.unwrap();
        }
    });
    let large_read_bytes = Arc::new(AtomicU64::new(0));
    let probe = ReadSizeProbe {
        inner: client,
        threshold: READ_BUFFER,
        large_read_bytes: large_read_bytes.clone(),
    };
    let mut conn = HttpConnection::with_config(probe, config(READ_BUFFER));
    conn.write_request(&request("GET", "/big"), b"")
        .await
        .unwrap();
    let mut resp = ResponseHead::new();
    conn.read_response_head(&mut resp, "GET").await.unwrap();
    let mut dst = vec![0u8; BODY];
    let n = conn.read_body_into(&mut dst).await.unwrap();
    assert_eq!(n, BODY);
    assert!(dst == expected, "body differs");
    assert_eq!(conn.read_buffer_capacity(), READ_BUFFER);
    // Only what arrived with the head (or with chunk headers) passed through the read buffer.
    let direct = large_read_bytes.load(Ordering::Relaxed);
    let through_buffer = BODY as u64 - direct;
    let max_through_buffer = if chunked {
        // Per chunk (8 of them) at most the buffer read that carried its header and the chunk's
        // last direct read (offered less than a buffer when less is left, so the probe counts it
        // as a buffer read; over TCP under load the total reached 36,929 bytes, past 9 buffers),
        // plus the head's read.
        17 * READ_BUFFER as u64
    } else {
        // The head's read, and the body's last direct read: when fewer than a buffer's worth of
        // bytes are left, that read is offered less than a buffer, and the probe, which tells the
        // two kinds of read apart by the room offered, counts it as a buffer read. Over TCP the
        // tail's size depends on how the segments arrived (under load it reached 4,010 bytes).
        2 * READ_BUFFER as u64
    };
    assert!(
        through_buffer <= max_through_buffer,
        "{through_buffer} bytes went through the read buffer"
    );
    server.await.unwrap();
}

#[tokio::test]
async fn large_body_goes_straight_into_the_destination_over_duplex() {
    bounded(async {
        let (client, server) = duplex(256 * 1024);
        large_body_straight_into_destination(client, server, false).await;
        let (client, server) = duplex(256 * 1024);
        large_body_straight_into_destination(client, server, true).await;
    })
    .await;
}

#[tokio::test]
async fn large_body_goes_straight_into_the_destination_over_tcp() {
    bounded(async {
        let (client, server) = tcp_pair().await;
        large_body_straight_into_destination(client, server, false).await;
        let (client, server) = tcp_pair().await;
        large_body_straight_into_destination(client, server, true).await;
    })
    .await;
}

#[tokio::test]
async fn server_receives_a_large_chunked_upload_in_buffer_slices_over_tcp() {
    bounded(async {
        const BODY: usize = 3 * 1024 * 1024 + 17;
        let (client, server) = tcp_pair().await;
        let body = pattern(BODY);
        let expected = body.clone();
        let sender = tokio::spawn(async move {
            let mut conn = HttpConnection::new(client);
            let mut req = request("PUT", "/upload");
            req.headers_mut()
                .append("Transfer-Encoding", "chunked")
                .unwrap();
            conn.queue_request_head(&req);
            for part in body.chunks(100_000) {
                conn.write_chunk(part).await.unwrap();
            }
            let mut trailers = Headers::new();
            trailers
                .append("x-amz-checksum-crc32c", "AAAAAA==")
                .unwrap();
            conn.finish_chunked(&trailers).await.unwrap();
            conn
        });
        let mut conn = HttpConnection::with_config(server, config(4096));
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        let mut received = Vec::with_capacity(BODY);
        let mut largest_slice = 0;
        while let Some(slice) = conn.body_chunk().await.unwrap() {
            largest_slice = largest_slice.max(slice.len());
            received.extend_from_slice(slice);
        }
        assert!(received == expected, "upload differs");
        assert!(largest_slice <= 4096);
        assert_eq!(conn.read_buffer_capacity(), 4096);
        assert_eq!(
            conn.trailers().unwrap().get_str("x-amz-checksum-crc32c"),
            Some("AAAAAA==")
        );
        sender.await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn connection_closed_mid_body_is_an_unexpected_eof() {
    bounded(async {
        let (mut client, server) = duplex(64 * 1024);
        client
            .write_all(b"PUT /k HTTP/1.1\r\nContent-Length: 100\r\n\r\n0123456789")
            .await
            .unwrap();
        drop(client);
        let mut conn = HttpConnection::new(server);
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        let mut dst = [0u8; 100];
        match conn.read_body_into(&mut dst).await {
            Err(HttpError::UnexpectedEof {
                expected: 100,
                received: 10,
            }) => {}
            other => panic!("expected UnexpectedEof, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn connection_closed_mid_body_is_an_error_for_direct_reads_and_chunked_bodies() {
    bounded(async {
        // Direct read path: the destination is larger than the read buffer.
        let (mut client, server) = duplex(64 * 1024);
        client
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            .await
            .unwrap();
        client.write_all(&[7u8; 5000]).await.unwrap();
        drop(client);
        let mut conn = HttpConnection::with_config(server, config(1024));
        let mut resp = ResponseHead::new();
        conn.read_response_head(&mut resp, "GET").await.unwrap();
        let mut dst = vec![0u8; 100_000];
        match conn.read_body_into(&mut dst).await {
            Err(HttpError::UnexpectedEof {
                expected: 100_000,
                received: 5000,
            }) => {}
            other => panic!("expected UnexpectedEof, got {other:?}"),
        }

        let (mut client, server) = duplex(64 * 1024);
        client
            .write_all(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nab",
            )
            .await
            .unwrap();
        drop(client);
        let mut conn = HttpConnection::new(server);
        conn.read_response_head(&mut resp, "GET").await.unwrap();
        let mut dst = [0u8; 64];
        match conn.read_body_into(&mut dst).await {
            Err(HttpError::TruncatedChunkedBody { received: 7 }) => {}
            other => panic!("expected TruncatedChunkedBody, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn connection_closed_mid_head_is_an_incomplete_head() {
    bounded(async {
        let (mut client, server) = duplex(1024);
        client.write_all(b"GET / HTTP/1.1\r\nHost:").await.unwrap();
        drop(client);
        let mut conn = HttpConnection::new(server);
        let mut head = RequestHead::new();
        match conn.read_request_head(&mut head).await {
            Err(HttpError::IncompleteHead { received: 21 }) => {}
            other => panic!("expected IncompleteHead, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn a_body_larger_than_the_destination_is_rejected() {
    bounded(async {
        let (mut client, server) = duplex(1024);
        client
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789")
            .await
            .unwrap();
        let mut conn = HttpConnection::new(server);
        let mut resp = ResponseHead::new();
        conn.read_response_head(&mut resp, "GET").await.unwrap();
        let mut dst = [0u8; 9];
        assert!(matches!(
            conn.read_body_into(&mut dst).await,
            Err(HttpError::DestinationTooSmall { capacity: 9 })
        ));

        let (mut client, server) = duplex(1024);
        client
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n")
            .await
            .unwrap();
        let mut conn = HttpConnection::new(server);
        conn.read_response_head(&mut resp, "GET").await.unwrap();
        let mut dst = [0u8; 9];
        assert!(matches!(
            conn.read_body_into(&mut dst).await,
            Err(HttpError::DestinationTooSmall { capacity: 9 })
        ));
        // Exactly the body's size fits, and the last chunk is consumed too.
        let (mut client, server) = duplex(1024);
        client
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            .await
            .unwrap();
        let mut conn = HttpConnection::new(server);
        conn.read_response_head(&mut resp, "GET").await.unwrap();
        let mut dst = [0u8; 5];
        assert_eq!(conn.read_body_into(&mut dst).await.unwrap(), 5);
        assert!(conn.is_reusable());
    })
    .await;
}

fn short_timeouts() -> ConnectionConfig {
    ConnectionConfig {
        read_buffer_size: 1024,
        limits: Limits {
            head_timeout: Some(Duration::from_millis(100)),
            body_read_timeout: Some(Duration::from_millis(100)),
            ..Limits::default()
        },
        release_idle_buffer_after: None,
    }
}

#[tokio::test]
async fn head_timeout_fires_on_a_slow_head() {
    bounded(async {
        let (mut client, server) = duplex(1024);
        client.write_all(b"GET / HTTP/1.1\r\nHo").await.unwrap();
        let mut conn = HttpConnection::with_config(server, short_timeouts());
        let mut head = RequestHead::new();
        let started = tokio::time::Instant::now();
        match conn.read_request_head(&mut head).await {
            Err(e @ HttpError::HeadTimeout { .. }) => assert_eq!(e.status_hint(), Some(408)),
            other => panic!("expected HeadTimeout, got {other:?}"),
        }
        assert!(started.elapsed() >= Duration::from_millis(100));
        drop(client);
    })
    .await;
}

#[tokio::test]
async fn body_timeout_fires_when_the_peer_stops_sending_over_tcp() {
    bounded(async {
        let (mut client, server) = tcp_pair().await;
        client
            .write_all(b"PUT / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
            .await
            .unwrap();
        let mut conn = HttpConnection::with_config(server, short_timeouts());
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        let mut dst = [0u8; 10];
        match conn.read_body_into(&mut dst).await {
            Err(HttpError::BodyTimeout { timeout }) => {
                assert_eq!(timeout, Duration::from_millis(100))
            }
            other => panic!("expected BodyTimeout, got {other:?}"),
        }
        drop(client);
    })
    .await;
}

#[tokio::test]
async fn a_head_larger_than_the_read_buffer_grows_it_up_to_the_head_limit() {
    bounded(async {
        let (mut client, server) = duplex(64 * 1024);
        let long_value = "v".repeat(3000);
        let text = format!("GET / HTTP/1.1\r\nX-Long: {long_value}\r\n\r\n");
        client.write_all(text.as_bytes()).await.unwrap();
        let mut conn = HttpConnection::with_config(
            server,
            ConnectionConfig {
                read_buffer_size: 256,
                limits: Limits {
                    max_head_bytes: 4096,
                    ..Limits::default()
                },
                release_idle_buffer_after: None,
            },
        );
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        assert_eq!(head.headers().get_str("x-long"), Some(long_value.as_str()));
        assert_eq!(conn.read_buffer_capacity(), 4096);

        let too_long = format!("GET / HTTP/1.1\r\nX-Long: {}\r\n\r\n", "w".repeat(5000));
        client.write_all(too_long.as_bytes()).await.unwrap();
        match conn.read_request_head(&mut head).await {
            Err(e @ HttpError::HeadTooLarge { limit: 4096 }) => {
                assert_eq!(e.status_hint(), Some(431))
            }
            other => panic!("expected HeadTooLarge, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn ambiguous_framing_is_rejected_by_the_connection() {
    bounded(async {
        let (mut client, server) = duplex(1024);
        client
            .write_all(
                b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            )
            .await
            .unwrap();
        let mut conn = HttpConnection::new(server);
        let mut head = RequestHead::new();
        match conn.read_request_head(&mut head).await {
            Err(e @ HttpError::ConflictingFraming) => assert_eq!(e.status_hint(), Some(400)),
            other => panic!("expected ConflictingFraming, got {other:?}"),
        }
        assert!(!conn.is_reusable());
    })
    .await;
}

#[tokio::test]
async fn response_bodies_until_close_and_to_head_requests() {
    bounded(async {
        let (mut client, server) = duplex(64 * 1024);
        client
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\n\r\nuntil the end",
            )
            .await
            .unwrap();
        drop(client);
        let mut conn = HttpConnection::new(server);
        let mut resp = ResponseHead::new();
        conn.read_response_head(&mut resp, "HEAD").await.unwrap();
        assert_eq!(conn.incoming_framing(), BodyFraming::Empty);
        assert_eq!(resp.content_length().unwrap(), Some(5));
        conn.read_response_head(&mut resp, "GET").await.unwrap();
        assert_eq!(conn.incoming_framing(), BodyFraming::UntilClose);
        let mut dst = [0u8; 64];
        let n = conn.read_body_into(&mut dst).await.unwrap();
        assert_eq!(&dst[..n], b"until the end");
        assert!(!conn.is_reusable());
    })
    .await;
}

#[tokio::test]
async fn read_body_into_small_slices_copies_buffered_payload() {
    bounded(async {
        let (mut client, server) = duplex(64 * 1024);
        let body = pattern(10_000);
        client
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2710\r\n")
            .await
            .unwrap();
        client.write_all(&body).await.unwrap();
        client.write_all(b"\r\n0\r\n\r\n").await.unwrap();
        let mut conn = HttpConnection::with_config(server, config(4096));
        let mut resp = ResponseHead::new();
        conn.read_response_head(&mut resp, "GET").await.unwrap();
        let mut got = Vec::new();
        let mut slice = [0u8; 333];
        loop {
            let n = conn.read_body(&mut slice).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&slice[..n]);
        }
        assert!(got == body);
        assert_eq!(conn.body_received(), 10_000);
        assert!(conn.is_reusable());
    })
    .await;
}

/// Reads the current body to its end.
async fn whole_body<S: AsyncRead + AsyncWrite + Unpin>(conn: &mut HttpConnection<S>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut slice = vec![0u8; 16 * 1024];
    loop {
        let n = conn.read_body(&mut slice).await.unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&slice[..n]);
    }
}

/// A server connection that waits for its next head with nothing buffered gives its read buffer's
/// pages back once, after the configured wait, and reads the request that comes later whole; one
/// that is busy never does.
#[tokio::test]
async fn an_idle_connection_gives_its_read_buffer_back_once_and_reads_on() {
    bounded(async {
        let (mut client, server) = duplex(1 << 20);
        let mut conn = HttpConnection::with_config(
            server,
            ConnectionConfig {
                release_idle_buffer_after: Some(Duration::from_millis(50)),
                ..config(64 * 1024)
            },
        );
        let body = pattern(48 * 1024);
        let request = |path: &str| {
            let mut bytes = format!(
                "PUT {path} HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            bytes.extend_from_slice(&body);
            bytes
        };
        // Busy: the request is there before the head is read.
        client.write_all(&request("/busy")).await.unwrap();
        let mut head = RequestHead::new();
        assert!(conn.read_request_head(&mut head).await.unwrap());
        assert!(whole_body(&mut conn).await == body);
        assert_eq!(
            conn.idle_releases(),
            0,
            "a busy connection keeps its buffer"
        );

        // Idle: the next request comes well after the wait.
        let late = request("/late");
        let send_late = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            client.write_all(&late).await.unwrap();
        };
        let (read, ()) = tokio::join!(conn.read_request_head(&mut head), send_late);
        assert!(read.unwrap());
        assert_eq!(head.target(), "/late");
        assert_eq!(
            conn.idle_releases(),
            1,
            "given back once, not on every wait"
        );
        assert!(
            whole_body(&mut conn).await == body,
            "the body read into the given-back pages is whole"
        );
    })
    .await;
}
