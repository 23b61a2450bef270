//! A small in-process server of ranged GETs of one object, with a scripted way of ending
//! connections, for the batch reader's fault tests: it answers pipelined requests in order, and
//! can close a connection after a number of responses while more requests are queued on it, or
//! answer every request with `Connection: close` as a server without keep-alive does.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use brisk_wire::http::{HttpConnection, RequestHead, ResponseHead};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// How the server ends connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Keeps connections as long as the client does.
    KeepAlive,
    /// Closes each connection after this many responses, whatever is queued on it.
    CloseAfter(usize),
    /// Answers each request with `Connection: close` and closes.
    NoKeepAlive,
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct Log {
    /// Connections accepted.
    pub connections: AtomicUsize,
    /// Requests read (every attempt).
    pub requests: AtomicU64,
    /// Requests whose head was already in the server's read buffer when the previous response
    /// on the connection had been written: requests the client pipelined.
    pub pipelined: AtomicU64,
    /// `Range` headers in the order they came.
    pub ranges: Mutex<Vec<String>>,
}

/// Starts the server for `object`; returns its endpoint and log.
pub async fn start(object: Arc<Vec<u8>>, ending: Ending) -> (String, Arc<Log>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let log = Arc::new(Log::default());
    let server_log = Arc::clone(&log);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            server_log.connections.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(serve(
                stream,
                Arc::clone(&object),
                ending,
                Arc::clone(&server_log),
            ));
        }
    });
    (endpoint, log)
}

async fn serve(stream: tokio::net::TcpStream, object: Arc<Vec<u8>>, ending: Ending, log: Arc<Log>) {
    let mut conn = HttpConnection::new(stream);
    let mut head = RequestHead::new();
    let mut answered = 0usize;
    let mut after_response = false;
    loop {
        if after_response && !conn.buffered().is_empty() {
            log.pipelined.fetch_add(1, Ordering::Relaxed);
        }
        match conn.read_request_head(&mut head).await {
            Ok(true) => {}
            _ => return,
        }
        log.requests.fetch_add(1, Ordering::Relaxed);
        let range = head.headers().get_str("range").unwrap_or("").to_owned();
        log.ranges.lock().unwrap().push(range.clone());
        let (status, body, content_range) = answer(&object, &range);
        let mut response = ResponseHead::with_status(status).unwrap();
        if let Some(cr) = content_range {
            response.headers_mut().append("content-range", cr).unwrap();
        }
        if ending == Ending::NoKeepAlive {
            response
                .headers_mut()
                .append("connection", "close")
                .unwrap();
        }
        response.headers_mut().set_content_length(body.len() as u64);
        if conn.write_response(&response, &body).await.is_err() {
            return;
        }
        answered += 1;
        after_response = true;
        let close = match ending {
            Ending::KeepAlive => false,
            Ending::CloseAfter(n) => answered >= n,
            Ending::NoKeepAlive => true,
        };
        if close {
            // A lingering close, as nginx and Go's server do: stop sending, then read what the
            // client still sends until it closes, so that the requests queued behind do not make
            // the kernel answer with a reset that would destroy the responses not yet received.
            let mut stream = conn.into_inner();
            let _ = stream.shutdown().await;
            let mut sink = [0u8; 4096];
            let linger = async {
                while let Ok(n) = tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), linger).await;
            return;
        }
    }
}

/// The response to `range` (`bytes=a-b`) of `object`.
fn answer(object: &[u8], range: &str) -> (u16, Vec<u8>, Option<String>) {
    let parsed = range
        .strip_prefix("bytes=")
        .and_then(|r| r.split_once('-'))
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)));
    let len = object.len() as u64;
    match parsed {
        Some((first, last)) if first < len && first <= last => {
            let last = last.min(len - 1);
            (
                206,
                object[first as usize..=last as usize].to_vec(),
                Some(format!("bytes {first}-{last}/{len}")),
            )
        }
        Some(_) => (
            416,
            b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InvalidRange</Code><Message>The requested range is not satisfiable</Message></Error>".to_vec(),
            Some(format!("bytes */{len}")),
        ),
        None => (200, object.to_vec(), None),
    }
}
