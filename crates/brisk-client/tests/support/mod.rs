//! The S3 server the integration tests run against, started once per test binary.
//!
//! The suite is one conformance suite parameterised by a [`ServerLauncher`]: today MinIO (an S3 server
//! nobody on this project wrote, so the client is checked against an independent implementation), and
//! `brisk serve` with `BRISK_TEST_SERVER=brisk`.
//!
//! The server runs under a small shell watchdog that kills it (and removes its data directory) when
//! the test process exits, however it exits: statics are never dropped, so a `Drop` impl could not.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use brisk_client::{Client, ClientBuilder, RetryPolicy};

pub mod fault_proxy;
use brisk_wire::sigv4::Credentials;

/// Access key of the test server's root user.
pub const ACCESS_KEY: &str = "brisktestroot";
/// Secret key of the test server's root user.
pub const SECRET_KEY: &str = "brisk-test-secret-key";

/// How long a server may take to start answering: 60 s (MinIO needs 1 to 3 s; a loaded shared
/// machine much more).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// A running server.
#[derive(Debug)]
pub struct TestServer {
    /// Which launcher started it.
    pub name: &'static str,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The port.
    pub port: u16,
}

/// Starts an S3 server on a free loopback port.
pub trait ServerLauncher {
    /// Name used in `BRISK_TEST_SERVER`.
    fn name(&self) -> &'static str;
    /// Starts the server (watched, so it dies with the test process) and waits until it answers.
    fn launch(&self) -> Result<TestServer, String>;
}

/// MinIO, from `BRISK_MINIO` or `<workspace>/.tools/bin/minio` (`scripts/install-minio`).
pub struct Minio;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

impl ServerLauncher for Minio {
    fn name(&self) -> &'static str {
        "minio"
    }

    fn launch(&self) -> Result<TestServer, String> {
        let binary = std::env::var_os("BRISK_MINIO")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join(".tools/bin/minio"));
        if !binary.is_file() {
            return Err(format!(
                "MinIO not found at {}: run scripts/install-minio (or set BRISK_MINIO to a minio binary)",
                binary.display()
            ));
        }
        let port = free_port();
        let data = tempfile::Builder::new()
            .prefix("brisk-client-minio-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?
            .keep();
        let log = data.with_extension("log");
        let script = format!(
            "\"$0\" server --quiet --address 127.0.0.1:{port} --console-address 127.0.0.1:0 \"$1\" >\"$2\" 2>&1 &\n\
             server=$!\n\
             while kill -0 {parent} 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 0.5; done\n\
             kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf \"$1\" \"$2\"",
            parent = std::process::id(),
        );
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(&binary)
            .arg(&data)
            .arg(&log)
            .env("MINIO_ROOT_USER", ACCESS_KEY)
            .env("MINIO_ROOT_PASSWORD", SECRET_KEY)
            // A configured region makes MinIO refuse requests signed for another one, as S3 does.
            .env("MINIO_SITE_REGION", "us-east-1")
            // Virtual-hosted requests (`bucket.localhost`) are recognised under this domain.
            .env("MINIO_DOMAIN", "localhost")
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        wait_until_live(port, "/minio/health/cluster").map_err(|e| {
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            format!("MinIO did not start: {e}\n{log_text}")
        })?;
        Ok(TestServer {
            name: "minio",
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
        })
    }
}

/// `brisk serve`, from `BRISK_BIN` or `<workspace>/target/debug/brisk` (`cargo build -p brisk-cli`).
/// brisk-client can not depend on brisk-cli (the CLI sits above the client), so the binary is found
/// rather than built here. `anonymous` starts it with `--anonymous` (no credentials, unsigned
/// requests accepted) instead of the test key pair.
pub struct BriskServe {
    pub anonymous: bool,
}

