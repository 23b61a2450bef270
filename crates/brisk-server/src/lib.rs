//! brisk's embedded S3-compatible server: one node on one directory, for local development, tests,
//! CI and edge boxes.
//!
//! ```no_run
//! # async fn run() -> Result<(), brisk_server::ServerError> {
//! use brisk_server::{AccessKey, Server, ServerConfig};
//! let key = AccessKey { access_key_id: "AK".into(), secret_access_key: "SK".into() };
//! let mut config = ServerConfig::new("/tmp/brisk-data", Some(key));
//! config.listen = "127.0.0.1:0".parse().unwrap();
//! let server = Server::bind(config).await?;
//! println!("{}", server.url());
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! | module | concern |
//! |---|---|
//! | [`config`] | [`ServerConfig`], limits and their defaults |
//! | [`access_log`] | one line per request on standard error, plain or JSON |
//! | `server` | listener, connection semaphore, connection loop, shutdown |
//! | `route` | path-style and virtual-hosted-style addressing, sub-resources → operation |
//! | `auth` | SigV4 verification (header and presigned), payload-hash modes |
//! | `body` | request bodies: read buffer → file, hashing as bytes pass, aws-chunked layering |
//! | `blocking` | work that waits for the disk, run off the worker's other tasks |
//! | `exchange` | per-connection buffers, responses, `sendfile` |
//! | [`tls`] | HTTPS: the certificate and key, the plain-or-TLS connection stream |
//! | `objects` | object fields, ranges, conditional requests, copy sources |
//! | `handler` | the S3 operations, one module per concern (buckets, listings, objects, attributes, ACLs, multipart) and the dispatch |
//! | [`error`] | [`S3Error`] and the mapping of every lower layer's error to it |
//! | [`store`] | buckets, objects and uploads on disk (`docs/storage.md`) |
//!
//! `docs/server.md` describes the data path, the limits and what is supported.

pub mod access_log;
mod auth;
mod blocking;
mod body;
pub mod config;
mod direct;
pub mod error;
mod exchange;
mod handler;
mod objects;
mod route;
pub mod scratch;
mod server;
pub mod store;
pub mod tls;

pub use access_log::LogFormat;
pub use config::{AccessKey, ServerConfig, ServerLimits};
pub use error::S3Error;
pub use server::{RunningServer, Server, ServerError};
pub use tls::TlsFiles;

/// The request parsers the fuzz targets in `fuzz/` call: the router and the `Range` parser. Not part
/// of the supported API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::objects::RangeRequest;
    pub use crate::route::{Operation, Query, Route, route};
}
