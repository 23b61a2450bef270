//! What the launchers share: free ports, the workspace's root, waiting for a server to answer, and
//! a watchdog that ends a server (and removes its files) when the test process exits.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to start answering: 60 s (MinIO needs 1 to 3 s; a loaded shared
/// machine much more).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// The workspace's root directory (where `.tools/` and `target/` are).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The port of a `http://host:port` or `https://host:port/` URL.
pub fn port_of(url: &str) -> u16 {
    url.trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {url:?}"))
}

/// Starts a watchdog (a small shell loop) that, once this process has exited, kills `pid` (when
/// given) and removes `paths`. Statics are never dropped, so a server kept for a whole test binary
/// cannot be ended by a `Drop` impl; the watchdog ends it however the test process ends.
pub fn clean_up_at_exit(pid: Option<u32>, paths: &[&Path]) {
    let script = match pid {
        Some(pid) => format!(
            "while kill -0 {parent} 2>/dev/null && kill -0 {pid} 2>/dev/null; do sleep 0.5; done\n\
             kill {pid} 2>/dev/null; sleep 0.5; kill -9 {pid} 2>/dev/null; rm -rf \"$@\"",
            parent = std::process::id(),
        ),
        None => format!(
            "while kill -0 {parent} 2>/dev/null; do sleep 0.5; done; rm -rf \"$@\"",
            parent = std::process::id(),
        ),
    };
    // Never waited for: the watchdog's job is to outlive this process.
    #[allow(clippy::zombie_processes)]
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("watchdog")
        .args(paths)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the watchdog shell");
}

/// Polls `GET path` on `127.0.0.1:port` until it answers 200, for at most [`STARTUP_TIMEOUT`].
pub fn wait_until_live(port: u16, path: &str) -> Result<(), String> {
    wait_for(port, path, b"HTTP/1.1 200")
}

/// Polls `GET path` on `127.0.0.1:port` until it answers with any HTTP status, for at most
/// [`STARTUP_TIMEOUT`]: for servers with no health endpoint, whose every anonymous answer is an error.
pub fn wait_until_answering(port: u16, path: &str) -> Result<(), String> {
    wait_for(port, path, b"HTTP/1.1 ")
}

fn wait_for(port: u16, path: &str, status_line: &[u8]) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let mut last = String::from("no attempt");
    while Instant::now() < deadline {
        match probe(port, path, status_line) {
            Ok(true) => return Ok(()),
            Ok(false) => last = "not ready".into(),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "no answer on port {port} within {STARTUP_TIMEOUT:?} ({last})"
    ))
}

fn probe(port: u16, path: &str, status_line: &[u8]) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    Ok(head.starts_with(status_line))
}
