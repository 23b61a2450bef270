//! brisk's S3 client: transfers whose memory is known in advance.
//!
//! - A GET into memory allocates exactly `Content-Length` bytes once, paid from a [`MemoryBudget`]
//!   that is a hard cap, and reads the body from the socket straight into them
//!   ([`Client::get_bytes`]); [`Client::get_into`] reads into the caller's buffer and allocates nothing
//!   on the body path.
//! - Keep-alive connections are pooled with a per-host bound
//!   ([`ClientBuilder::max_connections_per_host`]); reuse is counted ([`ClientMetrics`]).
//! - Errors are typed by meaning ([`Error::NoSuchKey`], [`Error::PreconditionFailed`], ...) and carry
//!   the S3 code, message, request id and a hint.
//! - Retries are bounded, with exponential backoff and full jitter ([`RetryPolicy`]); a GET cut off
//!   mid-body resumes with a ranged request pinned to the object's ETag.
//! - Files move in parts from pooled blocks with a bounded number of parts in flight
//!   ([`Client::upload`], [`Client::download`], see [`transfer`]); an object of unknown length is
//!   written piece by piece through an [`ObjectWriter`] ([`object_writer`]).
//! - Random reads at high queue depth: [`Client::batch_reader`] reads many ranges over keep-alive
//!   connections (by default one per request in flight up to 64, pipelined only past that), each
//!   straight into its destination ([`batch`]).
//! - Many whole objects: [`Client::get_many`] reads the objects an iterator of keys names, each
//!   into an exact buffer, at a bounded queue depth, per-key errors as results ([`get_many`]);
//!   [`Client::object_writes`] stores many, from bytes or files, the same way ([`put_many`]).
//! - Configuration follows the AWS conventions ([`config`]): explicit values, environment, profiles.
//!
//! The request engine ([`client`]: signing, pooled connections, retries, error mapping) sits under
//! one module per kind of operation: [`objects`], [`buckets`], [`list`], [`copy`], [`transfer`],
//! [`get_many`], [`put_many`], [`upload_reader`], [`object_writer`],
//! [`object_stream`], [`read_ahead`], [`batch`], and presigned URLs ([`Client::presign`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), brisk_client::Error> {
//! let client = brisk_client::Client::builder()
//!     .endpoint("http://127.0.0.1:9000")
//!     .build()?;
//! client.put("bucket", "hello.txt", b"hello").await?;
//! let bytes = client.get_bytes("bucket", "hello.txt").await?;
//! assert_eq!(&bytes[..], b"hello");
//! # Ok(()) }
//! ```
//!
//! [`MemoryBudget`]: brisk_mem::MemoryBudget

mod azure;
pub mod batch;
mod bounded;
pub mod buckets;
pub mod client;
pub mod config;
pub mod copy;
mod dialect;
mod download;
pub mod error;
mod file_send;
pub mod get_many;
pub mod integrity;
pub mod list;
mod local_file;
mod low_water;
pub mod metrics;
mod multipart;
pub mod object_stream;
pub mod object_writer;
pub mod objects;
mod part_layouts;
mod part_sums;
mod pool;
mod presign;
pub mod put_many;
pub mod read_ahead;
mod request;
pub mod retry;
mod s3;
pub mod stream_count;
mod tls;
pub mod transfer;
mod upload;
pub mod upload_reader;

pub use batch::{
    BatchOptions, BatchReader, BatchStats, Completion, Destination, Filled, LentBuffer, Pipelining,
    ReadRequest,
};
pub use buckets::BucketInfo;
pub use client::Client;
pub use config::{
    Addressing, AzureConfig, AzureCredentials, AzureSettings, ClientBuilder, ClientConfig,
    ConfigError, Endpoint,
};
pub use copy::{CopyOptions, CopyResult, MetadataDirective};
pub use error::{Error, Result, ServiceError};
pub use get_many::{GetMany, ObjectRead, ObjectReads};
pub use integrity::UploadChecksum;
pub use list::{ListObjects, ListOptions, ListPage};
pub use metrics::ClientMetrics;
pub use object_stream::ObjectStream;
pub use object_writer::ObjectWriter;
pub use objects::{DownloadHead, ObjectHeaders, ObjectMeta, PayloadSigning, PutOptions, PutResult};
pub use put_many::{ObjectWrite, ObjectWrites, PutSource};
pub use read_ahead::ReadAhead;
pub use retry::RetryPolicy;
pub use stream_count::StreamMeasure;
pub use transfer::{TransferOptions, TransferProgress, UploadResult};

/// Access key, secret and optional session token (from `brisk-wire`'s SigV4 module).
pub use brisk_wire::sigv4::Credentials;

/// [`object_stream`] under its former name.
pub mod stream {
    pub use crate::object_stream::*;
}

/// [`upload_reader`] under its former name.
pub mod upload_stream {
    pub use crate::upload_reader::*;
}
