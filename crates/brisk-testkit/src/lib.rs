//! What the tests of brisk's crates share, in one dev-only crate (never published, never a normal
//! dependency):
//!
//! - [`alloc`]: the counting global allocator of the allocation tests (the only `unsafe` code of the
//!   workspace's tests), with per-thread and process-wide counting windows.
//! - [`serve`]: `brisk serve` for a test, as a child process (the real binary: the CLI's tests, which
//!   test that binary) or, with the `servers` feature, in the test's own process through the
//!   brisk-server library (brisk-client's tests, so `cargo test -p brisk-client` needs no prebuilt
//!   binary).
//! - [`minio`]: MinIO, the independent S3 server the client and the CLI are also checked against.
//! - [`minio_cluster`]: MinIO in distributed mode (4 nodes, 2 drives each) in a network namespace
//!   of its own, reached through loopback forwarders, whose nodes a test can kill and restart.
//! - [`azurite`]: Azurite, Microsoft's Azure Storage emulator, for the Azure dialect.
//! - [`http`]: the tests' one raw HTTP/1.1 client (hand-written requests on a plain socket: one per
//!   connection, or a keep-alive connection that reuses its buffers for allocation counts).
//! - [`fault_proxy`]: a TCP proxy between a client and a real server that flips bytes, resets
//!   connections, stalls bodies or answers `503 SlowDown`.
//! - `fake_s3` (feature `servers`): a scripted S3 stand-in that answers each request as a test says
//!   (cut bodies, silence, early refusals, ranges, connections closed after a number of answers) and
//!   records what the client sent.
//!
//! Without the `servers` feature the crate depends on no crate of the workspace, so brisk-mem's and
//! brisk-wire's tests can use it.

pub mod alloc;
pub mod azurite;
#[cfg(feature = "servers")]
pub mod fake_s3;
pub mod fault_proxy;
pub mod http;
pub mod minio;
pub mod minio_cluster;
pub mod process;
pub mod serve;

/// Access key of the test servers' user (`brisk serve --access-key`, MinIO's root user).
pub const ACCESS_KEY: &str = "brisktestroot";
/// Secret key of the test servers' user.
pub const SECRET_KEY: &str = "brisk-test-secret-key";
/// Region the test servers are configured with.
pub const REGION: &str = "us-east-1";
