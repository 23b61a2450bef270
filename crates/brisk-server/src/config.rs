//! How a server is set up: where it stores, where it listens, who may call it, and its bounds.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Region the server claims by default (`GetBucketLocation`, the SigV4 credential scope): the one the
/// AWS SDKs and CLI use when none is configured.
pub const DEFAULT_REGION: &str = "us-east-1";

/// Base domain of virtual-hosted-style requests by default: `bucket.localhost:9000` names `bucket`.
/// `*.localhost` resolves to the loopback address on most systems (RFC 6761), so it works without DNS
/// set-up.
pub const DEFAULT_BASE_DOMAIN: &str = "localhost";

/// Default listen address: loopback only, on the port MinIO and most S3 test set-ups use.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9000";

/// Default read buffer per connection: 256 KiB, chosen by the sweep in `BENCHMARKS-log.md` ("Server").
/// A PUT's body passes through it into the file, so it is also the size of each `recv` and each file
/// write. Receiving a 2 GiB unsigned PUT (fsync off, medians of 3) cost the server 2.19 / 1.80 / 1.04 /
/// 0.83 / 0.60 CPU s per GiB with MD5 ETags off at 4 / 16 / 64 / 256 KiB / 1 MiB (fewer system calls
/// per byte), and 5.1 / 3.7 / 3.2 / 3.1 / 3.0 with MD5 on (MD5 itself is ~2 s/GiB); a second run of
/// 5 gave 1.12 / 0.76 / 0.64 for 64 KiB / 256 KiB / 1 MiB. 256 KiB takes a fifth to a third off
/// 64 KiB; 1 MiB saves another ~15 % but costs 1 MiB per open connection, which would cut the
/// connections that fit in the same 64 MiB to 64.
pub const DEFAULT_READ_BUFFER_SIZE: usize = 256 * 1024;

/// Connections served at once by default: 256. Each costs its read buffer
/// ([`DEFAULT_READ_BUFFER_SIZE`], 256 KiB) plus a few KiB of heads and a task, so 256 connections hold
/// at most about 66 MiB — the same bound 1,024 connections of 64 KiB had — and that is still several
/// times what the SDKs open against one endpoint (10 to 64). Further connections wait in the listen
/// backlog.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// How long a connection may sit between requests (and how long a request head may take) before it is
/// closed: 30 s, the HTTP layer's head timeout. The AWS SDKs keep idle connections for less.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a body read or a response write may make no progress before the request fails (408 on
/// reads): 30 s. Slow but moving transfers are never cut; a stalled peer is.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The slowest average rate a request body may arrive at once [`DEFAULT_REQUEST_TIMEOUT`] has passed
/// since its head: 1 KiB/s. Without it a client sending a byte every 29 s keeps a connection and its
/// 256 KiB read buffer as long as it likes (each read is within the request timeout). 1 KiB/s is a
/// hundred-thousandth of what the loopback moves and about what a 10 kbit/s link does; a body that
/// arrives that slowly is an attack or a dead link. `mod_reqtimeout`'s default is 500 bytes/s.
pub const DEFAULT_MIN_BODY_RATE: u64 = 1024;

/// How long `shutdown` waits for requests in flight before it drops their connections.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// An access key pair the server accepts.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessKey {
    /// The access key id (`AKIA…` in AWS; any string here).
    pub access_key_id: String,
    /// The secret.
    pub secret_access_key: String,
}

impl std::fmt::Debug for AccessKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessKey")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .finish()
    }
}

/// The server's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once ([`DEFAULT_MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Idle time between requests and time to receive a head ([`DEFAULT_IDLE_TIMEOUT`]).
    pub idle_timeout: Duration,
    /// Longest stall of a body read or response write ([`DEFAULT_REQUEST_TIMEOUT`]).
    pub request_timeout: Duration,
    /// How long shutdown waits for requests in flight ([`DEFAULT_SHUTDOWN_GRACE`]).
    pub shutdown_grace: Duration,
    /// Slowest average body rate in bytes per second, enforced from `request_timeout` after the
    /// head on ([`DEFAULT_MIN_BODY_RATE`]); 0 turns it off.
    pub min_body_rate: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            min_body_rate: DEFAULT_MIN_BODY_RATE,
        }
    }
}

/// Everything [`Server::bind`](crate::Server::bind) needs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The directory that holds the store (created if missing).
    pub root: PathBuf,
    /// Address to listen on; port 0 picks a free port ([`RunningServer::local_addr`](crate::RunningServer::local_addr)).
    pub listen: SocketAddr,
    /// The key pair requests must be signed with (ignored when `anonymous`).
    pub credentials: Option<AccessKey>,
    /// Region in the credential scope and in `GetBucketLocation` ([`DEFAULT_REGION`]).
    pub region: String,
    /// Accept requests without checking signatures (local development only).
    pub anonymous: bool,
    /// Base domain for virtual-hosted-style addressing ([`DEFAULT_BASE_DOMAIN`]).
    pub base_domain: String,
    /// Read buffer per connection ([`DEFAULT_READ_BUFFER_SIZE`]).
    pub read_buffer_size: usize,
    /// Sync bodies and metadata before a write is acknowledged (on by default; off only for
    /// benchmarks and throwaway data, see `docs/storage.md`).
    pub fsync: bool,
    /// Compute MD5 ETags as S3 does (on by default). Off, the ETag is the CRC-64/NVME of the body,
    /// about 10x cheaper than MD5; clients that compare ETags with their own MD5 then disagree.
    pub md5_etag: bool,
    /// Smallest part but the last of a multipart upload (S3: 5 MiB; tests lower it).
    pub min_part_size: u64,
    /// Bounds on connections and waits.
    pub limits: ServerLimits,
    /// Serve HTTPS with this certificate and key instead of plain HTTP.
    pub tls: Option<crate::tls::TlsFiles>,
    /// The access log on standard error (off for an embedded server unless set; `brisk serve`
    /// writes plain lines by default).
    pub log_format: crate::access_log::LogFormat,
}

impl ServerConfig {
    /// A configuration with every default, storing in `root` and requiring `credentials`.
    pub fn new(root: impl Into<PathBuf>, credentials: Option<AccessKey>) -> Self {
        Self {
            root: root.into(),
            listen: DEFAULT_LISTEN.parse().expect("a valid socket address"),
            anonymous: credentials.is_none(),
            credentials,
            region: DEFAULT_REGION.to_owned(),
            base_domain: DEFAULT_BASE_DOMAIN.to_owned(),
            read_buffer_size: DEFAULT_READ_BUFFER_SIZE,
            fsync: true,
            md5_etag: true,
            min_part_size: crate::store::MIN_PART_SIZE,
            limits: ServerLimits::default(),
            tls: None,
            log_format: crate::access_log::LogFormat::Off,
        }
    }
}
