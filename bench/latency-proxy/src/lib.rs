//! A TCP proxy that gives loopback the latency of a real object store, for the benchmarks: this
//! kernel has no `netem` qdisc, and on 127.0.0.1 a round trip is tens of microseconds, where queue
//! depth and pipelining matter least.
//!
//! Every byte passes unchanged; only its timing changes (the model is in [`delay`]): each direction
//! is a delay line of half a round trip, a new connection waits one round trip before its first
//! bytes move, and each response's first byte waits a first-byte latency `L` from its request's
//! arrival at the server. The proxy follows HTTP/1.1 framing ([`framing`]) to know which response
//! answers which request, so pipelined requests are each delayed from their own arrival
//! ([`Mode::Parallel`]) rather than one after another, unless [`Mode::Serial`] is asked for.
//!
//! Buffering is bounded: each direction of a connection holds at most [`LINE_PIECES`] reads of at
//! most [`READ_SIZE`] bytes; past that the proxy stops reading and TCP's flow control pushes back
//! on the sender, as a full network path would.

pub mod delay;
pub mod framing;

mod clock;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use delay::{Downstream, Upstream};
pub use delay::{Mode, Model};
use framing::{Framer, Kind, response_framing};

/// Bytes read from a socket at a time.
pub const READ_SIZE: usize = 64 * 1024;
/// Reads one direction of a connection holds at most before it stops reading (4 MiB at most:
/// more than a 10 ms round trip carries on one connection at loopback speed).
pub const LINE_PIECES: usize = 64;

/// What the proxy has seen, for tests and the benchmark's report.
#[derive(Debug, Default)]
pub struct Counts {
    /// Client connections accepted.
    pub connections: AtomicU64,
    /// Request heads forwarded.
    pub requests: AtomicU64,
    /// Response heads forwarded.
    pub responses: AtomicU64,
}

/// A running proxy.
#[derive(Debug)]
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    /// Its counters.
    pub counts: Arc<Counts>,
}

/// Listens on `listen` (port 0: any) and forwards every connection to `upstream` with `model`'s
/// delays, on the current tokio runtime, until the runtime ends.
pub async fn start(listen: SocketAddr, upstream: SocketAddr, model: Model) -> io::Result<Proxy> {
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let counts = Arc::new(Counts::default());
    let shared = Arc::clone(&counts);
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                continue;
            };
            let opened = Instant::now();
            shared.connections.fetch_add(1, Ordering::Relaxed);
            let counts = Arc::clone(&shared);
            tokio::spawn(async move {
                let _ = connection(client, upstream, model, opened, counts).await;
            });
        }
    });
    Ok(Proxy { addr, counts })
}

/// A piece of traffic and when it is let through; `None` bytes: the sender closed its side.
type Piece = (Instant, Option<Vec<u8>>);

/// What the downstream needs to know of a request: when it reached the server, and whether its
/// answer has a body (a HEAD's has none).
struct Sent {
    arrived: Instant,
    is_head: bool,
}

async fn connection(
    client: TcpStream,
    upstream: SocketAddr,
    model: Model,
    opened: Instant,
    counts: Arc<Counts>,
) -> io::Result<()> {
    let server = TcpStream::connect(upstream).await?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let (up_tx, up_rx) = mpsc::channel(LINE_PIECES);
    let (down_tx, down_rx) = mpsc::channel(LINE_PIECES);
    let (sent_tx, sent_rx) = mpsc::unbounded_channel();
    let up = Upstream::new(&model, opened);
    let down = Downstream::new(model);
    let _ = tokio::join!(
        read_requests(client_read, up, up_tx, sent_tx, Arc::clone(&counts)),
        deliver(up_rx, server_write),
        read_responses(server_read, down, down_tx, sent_rx, counts),
        deliver(down_rx, client_write),
    );
    Ok(())
}

