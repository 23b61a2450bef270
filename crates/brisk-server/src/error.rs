//! The S3 error every request can end with: an S3 error code, the HTTP status S3 answers it with, and
//! a message that says what was wrong. Each lower layer's error maps to it by meaning (store, HTTP
//! codec, SigV4, XML), never by matching strings.

use brisk_wire::S3ErrorCode;
use brisk_wire::http::HttpError;
use brisk_wire::sigv4::{AccessDeniedReason, AuthError};
use brisk_wire::xml::XmlParseError;

use crate::store::StoreError;

/// An S3 error response: `<Error><Code>…</Code><Message>…</Message>…</Error>` with `status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} ({status}): {message}")]
pub struct S3Error {
    /// The S3 error code (`NoSuchKey`, `SignatureDoesNotMatch`, ...).
    pub code: S3ErrorCode,
    /// The HTTP status: the code's, except where the HTTP layer decides it (see [`Self::at_status`]).
    pub status: u16,
    /// What was wrong, for a human.
    pub message: String,
    /// Extra elements of the error document (`CanonicalRequest`, `StringToSign`, `Key`, ...).
    pub extra: Vec<(String, String)>,
}

impl S3Error {
    /// An error with no extra elements, answered with its code's status.
    pub fn new(code: S3ErrorCode, message: impl Into<String>) -> Self {
        Self::at_status(code, code.http_status(), message)
    }

    /// An error answered with a status other than its code's. Only the HTTP layer's limits use it:
    /// a request that timed out, or whose head or body is over a limit, gets the status the HTTP
    /// codec chose (408, 413, 414, 431), which tells a client more than S3's generic 400 does.
    pub fn at_status(code: S3ErrorCode, status: u16, message: impl Into<String>) -> Self {
        Self {
            code,
            status,
            message: message.into(),
            extra: Vec::new(),
        }
    }

    /// Adds an element to the error document.
    pub fn with(mut self, name: &str, value: impl Into<String>) -> Self {
        self.extra.push((name.to_owned(), value.into()));
        self
    }

    /// `400 InvalidArgument`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(S3ErrorCode::InvalidArgument, message)
    }

    /// `400 InvalidRequest`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(S3ErrorCode::InvalidRequest, message)
    }

    /// `501 NotImplemented`.
    pub fn not_implemented(what: impl Into<String>) -> Self {
        Self::new(S3ErrorCode::NotImplemented, what)
    }

    /// `500 InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(S3ErrorCode::InternalError, message)
    }

    /// `400 BadDigest`: a declared digest (Content-MD5, `x-amz-checksum-*`) does not match the body.
    pub fn bad_digest(message: impl Into<String>) -> Self {
        Self::new(S3ErrorCode::BadDigest, message)
    }

    /// `416 InvalidRange`.
    pub fn invalid_range(size: u64) -> Self {
        Self::new(
            S3ErrorCode::InvalidRange,
            "The requested range is not satisfiable",
        )
        .with("ActualObjectSize", size.to_string())
    }
}

/// Whether an I/O error means the disk (or the user's quota on it) is full: a condition the client
/// cannot fix by retrying at once and the operator must hear about, so it gets its own answer.
fn is_disk_full(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

impl S3Error {
    /// `507 InsufficientStorage`: the server's disk is full. S3 has no code for this (its storage does
    /// not fill); 507 is HTTP's status for it, and like MinIO's `XMinioStorageFull` it is a 5xx that
    /// the AWS SDKs do not retry in a tight loop.
    pub fn insufficient_storage(e: &std::io::Error) -> Self {
        Self::new(
            S3ErrorCode::InsufficientStorage,
            format!(
                "The server has no space left to store this request's data ({e}); free space and retry"
            ),
        )
    }
}

impl S3Error {
    /// The answer to a CORS preflight (`OPTIONS`), no bucket having a CORS configuration: S3's
    /// `400 BadRequest` when the `Origin` header is missing, else `403 CORSResponse`.
    pub fn cors_preflight(has_origin: bool) -> Self {
        if has_origin {
            Self::new(
                S3ErrorCode::CORSResponse,
                "CORS is not enabled for this bucket.",
            )
        } else {
            Self::new(
                S3ErrorCode::BadRequest,
                "Insufficient information. Origin request header needed.",
            )
        }
    }
}

impl From<StoreError> for S3Error {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Io(io) if is_disk_full(io) => return Self::insufficient_storage(io),
            StoreError::Metadata(redb::Error::Io(io)) if is_disk_full(io) => {
                return Self::insufficient_storage(io);
            }
            _ => {}
        }
        let message = e.to_string();
        let code = match &e {
            StoreError::NoSuchBucket(_) => S3ErrorCode::NoSuchBucket,
            StoreError::NoSuchKey { .. } => S3ErrorCode::NoSuchKey,
            StoreError::NoSuchUpload(_) => S3ErrorCode::NoSuchUpload,
            StoreError::BucketAlreadyOwnedByYou(_) => S3ErrorCode::BucketAlreadyOwnedByYou,
            StoreError::BucketNotEmpty(_) => S3ErrorCode::BucketNotEmpty,
            StoreError::InvalidBucketName { .. } => S3ErrorCode::InvalidBucketName,
            StoreError::KeyTooLong { .. } => S3ErrorCode::KeyTooLongError,
            StoreError::PreconditionFailed { .. } => S3ErrorCode::PreconditionFailed,
            StoreError::EmptyKey => S3ErrorCode::InvalidArgument,
            StoreError::InvalidPartNumber(_) => S3ErrorCode::InvalidArgument,
            StoreError::InvalidPart { .. } => S3ErrorCode::InvalidPart,
            StoreError::InvalidPartOrder { .. } => S3ErrorCode::InvalidPartOrder,
            StoreError::EntityTooSmall { .. } => S3ErrorCode::EntityTooSmall,
            StoreError::ChecksumMismatch { .. } => S3ErrorCode::BadDigest,
            StoreError::ChecksumNotCheckable(_) => S3ErrorCode::InvalidRequest,
            StoreError::NoParts => S3ErrorCode::MalformedXML,
            StoreError::InvalidContinuationToken(_) => S3ErrorCode::InvalidArgument,
            StoreError::Metadata(_) | StoreError::CorruptMetadata(_) | StoreError::Io(_) => {
                S3ErrorCode::InternalError
            }
        };
        let mut error = Self::new(code, message);
        match e {
            StoreError::NoSuchBucket(bucket) | StoreError::BucketNotEmpty(bucket) => {
                error = error.with("BucketName", bucket);
            }
            StoreError::NoSuchKey { key, .. } => error = error.with("Key", key),
            StoreError::NoSuchUpload(id) => error = error.with("UploadId", id),
            StoreError::PreconditionFailed { condition } => {
                error = error.with("Condition", condition)
            }
            _ => {}
        }
        error
    }
}

