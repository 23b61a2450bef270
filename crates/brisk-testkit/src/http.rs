//! The tests' one raw HTTP/1.1 client: requests written by hand on a plain socket, with nothing
//! between the test and the bytes, for tests that must see exactly what a server answered (or that
//! it did not), send what no client library would (a damaged body, a presigned URL used as any tool
//! holding it would), or count the server's allocations without a client's beside them.
//!
//! - [`request`] and [`try_request`]: one request on a connection of its own
//!   (`Connection: close`), the whole answer read to the end.
//! - [`Connection`]: a keep-alive connection that reuses its buffers, so that an allocation count
//!   sees the server, not the client; bodies are streamed from a repeated pattern and to a sink.
//!
//! Blocking (std only): a test on a tokio runtime may call it as long as the server does not run on
//! that same runtime's thread.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long a read waits for the server before the request fails.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A whole answer to a [`request`].
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The response head as text (status line and headers, up to the blank line).
    pub head: String,
    /// The body, as the server sent it (read until it closed the connection).
    pub body: Vec<u8>,
}

impl Response {
    /// The value of the first header named `name` (any case), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_in(&self.head, name)
    }
}

/// The host and port of `url` (`http://host:port/target`) and its target (`/` if it has none).
fn split_url(url: &str) -> (&str, &str) {
    let rest = url
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("{url}: not an http:// URL"));
    match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    }
}

/// Sends `method` to `url` (`http://host:port/path?query`, as a presigned URL is) with `headers`
/// and `body` (`Content-Length` is always sent) on a new connection, and reads the answer to the
/// end.
///
/// # Panics
///
/// If the server does not answer.
pub fn request(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    try_request(method, url, headers, body)
        .unwrap_or_else(|| panic!("{method} {url}: the server did not answer"))
}

/// [`request`], or `None` if the connection failed or closed before a whole response head (the
/// server was killed mid-request). A server that answers before reading the whole body (a refusal)
/// may close without reading the rest: its answer is kept.
pub fn try_request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Option<Response> {
    let (authority, target) = split_url(url);
    let mut stream = TcpStream::connect(authority).ok()?;
    stream.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    let _ = stream.write_all(body);
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    let start = out.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let status = std::str::from_utf8(out.get(9..12)?).ok()?.parse().ok()?;
    Some(Response {
        status,
        head: String::from_utf8_lossy(&out[..start]).into_owned(),
        body: out[start..].to_vec(),
    })
}

/// The text of the first `<tag>` element in `xml`.
pub fn xml_value<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    Some(&xml[start..start + xml[start..].find("</")?])
}

/// The value of the first header named `name` (any case) in a response head, trimmed.
fn header_in<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A keep-alive connection whose buffers are allocated once, so that allocation counts see the
/// server, not the client.
#[derive(Debug)]
pub struct Connection {
    stream: TcpStream,
    head: Vec<u8>,
    buf: Vec<u8>,
}

/// The head of a response read by a [`Connection`] (its body went to the sink).
#[derive(Debug, Clone)]
pub struct ResponseHead {
    /// The status code.
    pub status: u16,
    /// `Content-Length` (0 when absent).
    pub content_length: u64,
    /// The response head as text.
    pub head: String,
}

impl Connection {
    /// Connects to `addr`, with a read timeout of a minute and `TCP_NODELAY`.
    ///
    /// # Panics
    ///
    /// If the connection fails.
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
    ///
    /// # Panics
    ///
    /// If the connection fails.
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
    ///
    /// # Panics
    ///
    /// If the connection fails.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Reads one response to `method`; the body is passed to `sink` in pieces.
    ///
    /// # Panics
    ///
    /// If the connection fails or closes before the response's end.
    pub fn receive(&mut self, method: &str, mut sink: impl FnMut(&[u8])) -> ResponseHead {
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
        let content_length = header_in(&head, "content-length")
            .map(|v| v.parse::<u64>().unwrap())
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
        ResponseHead {
            status,
            content_length,
            head,
        }
    }

    /// Sends a request with `body` and reads its response, the body collected.
    ///
    /// # Panics
    ///
    /// If the connection fails.
    pub fn request(&mut self, method: &str, path: &str, body: &[u8]) -> (ResponseHead, Vec<u8>) {
        self.send(method, path, body.len() as u64, body);
        let mut out = Vec::new();
        let r = self.receive(method, |d| out.extend_from_slice(d));
        (r, out)
    }
}
