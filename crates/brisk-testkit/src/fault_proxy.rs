//! A TCP proxy that damages what flows through it, for fault tests against real servers (brisk serve
//! and MinIO). It forwards every byte between the client and the server unchanged, except where a
//! [`Fault`] applies, on the responses a [`Schedule`] picks:
//!
//! - [`Fault::Flip`]: one byte of a response body is flipped. This is what a bad NIC, a broken
//!   middlebox or memory corruption does: the bytes arrive with the right length and framing, and
//!   only an end-to-end checksum can tell.
//! - [`Fault::ResetAt`]: the connection is reset (RST, not FIN) when a body reaches an offset.
//! - [`Fault::Stall`]: a body stops at an offset for a while, then goes on.
//! - [`Fault::SlowDown`]: a new connection's first request is answered `503 SlowDown` by the proxy
//!   itself (never forwarded), and the connection closed: a throttling storm.
//!
//! It follows HTTP/1.1 framing just enough to find bodies: the methods of the requests that went
//! up (a HEAD's answer has no body), and each answer's `Content-Length`. Requests with bodies are
//! skipped by their `Content-Length`; chunked framing is not followed (none of the reads it is for
//! use it).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does to a response it picks.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// Flip the byte at this offset of the body.
    Flip { at: u64 },
    /// Reset the connection when the body reaches this offset.
    ResetAt { at: u64 },
    /// Hold the body at this offset for `pause`, then go on.
    Stall { at: u64, pause: Duration },
    /// Answer a new connection's first request with `503 SlowDown` and close.
    SlowDown,
}

/// Which of the eligible responses (bodies that reach the fault's offset; for `SlowDown`, new
/// connections) the fault applies to.
#[derive(Debug, Clone, Copy)]
pub enum Schedule {
    /// The first `n`, then none.
    First(u32),
    /// Every `n`th, starting with the first (1: all of them; 2: the 1st, 3rd, 5th, ...).
    EveryNth(u32),
}

impl Schedule {
    /// The schedule to use for a download through the batch engine. It reads several parts at once
    /// over several connections, and the proxy counts responses across all of them: "every 2nd"
    /// (any `EveryNth` above 1) can then cut one part's every attempt, which no retry policy rides
    /// out, so it becomes the first two responses (a part may lose two attempts in a row and still
    /// arrive). Single-stream reads keep the schedule: there a cut answer is followed by a whole one.
    pub fn for_parallel_parts(self) -> Self {
        match self {
            Schedule::EveryNth(n) if n > 1 => Schedule::First(2),
            other => other,
        }
    }
}

/// Counts eligible responses and decides which get the fault.
#[derive(Debug)]
struct Plan {
    fault: Fault,
    schedule: Schedule,
    seen: AtomicU32,
    applied: AtomicU32,
    stopped: std::sync::atomic::AtomicBool,
}

impl Plan {
    /// Whether the fault applies to the eligible response seen now.
    fn take(&self) -> bool {
        if self.stopped.load(Ordering::SeqCst) {
            return false;
        }
        let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        let apply = match self.schedule {
            Schedule::First(count) => n <= count,
            Schedule::EveryNth(every) => (n - 1).is_multiple_of(every.max(1)),
        };
        if apply {
            self.applied.fetch_add(1, Ordering::SeqCst);
        }
        apply
    }

    fn at(&self) -> u64 {
        match self.fault {
            Fault::Flip { at } | Fault::ResetAt { at } | Fault::Stall { at, .. } => at,
            Fault::SlowDown => u64::MAX,
        }
    }
}