/// Client to server: each read is stamped with its arrival at the server, and each request head in
/// it announced to the downstream before the bytes are forwarded.
async fn read_requests(
    mut from: OwnedReadHalf,
    up: Upstream,
    line: mpsc::Sender<Piece>,
    sent: mpsc::UnboundedSender<Sent>,
    counts: Arc<Counts>,
) -> io::Result<()> {
    let mut framer = Framer::new(Kind::Request);
    loop {
        // `read_buf` fills the spare capacity: no zeroing pass over each fresh buffer.
        let mut buf = Vec::with_capacity(READ_SIZE);
        let n = from.read_buf(&mut buf).await?;
        let arrives = up.release(Instant::now());
        if n == 0 {
            let _ = line.send((arrives, None)).await;
            return Ok(());
        }
        let mut pos = 0;
        while pos < n {
            let step = framer.step(&buf[pos..])?;
            if let Some(head) = step.head {
                counts.requests.fetch_add(1, Ordering::Relaxed);
                let is_head = head.method.as_deref() == Some("HEAD");
                framer.begin_body(head.framing);
                let _ = sent.send(Sent {
                    arrived: arrives,
                    is_head,
                });
            }
            pos += step.used;
        }
        if line.send((arrives, Some(buf))).await.is_err() {
            return Ok(());
        }
    }
}

/// Server to client: responses are cut where they start, so each piece gets its own response's
/// gate.
async fn read_responses(
    mut from: OwnedReadHalf,
    mut down: Downstream,
    line: mpsc::Sender<Piece>,
    mut sent: mpsc::UnboundedReceiver<Sent>,
    counts: Arc<Counts>,
) -> io::Result<()> {
    let mut framer = Framer::new(Kind::Response);
    loop {
        let mut buf = Vec::with_capacity(READ_SIZE);
        let n = from.read_buf(&mut buf).await?;
        let read_at = Instant::now();
        if n == 0 {
            let at = down.release(read_at, true);
            let _ = line.send((at, None)).await;
            return Ok(());
        }
        let mut pos = 0;
        let mut pieces = Vec::new();
        while pos < n {
            let step = framer.step(&buf[pos..])?;
            if !step.in_head && step.used > 0 {
                let at = down.release(read_at, step.ended);
                pieces.push((at, pos..pos + step.used));
            }
            if let Some(head) = step.head {
                counts.responses.fetch_add(1, Ordering::Relaxed);
                let interim = head.status.is_some_and(|s| s < 200);
                let request = if interim { None } else { sent.try_recv().ok() };
                down.begin(request.as_ref().map(|r| r.arrived));
                let framing = response_framing(&head, request.as_ref().is_some_and(|r| r.is_head));
                let ended = framer.begin_body(framing);
                let at = down.release(read_at, ended);
                if line.send((at, Some(head.bytes))).await.is_err() {
                    return Ok(());
                }
            }
            pos += step.used;
            // Body pieces go out in order with the heads between them.
            if pieces.len() == 1 && pieces[0].1 == (0..n) {
                let (at, _) = pieces.pop().expect("one piece");
                let whole = std::mem::take(&mut buf);
                if line.send((at, Some(whole))).await.is_err() {
                    return Ok(());
                }
                break;
            }
            for (at, range) in pieces.drain(..) {
                if line.send((at, Some(buf[range].to_vec()))).await.is_err() {
                    return Ok(());
                }
            }
        }
    }
}

/// Writes each piece at its time; at the end of the stream, closes the write side.
async fn deliver(mut line: mpsc::Receiver<Piece>, mut to: OwnedWriteHalf) -> io::Result<()> {
    while let Some((at, bytes)) = line.recv().await {
        if at > Instant::now() {
            clock::sleep_until(at).await;
        }
        match bytes {
            Some(bytes) => to.write_all(&bytes).await?,
            None => {
                to.shutdown().await?;
                return Ok(());
            }
        }
    }
    Ok(())
}
