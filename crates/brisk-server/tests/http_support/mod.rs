//! An in-process anonymous server on 127.0.0.1:0 and a minimal blocking HTTP/1.1 client that reuses
//! its buffers (so allocation counts see the server, not the client).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use brisk_server::{RunningServer, Server, ServerConfig};

/// Starts an anonymous server without fsync in `root` on a multi-thread runtime.
pub fn start(runtime: &tokio::runtime::Runtime, root: &std::path::Path) -> RunningServer {
    start_with(runtime, ServerConfig::new(root, None))
}

/// Starts a server with `config`, listening on 127.0.0.1:0 without fsync.
pub fn start_with(runtime: &tokio::runtime::Runtime, mut config: ServerConfig) -> RunningServer {
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.fsync = false;
    runtime.block_on(Server::bind(config)).unwrap()
}

/// Starts an anonymous server with fsync on (the default), so large bodies take the `O_DIRECT` path.
pub fn start_durable(runtime: &tokio::runtime::Runtime, root: &std::path::Path) -> RunningServer {
    let mut config = ServerConfig::new(root, None);
    config.listen = "127.0.0.1:0".parse().unwrap();
    runtime.block_on(Server::bind(config)).unwrap()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A keep-alive connection.
pub struct Client {
    stream: TcpStream,
    head: Vec<u8>,
    buf: Vec<u8>,
}

/// Status and body length of a response (the body is read and discarded, or kept when asked).
pub struct Response {
    pub status: u16,
    pub content_length: u64,
    pub head: String,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            head: Vec::with_capacity(4096),
            buf: vec![0; 256 * 1024],
        }
    }

    /// Sends a request whose body is `len` bytes produced by repeating `pattern`, written from one
    /// preallocated slice.
    pub fn send(&mut self, method: &str, path: &str, len: u64, pattern: &[u8]) {
        self.head.clear();
        write!(
            self.head,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len}\r\n\r\n"
        )
        .unwrap();
        self.stream.write_all(&self.head).unwrap();
        let mut left = len;
        while left > 0 {
            let n = left.min(pattern.len() as u64) as usize;
            self.stream.write_all(&pattern[..n]).unwrap();
            left -= n as u64;
        }
    }

    /// Sends bytes as they are (a hand-built request).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Reads one response; the body is passed to `sink` in pieces.
    pub fn receive(&mut self, method: &str, mut sink: impl FnMut(&[u8])) -> Response {
        let mut filled = 0;
        let head_end = loop {
            let n = self.stream.read(&mut self.buf[filled..]).unwrap();
            assert!(n > 0, "connection closed before a response head");
            filled += n;
            if let Some(p) = self.buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        let status = head[9..12].parse().unwrap();
        let content_length = head
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<u64>().unwrap())
            })
            .unwrap_or(0);
        let body_len = if method == "HEAD" || status == 304 || status == 204 {
            0
        } else {
            content_length
        };
        let mut have = (filled - head_end) as u64;
        sink(&self.buf[head_end..filled]);
        while have < body_len {
            let want = ((body_len - have) as usize).min(self.buf.len());
            let n = self.stream.read(&mut self.buf[..want]).unwrap();
            assert!(n > 0, "connection closed inside a body");
            sink(&self.buf[..n]);
            have += n as u64;
        }
        Response {
            status,
            content_length,
            head,
        }
    }

    pub fn request(&mut self, method: &str, path: &str, body: &[u8]) -> (Response, Vec<u8>) {
        self.send(method, path, body.len() as u64, body);
        let mut out = Vec::new();
        let r = self.receive(method, |d| out.extend_from_slice(d));
        (r, out)
    }
}
