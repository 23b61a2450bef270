//! The seam between the engine and the service it speaks to.
//!
//! The engine — the connection pool, exact buffers and the memory budget, the range scheduler and
//! pipelining, retries and resumed reads, transfer progress, the integrity checks of what lands —
//! is written once. What differs between services is the *dialect*:
//!
//! - how a request is addressed and signed ([`Dialect::target`], [`Dialect::head`]): SigV4 and
//!   path-style or virtual-hosted buckets for S3; Shared Key, SAS or anonymous, with `x-ms-date`
//!   and `x-ms-version`, and the account in the host or (emulators) in the path for Azure Blob;
//! - how an error response is read ([`Dialect::error`]): S3's `<Error>` document and
//!   `x-amz-request-id`, or Azure's `x-ms-error-code` and `<Error>`, both classified into the one
//!   [`Error`] by meaning (`BlobNotFound` is [`Error::NoSuchKey`], as `NoSuchKey` is);
//! - what the operations whose wire forms differ send: listings, single PUTs, how a multipart
//!   write is staged and committed (S3's CreateMultipartUpload/UploadPart/Complete, Azure's Put
//!   Block/Put Block List), copies, containers and presigned URLs. Each of those operations
//!   chooses its form in one match on the dialect: S3's in [`crate::s3`], Azure's in
//!   [`crate::azure`]. Whether a service checks blocks, ranges or blobs by its own checksums
//!   ([`Dialect::block_checksum`], [`Dialect::sends_range_md5`], [`Dialect::stored_blob_md5`]) is
//!   asked here too, so the engine never asks which service it speaks.
//!
//! A request reaches the dialect as a [`RequestSpec`]: method, bucket (container), key (blob),
//! query, headers and body. The data path's requests (whole and ranged GETs, HEAD, `If-Match`
//! pins) are the same in both services, so the batch engine, downloads and resumed reads build
//! them once and the dialect only addresses and signs them.

pub(crate) mod azure;
pub(crate) mod s3;

use std::time::SystemTime;

use brisk_wire::http::{Headers, RequestHead};

use brisk_wire::checksum::Md5Digest;
use brisk_wire::http::ResponseHead;

use crate::config::Endpoint;
use crate::error::Error;
use crate::integrity::{TRANSACTIONAL_MD5_MAX, UploadChecksum, stored_blob_md5};
use crate::request::{Address, RequestSpec};

pub(crate) use azure::AzureDialect;
pub(crate) use s3::S3Dialect;

/// The service a client speaks.
#[derive(Debug)]
pub(crate) enum Dialect {
    /// Amazon S3 and S3-compatible servers.
    S3(S3Dialect),
    /// Azure Blob Storage (block blobs) and its emulator, Azurite.
    Azure(AzureDialect),
}

impl Dialect {
    /// Where a request for `bucket`/`key` goes on `endpoint`.
    pub(crate) fn target(
        &self,
        endpoint: &Endpoint,
        bucket: Option<&str>,
        key: Option<&str>,
    ) -> Address {
        match self {
            Self::S3(s3) => s3.target(endpoint, bucket, key),
            Self::Azure(azure) => azure.target(endpoint, bucket, key),
        }
    }

    /// The head of `spec` for `target`, signed (or not) as the service wants, at `now`.
    pub(crate) fn head(
        &self,
        spec: &RequestSpec<'_>,
        target: &Address,
        now: SystemTime,
    ) -> Result<RequestHead, Error> {
        match self {
            Self::S3(s3) => s3.head(spec, target, now),
            Self::Azure(azure) => azure.head(spec, target, now),
        }
    }

    /// The error an error response means: `status`, its headers and its body (when it was small
    /// enough to read).
    pub(crate) fn error(&self, status: u16, headers: &Headers, body: Option<&[u8]>) -> Error {
        match self {
            Self::S3(s3) => s3.error(status, headers, body),
            Self::Azure(azure) => azure.error(status, headers, body),
        }
    }

    /// The prefix of user metadata headers: `x-amz-meta-` or `x-ms-meta-`.
    pub(crate) fn metadata_prefix(&self) -> &'static str {
        match self {
            Self::S3(_) => "x-amz-meta-",
            Self::Azure(_) => "x-ms-meta-",
        }
    }

    /// The checksum each uploaded block must carry, whatever the caller chose: Azure checks
    /// every block against `x-ms-content-crc64`, so its uploads compute CRC-64 while they read;
    /// S3 takes the caller's.
    pub(crate) fn block_checksum(&self) -> Option<UploadChecksum> {
        match self {
            Self::S3(_) => None,
            Self::Azure(_) => Some(UploadChecksum::Crc64Nvme),
        }
    }

    /// Whether a body may be sent aws-chunked with its checksum as a trailer (what an upload from
    /// a file sends with `sendfile`): S3 takes it; Azure takes blocks with a CRC-64 header.
    pub(crate) fn takes_trailing_checksums(&self) -> bool {
        match self {
            Self::S3(_) => true,
            Self::Azure(_) => false,
        }
    }

    /// Whether answers to ranged GETs may carry the range's MD5 (`Content-MD5`): Azure sends it
    /// when asked ([`ask_range_md5`](Self::ask_range_md5)); S3 never does.
    pub(crate) fn sends_range_md5s(&self) -> bool {
        match self {
            Self::S3(_) => false,
            Self::Azure(_) => true,
        }
    }

    /// Whether the service sends the MD5 of a range of `len` bytes when asked: Azure, up to
    /// 4 MiB.
    pub(crate) fn sends_range_md5(&self, len: u64) -> bool {
        self.sends_range_md5s() && len <= TRANSACTIONAL_MD5_MAX
    }

    /// Adds `x-ms-range-get-content-md5` to a ranged GET of `len` bytes when the service returns
    /// the MD5 of such a range; says whether it did (then the answer's MD5 is
    /// [`sent_range_md5`](crate::integrity::sent_range_md5)).
    pub(crate) fn ask_range_md5<'a>(
        &self,
        spec: RequestSpec<'a>,
        len: u64,
    ) -> (RequestSpec<'a>, bool) {
        if self.sends_range_md5(len) {
            (spec.header("x-ms-range-get-content-md5", "true"), true)
        } else {
            (spec, false)
        }
    }

    /// The MD5 a blob is stored with, from a HEAD's or a whole GET's answer: Azure's
    /// `Content-MD5`; S3 stores none of its own.
    pub(crate) fn stored_blob_md5(&self, head: &ResponseHead) -> Option<Md5Digest> {
        match self {
            Self::S3(_) => None,
            Self::Azure(_) => stored_blob_md5(head),
        }
    }

    /// The Azure dialect, when that is what the client speaks.
    pub(crate) fn azure(&self) -> Option<&AzureDialect> {
        match self {
            Self::Azure(azure) => Some(azure),
            Self::S3(_) => None,
        }
    }
}
