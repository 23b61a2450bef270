//! Plain HTTP/1.1 requests to an anonymous `brisk serve`, one connection each, with nothing between
//! the test and the bytes: for tests that kill or starve the server and need to see exactly what it
//! answered (or that it did not).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn host_port(url: &str) -> &str {
    url.trim_start_matches("http://")
}

/// Sends one request over a new connection and returns the status and body; panics if the server
/// does not answer.
pub fn request(url: &str, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    try_request(url, method, path, body)
        .unwrap_or_else(|| panic!("{method} {path}: the server did not answer"))
}

/// [`request`], or `None` if the connection failed (the server was killed mid-request).
pub fn try_request(url: &str, method: &str, path: &str, body: &[u8]) -> Option<(u16, Vec<u8>)> {
    try_exchange(url, method, path, body).map(|(status, _, body)| (status, body))
}

/// [`try_request`], with the response head as text as well.
pub fn try_exchange(
    url: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> Option<(u16, String, Vec<u8>)> {
    let mut s = TcpStream::connect(host_port(url)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        host_port(url),
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    // A server that refuses a body early may close before reading all of it: keep its answer.
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let start = out.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let status = std::str::from_utf8(out.get(9..12)?).ok()?.parse().ok()?;
    let head = String::from_utf8_lossy(&out[..start]).into_owned();
    Some((status, head, out[start..].to_vec()))
}

/// The text of the first `<tag>` element in `xml`.
pub fn xml_value<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    Some(&xml[start..start + xml[start..].find("</")?])
}