/// A running proxy (its accept loop lives as long as the test's runtime).
#[derive(Debug)]
pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`, to give the client instead of the server's endpoint.
    pub endpoint: String,
    plan: Arc<Plan>,
}

impl FaultProxy {
    /// Forwards to `127.0.0.1:upstream_port`, applying `fault` on the responses `schedule` picks.
    pub async fn start(upstream_port: u16, fault: Fault, schedule: Schedule) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let plan = Arc::new(Plan {
            fault,
            schedule,
            seen: AtomicU32::new(0),
            applied: AtomicU32::new(0),
            stopped: Default::default(),
        });
        let p = Arc::clone(&plan);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let plan = Arc::clone(&p);
                tokio::spawn(async move {
                    let mut first = Vec::new();
                    let mut client = client;
                    if matches!(plan.fault, Fault::SlowDown) {
                        match read_first_request(&mut client).await {
                            Some((_, is_head)) if plan.take() => {
                                slow_down(client, is_head).await;
                                return;
                            }
                            Some((bytes, _)) => first = bytes,
                            None => return,
                        }
                    }
                    if let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream_port)).await
                        && server.write_all(&first).await.is_ok()
                    {
                        relay(client, server, plan).await;
                    }
                });
            }
        });
        Self { endpoint, plan }
    }

    /// How many responses the fault was applied to so far.
    pub fn applied(&self) -> u32 {
        self.plan.applied.load(Ordering::SeqCst)
    }

    /// Applies the fault no more from now on.
    pub fn stop(&self) {
        self.plan.stopped.store(true, Ordering::SeqCst);
    }
}

/// Reads the first request on a connection (head and `Content-Length` body): its bytes, and
/// whether it is a HEAD. `None` when the client closed first.
async fn read_first_request(client: &mut TcpStream) -> Option<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some((end, length)) = parse_head(&bytes) {
            while (bytes.len() as u64) < end as u64 + length {
                let n = client.read(&mut buf).await.ok().filter(|&n| n > 0)?;
                bytes.extend_from_slice(&buf[..n]);
            }
            let is_head = bytes.starts_with(b"HEAD ");
            return Some((bytes, is_head));
        }
        let n = client.read(&mut buf).await.ok().filter(|&n| n > 0)?;
        bytes.extend_from_slice(&buf[..n]);
    }
}

/// Answers `503 SlowDown` as S3 does when it throttles, and closes the connection.
async fn slow_down(mut client: TcpStream, is_head: bool) {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
                <Message>Please reduce your request rate.</Message></Error>";
    let head = format!(
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    let _ = client.write_all(head.as_bytes()).await;
    if !is_head {
        let _ = client.write_all(body.as_bytes()).await;
    }
    let _ = client.shutdown().await;
}

/// Where a stream of HTTP/1.1 messages is: in a head (its bytes so far) or in a body (bytes left).
enum Framing {
    Head(Vec<u8>),
    Body { at: u64, left: u64 },
}

/// The end of a message head in `head`, and its `Content-Length` (0 when absent).
fn parse_head(head: &[u8]) -> Option<(usize, u64)> {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = String::from_utf8_lossy(&head[..end]);
    let length = text
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0);
    Some((end, length))
}

/// Feeds `data` through `framing`; `on_head` sees each complete head and returns the length of
/// the body that follows it; `on_body` sees each body byte range as (offset in the body, bytes).
fn follow(
    framing: &mut Framing,
    mut data: &mut [u8],
    on_head: &mut dyn FnMut(&[u8], u64) -> u64,
    on_body: &mut dyn FnMut(u64, &mut [u8]),
) {
    while !data.is_empty() {
        match framing {
            Framing::Head(head) => {
                let before = head.len();
                head.extend_from_slice(data);
                let Some((end, length)) = parse_head(head) else {
                    return;
                };
                let used = end - before;
                let body = on_head(&head[..end], length);
                *framing = Framing::Body { at: 0, left: body };
                data = &mut data[used..];
            }
            Framing::Body { at, left } => {
                let n = (*left).min(data.len() as u64) as usize;
                on_body(*at, &mut data[..n]);
                *at += n as u64;
                *left -= n as u64;
                data = &mut data[n..];
            }
        }
        if let Framing::Body { left: 0, .. } = framing {
            *framing = Framing::Head(Vec::new());
        }
    }
}

/// What the response loop does at a position of the bytes it just read.
enum Action {
    Reset,
    Pause(Duration),
}

async fn relay(client: TcpStream, server: TcpStream, plan: Arc<Plan>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // The methods of the requests sent up, oldest first: the answers come back in that order.
    let methods = Arc::new(Mutex::new(VecDeque::<bool>::new()));
    let heads = Arc::clone(&methods);
    let requests = tokio::spawn(async move {
        let mut framing = Framing::Head(Vec::new());
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            follow(
                &mut framing,
                &mut buf[..n],
                &mut |head, length| {
                    heads.lock().unwrap().push_back(head.starts_with(b"HEAD "));
                    length
                },
                &mut |_, _| {},
            );
            if server_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = server_write.shutdown().await;
    });
    let at = plan.at();
    let mut framing = Framing::Head(Vec::new());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match server_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let base = buf.as_ptr() as usize;
        let mut action = None;
        follow(
            &mut framing,
            &mut buf[..n],
            &mut |_, length| {
                let was_head = methods.lock().unwrap().pop_front().unwrap_or(false);
                if was_head { 0 } else { length }
            },
            &mut |offset, bytes| {
                let end = offset + bytes.len() as u64;
                if !(offset..end).contains(&at) || action.is_some() || !plan.take() {
                    return;
                }
                let i = (at - offset) as usize;
                let position = bytes.as_ptr() as usize - base + i;
                match plan.fault {
                    Fault::Flip { .. } => bytes[i] ^= 0x20,
                    Fault::ResetAt { .. } => action = Some((position, Action::Reset)),
                    Fault::Stall { pause, .. } => action = Some((position, Action::Pause(pause))),
                    Fault::SlowDown => {}
                }
            },
        );
        let sent = match action {
            None => client_write.write_all(&buf[..n]).await,
            Some((position, Action::Reset)) => {
                let _ = client_write.write_all(&buf[..position]).await;
                // Linger zero: closing sends RST, as a crashed peer or a middlebox does.
                let _ = client_write.as_ref().set_zero_linger();
                break;
            }
            Some((position, Action::Pause(pause))) => {
                let before = client_write.write_all(&buf[..position]).await;
                tokio::time::sleep(pause).await;
                match before {
                    Ok(()) => client_write.write_all(&buf[position..n]).await,
                    Err(e) => Err(e),
                }
            }
        };
        if sent.is_err() {
            break;
        }
    }
    requests.abort();
}
