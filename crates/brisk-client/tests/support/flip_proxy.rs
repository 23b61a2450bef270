//! A TCP proxy that damages responses: it forwards every byte between the client and the test
//! server unchanged, except the byte at one offset of a response body, which it flips, in as many
//! responses as it is told to. A flipped byte inside a body is what a bad NIC, a broken middlebox
//! or memory corruption on the way does: the bytes arrive with the right length and framing, and
//! only an end-to-end checksum can tell.
//!
//! It follows HTTP/1.1 framing just enough to find bodies: the methods of the requests that went
//! up (a HEAD's answer has no body), and each answer's `Content-Length`. Requests with bodies are
//! skipped by their `Content-Length`; chunked framing is not followed (none of the reads it is for
//! use it).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running proxy (its accept loop lives as long as the test's runtime).
pub struct FlipProxy {
    /// `http://127.0.0.1:PORT`, to give the client instead of the server's endpoint.
    pub endpoint: String,
    left: Arc<AtomicU32>,
    flipped: Arc<AtomicU32>,
}

impl FlipProxy {
    /// Forwards to `127.0.0.1:upstream_port`, flipping the byte at `at` of the body of the first
    /// `responses` answers whose body is longer than `at` (`u32::MAX`: of every one).
    pub async fn start(upstream_port: u16, at: u64, responses: u32) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let left = Arc::new(AtomicU32::new(responses));
        let flipped = Arc::new(AtomicU32::new(0));
        let (l, f) = (Arc::clone(&left), Arc::clone(&flipped));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (l, f) = (Arc::clone(&l), Arc::clone(&f));
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(("127.0.0.1", upstream_port)).await {
                        relay(client, server, at, l, f).await;
                    }
                });
            }
        });
        Self {
            endpoint,
            left,
            flipped,
        }
    }

    /// How many bytes were flipped so far.
    pub fn flipped(&self) -> u32 {
        self.flipped.load(Ordering::SeqCst)
    }

    /// Flips no more bytes from now on.
    pub fn stop_flipping(&self) {
        self.left.store(0, Ordering::SeqCst);
    }
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

async fn relay(
    client: TcpStream,
    server: TcpStream,
    flip_at: u64,
    left: Arc<AtomicU32>,
    flipped: Arc<AtomicU32>,
) {
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
    let mut framing = Framing::Head(Vec::new());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match server_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        follow(
            &mut framing,
            &mut buf[..n],
            &mut |_, length| {
                let was_head = methods.lock().unwrap().pop_front().unwrap_or(false);
                if was_head { 0 } else { length }
            },
            &mut |offset, bytes| {
                let end = offset + bytes.len() as u64;
                if (offset..end).contains(&flip_at)
                    && left
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| l.checked_sub(1))
                        .is_ok()
                {
                    bytes[(flip_at - offset) as usize] ^= 0x20;
                    flipped.fetch_add(1, Ordering::SeqCst);
                }
            },
        );
        if client_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    requests.abort();
}
