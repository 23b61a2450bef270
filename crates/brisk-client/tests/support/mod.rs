//! The S3 servers brisk-client's tests run against, each started once per test binary at first use,
//! and helpers for clients of them.
//!
//! The conformance suite (`it/suite`) runs against MinIO (an S3 server nobody on this project wrote,
//! so the client is checked against an independent implementation), against `brisk serve`, which
//! runs in the test process through the brisk-server library (no prebuilt binary needed), and
//! against Azurite. The launchers are brisk-testkit's; MinIO comes from `BRISK_MINIO` or
//! `<workspace>/.tools/bin/minio`.

#![allow(dead_code)]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use brisk_client::{AzureSettings, Client, ClientBuilder, RetryPolicy};
use brisk_testkit::azurite::{self, AzuriteProcess};
use brisk_testkit::minio::MinioProcess;
use brisk_testkit::serve::InProcessServe;
use brisk_wire::sigv4::Credentials;

pub use brisk_testkit::{ACCESS_KEY, SECRET_KEY};

/// A running server.
#[derive(Debug)]
pub struct TestServer {
    /// `minio` or `brisk`.
    pub name: &'static str,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The port.
    pub port: u16,
}

/// MinIO, started at first use; a watchdog ends it when the test process exits.
pub fn minio() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let minio = MinioProcess::until_exit().unwrap_or_else(|e| panic!("starting MinIO: {e}"));
        TestServer {
            name: "minio",
            endpoint: minio.url.clone(),
            port: minio.port,
        }
    })
}

/// `brisk serve` in this process with the test user, started at first use.
pub fn in_process_brisk() -> &'static InProcessServe {
    static SERVER: OnceLock<InProcessServe> = OnceLock::new();
    SERVER.get_or_init(|| InProcessServe::start(false))
}

/// [`in_process_brisk`] as a [`TestServer`].
pub fn brisk() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let serve = in_process_brisk();
        TestServer {
            name: "brisk",
            endpoint: serve.url.clone(),
            port: serve.port,
        }
    })
}

/// A second `brisk serve` in this process, started with `--anonymous` (no credentials, unsigned
/// requests accepted) at first use, whatever server the rest of the binary tests.
pub fn anonymous_brisk_server() -> &'static TestServer {
    static SERVER: OnceLock<(InProcessServe, TestServer)> = OnceLock::new();
    &SERVER
        .get_or_init(|| {
            let serve = InProcessServe::start(true);
            let server = TestServer {
                name: "brisk",
                endpoint: serve.url.clone(),
                port: serve.port,
            };
            (serve, server)
        })
        .1
}

/// The server of the tests outside the suite (which runs against every backend, see
/// `it/suite`): `BRISK_TEST_SERVER`'s (`minio` or `brisk`), else MinIO.
pub fn server() -> &'static TestServer {
    match std::env::var("BRISK_TEST_SERVER").ok().as_deref() {
        Some("minio") | None => minio(),
        Some("brisk") => brisk(),
        Some(other) => panic!("BRISK_TEST_SERVER={other}: unknown server (known: minio, brisk)"),
    }
}

/// A builder for a client of `server`, with fast retries.
pub fn builder_of(server: &TestServer) -> ClientBuilder {
    Client::builder()
        .endpoint(server.endpoint.clone())
        .region(brisk_testkit::REGION)
        .credentials(Credentials::new(ACCESS_KEY, SECRET_KEY))
        .read_timeout(Duration::from_secs(20))
        .retry(RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
        })
}

/// A builder for a client of the test server, with fast retries.
pub fn builder() -> ClientBuilder {
    builder_of(server())
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

/// Azurite (Microsoft's Azure Storage emulator), started at first use; a watchdog ends it when the
/// test process exits.
pub fn azurite() -> &'static AzuriteProcess {
    static SERVER: OnceLock<&'static AzuriteProcess> = OnceLock::new();
    SERVER.get_or_init(|| {
        AzuriteProcess::until_exit().unwrap_or_else(|e| panic!("starting Azurite: {e}"))
    })
}

/// A builder for an Azure client of Azurite's development account (Shared Key), with fast retries.
pub fn azure_builder() -> ClientBuilder {
    Client::builder()
        .endpoint(azurite().url.clone())
        .azure(
            AzureSettings::new()
                .account(azurite::ACCOUNT)
                .key(azurite::ACCOUNT_KEY),
        )
        .read_timeout(Duration::from_secs(20))
        .retry(RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
        })
}

/// An Azure client of Azurite.
pub fn azure_client() -> Client {
    azure_builder().build().expect("Azure test client")
}

/// Deterministic, non-repeating test bytes.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect()
}

/// A file `source.bin` in `dir` holding `pattern(len, seed)`; returns its path and its bytes.
pub fn pattern_file(dir: &std::path::Path, len: usize, seed: u8) -> (std::path::PathBuf, Vec<u8>) {
    let source = dir.join("source.bin");
    let body = pattern(len, seed);
    std::fs::write(&source, &body).unwrap();
    (source, body)
}

/// A client of Azurite through `proxy` (a fault proxy in front of it).
pub fn azure_client_through(proxy_endpoint: &str) -> Client {
    azure_builder()
        .endpoint(format!(
            "{proxy_endpoint}/{}",
            brisk_testkit::azurite::ACCOUNT
        ))
        .build()
        .expect("Azure test client")
}

/// Runs `future` with a time limit, so a hung server or client fails the test instead of hanging it.
pub async fn bounded<F: std::future::Future>(limit: Duration, future: F) -> F::Output {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("test step took longer than {limit:?}"))
}
