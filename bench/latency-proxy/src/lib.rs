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
//! Each direction of a connection is a pipe ([`pipe`]): bodies are spliced through it, never
//! copied into the proxy's memory, and heads are written into it between them. Buffering is
//! bounded by the pipe's capacity (4 MiB where the kernel allows it); when it is full the proxy
//! stops reading and TCP's flow control pushes back on the sender, as a full network path would.

pub mod delay;
pub mod framing;
pub mod pipe;

mod clock;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use delay::{Downstream, Upstream};
pub use delay::{Mode, Model};
use framing::{Framer, Kind, Step, response_framing};
use pipe::Pipe;

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

/// A piece of traffic in a direction's pipe and when it is let through: its length, or `None`:
/// the sender closed its side.
type Piece = (Instant, Option<usize>);

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
    let (up_pipe, down_pipe) = (Pipe::new()?, Pipe::new()?);
    let (up_tx, up_rx) = mpsc::unbounded_channel();
    let (down_tx, down_rx) = mpsc::unbounded_channel();
    let (sent_tx, sent_rx) = mpsc::unbounded_channel();
    let up = Upstream::new(&model, opened);
    let down = Downstream::new(model);
    let _ = tokio::join!(
        read_requests(&client, &up_pipe, up, up_tx, sent_tx, Arc::clone(&counts)),
        deliver(&up_pipe, up_rx, &server),
        read_responses(&server, &down_pipe, down, down_tx, sent_rx, counts),
        deliver(&down_pipe, down_rx, &client),
    );
    Ok(())
}

/// Bytes looked at for a head or chunk framing at a time: what is peeked at is copied, and the
/// body behind a head is better spliced; a longer head takes more than one look.
const PEEK_SIZE: usize = 2 * 1024;

/// Bytes the framer must see (a head, chunk framing): peeked at, taken from the socket as far as
/// the framer used them, and written into the pipe (a head once it is whole; the framer holds its
/// earlier parts). Returns the step and the bytes it put in the pipe; `None`: the end of the stream.
async fn framed_step(
    from: &TcpStream,
    pipe: &Pipe,
    framer: &mut Framer,
    peeked: &mut [u8],
) -> io::Result<Option<(Step, usize)>> {
    let got = pipe::peek(from, peeked).await?;
    if got == 0 {
        return Ok(None);
    }
    let step = framer.step(&peeked[..got])?;
    pipe::discard(from, step.used)?;
    let written: &[u8] = match &step.head {
        Some(head) => &head.bytes,
        None if step.in_head => &[],
        None => &peeked[..step.used],
    };
    pipe.write_all(written).await?;
    let len = written.len();
    Ok(Some((step, len)))
}

/// Client to server: each piece is stamped with its arrival at the server, and each request head
/// announced to the downstream before it is forwarded.
async fn read_requests(
    from: &TcpStream,
    pipe: &Pipe,
    up: Upstream,
    line: mpsc::UnboundedSender<Piece>,
    sent: mpsc::UnboundedSender<Sent>,
    counts: Arc<Counts>,
) -> io::Result<()> {
    let mut framer = Framer::new(Kind::Request);
    let mut peeked = vec![0u8; PEEK_SIZE];
    loop {
        if let Some(left) = framer.body_left() {
            let n = pipe.fill_from(from, left).await?;
            let arrives = up.release(Instant::now());
            if n == 0 {
                let _ = line.send((arrives, None));
                return Ok(());
            }
            framer.skip_body(n as u64);
            if line.send((arrives, Some(n))).is_err() {
                return Ok(());
            }
            continue;
        }
        let step = framed_step(from, pipe, &mut framer, &mut peeked).await?;
        let arrives = up.release(Instant::now());
        let Some((step, len)) = step else {
            let _ = line.send((arrives, None));
            return Ok(());
        };
        if let Some(head) = step.head {
            counts.requests.fetch_add(1, Ordering::Relaxed);
            let is_head = head.method.as_deref() == Some("HEAD");
            framer.begin_body(head.framing);
            let _ = sent.send(Sent {
                arrived: arrives,
                is_head,
            });
        }
        if len > 0 && line.send((arrives, Some(len))).is_err() {
            return Ok(());
        }
    }
}

/// Server to client: each response's pieces get its own first-byte gate.
async fn read_responses(
    from: &TcpStream,
    pipe: &Pipe,
    mut down: Downstream,
    line: mpsc::UnboundedSender<Piece>,
    mut sent: mpsc::UnboundedReceiver<Sent>,
    counts: Arc<Counts>,
) -> io::Result<()> {
    let mut framer = Framer::new(Kind::Response);
    let mut peeked = vec![0u8; PEEK_SIZE];
    loop {
        if let Some(left) = framer.body_left() {
            let n = pipe.fill_from(from, left).await?;
            let read_at = Instant::now();
            if n == 0 {
                let at = down.release(read_at, true);
                let _ = line.send((at, None));
                return Ok(());
            }
            let step = framer.skip_body(n as u64);
            let at = down.release(read_at, step.ended);
            if line.send((at, Some(n))).is_err() {
                return Ok(());
            }
            continue;
        }
        let step = framed_step(from, pipe, &mut framer, &mut peeked).await?;
        let read_at = Instant::now();
        let Some((step, len)) = step else {
            let at = down.release(read_at, true);
            let _ = line.send((at, None));
            return Ok(());
        };
        let ended = match step.head {
            Some(head) => {
                counts.responses.fetch_add(1, Ordering::Relaxed);
                let interim = head.status.is_some_and(|s| s < 200);
                let request = if interim { None } else { sent.try_recv().ok() };
                down.begin(request.as_ref().map(|r| r.arrived));
                let answers_head = request.as_ref().is_some_and(|r| r.is_head);
                framer.begin_body(response_framing(&head, answers_head))
            }
            None => step.ended,
        };
        if len > 0
            && line
                .send((down.release(read_at, ended), Some(len)))
                .is_err()
        {
            return Ok(());
        }
    }
}

/// Moves each piece from the pipe to the socket at its time, together with the pieces behind it
/// that are due by then; at the end of the stream, closes the write side.
async fn deliver(
    pipe: &Pipe,
    mut line: mpsc::UnboundedReceiver<Piece>,
    to: &TcpStream,
) -> io::Result<()> {
    let mut next = line.recv().await;
    while let Some((at, len)) = next.take() {
        if at > Instant::now() {
            clock::sleep_until(at).await;
        }
        let Some(mut len) = len else {
            return pipe::shut_write(to);
        };
        let now = Instant::now();
        while let Ok(piece) = line.try_recv() {
            match piece {
                (at, Some(more)) if at <= now => len += more,
                later => {
                    next = Some(later);
                    break;
                }
            }
        }
        pipe.drain_to(to, len).await?;
        if next.is_none() {
            next = line.recv().await;
        }
    }
    Ok(())
}