impl From<HttpError> for S3Error {
    fn from(e: HttpError) -> Self {
        let status = e.status_hint().unwrap_or(400);
        let code = match status {
            408 => S3ErrorCode::RequestTimeout,
            413 => S3ErrorCode::EntityTooLarge,
            414 | 431 => S3ErrorCode::RequestHeaderSectionTooLarge,
            501 => S3ErrorCode::NotImplemented,
            _ => S3ErrorCode::BadRequest,
        };
        Self::at_status(code, status, e.to_string())
    }
}

/// `2026-11-24T23:10:00Z` from an `x-amz-date` instant.
fn iso8601(date: &brisk_wire::sigv4::AmzDate) -> String {
    let t = date.as_str(); // YYYYMMDDTHHMMSSZ
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &t[0..4],
        &t[4..6],
        &t[6..8],
        &t[9..11],
        &t[11..13],
        &t[13..15]
    )
}

impl From<AuthError> for S3Error {
    fn from(e: AuthError) -> Self {
        let mut error = Self::new(e.s3_code(), e.to_string());
        if let AuthError::AccessDenied(AccessDeniedReason::Expired {
            expires,
            expired_at,
            now,
        }) = &e
        {
            // S3's document for an expired presigned URL names the lifetime and both instants.
            error.message = "Request has expired".to_owned();
            return error
                .with("X-Amz-Expires", expires.to_string())
                .with("Expires", iso8601(expired_at))
                .with("ServerTime", iso8601(now));
        }
        if let AuthError::SignatureDoesNotMatch {
            canonical_request,
            string_to_sign,
        } = e
        {
            error.message =
                "The request signature we calculated does not match the signature you provided. \
                 Check your key and signing method."
                    .to_owned();
            error = error
                .with("CanonicalRequest", canonical_request)
                .with("StringToSign", string_to_sign);
        }
        error
    }
}

impl From<XmlParseError> for S3Error {
    fn from(e: XmlParseError) -> Self {
        Self::new(e.s3_code(), e.to_string())
    }
}

impl From<std::io::Error> for S3Error {
    fn from(e: std::io::Error) -> Self {
        if is_disk_full(&e) {
            return Self::insufficient_storage(&e);
        }
        // The peer went away mid-exchange: nothing failed on this side, and no answer can reach
        // it. Logged with nginx's 499 so a client hanging up is not mistaken for a server error.
        if matches!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
        ) {
            return Self::new(
                S3ErrorCode::ClientDisconnected,
                format!("the client closed the connection ({e})"),
            );
        }
        Self::internal(format!("I/O error: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_map_to_s3_codes_and_statuses() {
        let e = S3Error::from(StoreError::NoSuchKey {
            bucket: "b".into(),
            key: "k".into(),
        });
        assert_eq!((e.code, e.status), (S3ErrorCode::NoSuchKey, 404));
        assert_eq!(e.extra, vec![("Key".to_owned(), "k".to_owned())]);
        let e = S3Error::from(StoreError::BucketNotEmpty("b".into()));
        assert_eq!((e.code, e.status), (S3ErrorCode::BucketNotEmpty, 409));
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let e = S3Error::from(StoreError::Io(full));
        assert_eq!((e.code, e.status), (S3ErrorCode::InsufficientStorage, 507));
        let quota = std::io::Error::from_raw_os_error(122); // EDQUOT
        assert_eq!(S3Error::from(quota).status, 507);
        let gone = S3Error::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!(
            (gone.code, gone.status),
            (S3ErrorCode::ClientDisconnected, 499)
        );
        let e = S3Error::from(StoreError::Io(std::io::Error::other("disk")));
        assert_eq!((e.code, e.status), (S3ErrorCode::InternalError, 500));
    }

    #[test]
    fn http_limit_errors_keep_their_status() {
        let e = S3Error::from(HttpError::HeadTimeout {
            timeout: std::time::Duration::from_secs(1),
        });
        assert_eq!((e.code, e.status), (S3ErrorCode::RequestTimeout, 408));
    }
}
