//! A `brisk serve` killed with SIGKILL in the middle of an upload, then restarted on the same
//! directory, shows no partial object: the key is absent (or keeps its previous version), and the
//! temp file of the interrupted body is swept.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use support::ServeProcess;

fn host_port(url: &str) -> &str {
    url.trim_start_matches("http://")
}

/// Sends one request over a new connection and returns the status and body.
fn request(url: &str, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(host_port(url)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        host_port(url),
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out);
    let status = text[9..12].parse().unwrap();
    let start = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (status, out[start..].to_vec())
}

#[test]
fn sigkill_during_an_upload_leaves_no_partial_object() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let mut server = ServeProcess::start(&root, &["--anonymous"]);
    assert_eq!(request(&server.url, "PUT", "/crash-bucket", b"").0, 200);
    assert_eq!(
        request(&server.url, "PUT", "/crash-bucket/old", b"old version").0,
        200
    );

    // Two uploads cut halfway: a new key, and an overwrite of an existing one.
    let total = 8u64 << 20;
    let mut streams = Vec::new();
    for key in ["new", "old"] {
        let mut s = TcpStream::connect(host_port(&server.url)).unwrap();
        write!(
            s,
            "PUT /crash-bucket/{key} HTTP/1.1\r\nHost: x\r\nContent-Length: {total}\r\n\r\n"
        )
        .unwrap();
        s.write_all(&vec![b'x'; (total / 2) as usize]).unwrap();
        s.flush().unwrap();
        streams.push(s);
    }
    // Let the server write what it received into the temp files, then kill it.
    std::thread::sleep(Duration::from_millis(500));
    let tmp_before = std::fs::read_dir(root.join("tmp")).unwrap().count();
    assert_eq!(
        tmp_before, 2,
        "both interrupted bodies are in tmp/ before the kill"
    );
    server.kill();
    drop(streams);

    let server = ServeProcess::start(&root, &["--anonymous"]);
    let (status, body) = request(&server.url, "GET", "/crash-bucket/new", b"");
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
    let (status, body) = request(&server.url, "GET", "/crash-bucket/old", b"");
    assert_eq!((status, body.as_slice()), (200, b"old version".as_slice()));
    assert_eq!(
        std::fs::read_dir(root.join("tmp")).unwrap().count(),
        0,
        "the restart swept the partial bodies"
    );
}