impl ServerLauncher for BriskServe {
    fn name(&self) -> &'static str {
        "brisk"
    }

    fn launch(&self) -> Result<TestServer, String> {
        let binary = std::env::var_os("BRISK_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target/debug/brisk"));
        if !binary.is_file() {
            return Err(format!(
                "brisk binary not found at {}: run `cargo build -p brisk-cli` (or set BRISK_BIN)",
                binary.display()
            ));
        }
        let root = tempfile::Builder::new()
            .prefix("brisk-client-serve-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?
            .keep();
        let out = root.with_extension("out");
        let auth = if self.anonymous {
            "--anonymous".to_owned()
        } else {
            format!("--access-key {ACCESS_KEY} --secret-key {SECRET_KEY}")
        };
        let script = format!(
            "\"$0\" serve --listen 127.0.0.1:0 --root \"$1\" {auth} \
               --region us-east-1 >\"$2\" 2>&1 &\n\
             server=$!\n\
             while kill -0 {parent} 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 0.5; done\n\
             kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf \"$1\" \"$2\"",
            parent = std::process::id(),
        );
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(&binary)
            .arg(&root)
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        // The first line of its output is its URL.
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while Instant::now() < deadline {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if let Some(line) = text.lines().next().filter(|_| text.contains('\n')) {
                let endpoint = line.trim().to_owned();
                let port = endpoint
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.trim_end_matches('/').parse().ok())
                    .ok_or_else(|| format!("brisk serve printed {line:?}, not its URL"))?;
                return Ok(TestServer {
                    name: "brisk",
                    endpoint: endpoint.trim_end_matches('/').to_owned(),
                    port,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "brisk serve printed no URL within {STARTUP_TIMEOUT:?}"
        ))
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// Polls `GET path` until it answers 200.
fn wait_until_live(port: u16, path: &str) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let mut last = String::from("no attempt");
    while Instant::now() < deadline {
        match probe(port, path) {
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

fn probe(port: u16, path: &str) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    Ok(head.starts_with(b"HTTP/1.1 200"))
}

/// The suffix of test binaries that run against `brisk serve` by default (the test binary is named
/// after its file, e.g. `conformance_brisk_serve-<hash>`), so that one `cargo test` checks the client
/// against both servers.
pub const BRISK_SERVE_BINARY_SUFFIX: &str = "_brisk_serve";

/// The launcher `BRISK_TEST_SERVER` names; without it, `brisk` for test binaries whose name ends in
/// [`BRISK_SERVE_BINARY_SUFFIX`] and `minio` for the others.
fn launcher() -> Box<dyn ServerLauncher> {
    let own_choice = || {
        let exe = std::env::current_exe().ok()?;
        let stem = exe.file_stem()?.to_str()?;
        let name = stem.rsplit_once('-').map_or(stem, |(name, _hash)| name);
        name.ends_with(BRISK_SERVE_BINARY_SUFFIX).then_some("brisk")
    };
    let chosen = std::env::var("BRISK_TEST_SERVER").ok();
    match chosen.as_deref().or_else(own_choice) {
        Some("minio") | None => Box::new(Minio),
        Some("brisk") => Box::new(BriskServe { anonymous: false }),
        Some(other) => panic!("BRISK_TEST_SERVER={other}: unknown server (known: minio, brisk)"),
    }
}

/// The server of this test binary, started at first use.
pub fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let launcher = launcher();
        launcher
            .launch()
            .unwrap_or_else(|e| panic!("starting the {} test server: {e}", launcher.name()))
    })
}

/// A second `brisk serve`, started with `--anonymous` at first use, whatever server the rest of
/// the binary tests.
pub fn anonymous_brisk_server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        BriskServe { anonymous: true }
            .launch()
            .unwrap_or_else(|e| panic!("starting an anonymous brisk serve: {e}"))
    })
}

/// A builder for a client of the test server, with fast retries.
pub fn builder() -> ClientBuilder {
    Client::builder()
        .endpoint(server().endpoint.clone())
        .region("us-east-1")
        .credentials(Credentials::new(ACCESS_KEY, SECRET_KEY))
        .read_timeout(Duration::from_secs(20))
        .retry(RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
        })
}

/// A client of the test server.
pub fn client() -> Client {
    builder().build().expect("test client")
}

/// A bucket name no other test uses, created on the server.
pub async fn new_bucket(client: &Client, purpose: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = format!("{purpose}-{}-{n}", std::process::id());
    client.create_bucket(&name).await.expect("create bucket");
    name
}

/// Deterministic, non-repeating test bytes.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect()
}

/// Runs `future` with a time limit, so a hung server or client fails the test instead of hanging it.
pub async fn bounded<F: std::future::Future>(limit: Duration, future: F) -> F::Output {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("test step took longer than {limit:?}"))
}
