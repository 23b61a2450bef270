//! The one error type of the store, by meaning, so the S3 front end maps each variant to an S3 error
//! code without matching on strings.

use std::io;

/// Everything a store operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The bucket does not exist (S3 `NoSuchBucket`).
    #[error("bucket {0:?} does not exist")]
    NoSuchBucket(String),
    /// The key does not exist in the bucket (S3 `NoSuchKey`).
    #[error("key {key:?} does not exist in bucket {bucket:?}")]
    NoSuchKey {
        /// Bucket that was searched.
        bucket: String,
        /// Key that was not found.
        key: String,
    },
    /// The multipart upload does not exist, was completed or aborted, or belongs to another key
    /// (S3 `NoSuchUpload`).
    #[error("multipart upload {0:?} does not exist")]
    NoSuchUpload(String),
    /// `create_bucket` on a bucket that already exists (S3 `BucketAlreadyOwnedByYou`: the embedded
    /// server has one owner).
    #[error("bucket {0:?} already exists")]
    BucketAlreadyOwnedByYou(String),
    /// `delete_bucket` on a bucket that still holds objects (S3 `BucketNotEmpty`).
    #[error("bucket {0:?} is not empty")]
    BucketNotEmpty(String),
    /// The bucket name breaks S3's naming rules (S3 `InvalidBucketName`); the reason says which.
    #[error("invalid bucket name {name:?}: {reason}")]
    InvalidBucketName {
        /// The rejected name.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// The key is longer than [`MAX_KEY_BYTES`](super::MAX_KEY_BYTES) (S3 `KeyTooLongError`).
    #[error("key is {len} bytes long, the limit is {max}")]
    KeyTooLong {
        /// Length of the rejected key in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A conditional write (`If-None-Match: *`, `If-Match: <etag>`) found the key in a state that
    /// does not satisfy it (S3 `PreconditionFailed`); the condition names the header.
    #[error("the {condition} condition of the write does not hold")]
    PreconditionFailed {
        /// The header whose condition failed.
        condition: &'static str,
    },
    /// The empty string is not a key (S3 addresses the bucket itself with it).
    #[error("the empty string is not a valid key")]
    EmptyKey,
    /// A part number outside `1..=10000` (S3 `InvalidArgument`).
    #[error("part number {0} is outside 1..=10000")]
    InvalidPartNumber(u32),
    /// A listed part was never uploaded or its ETag does not match (S3 `InvalidPart`).
    #[error("part {part_number} was not uploaded or its ETag {etag:?} does not match")]
    InvalidPart {
        /// The part number named in the completion request.
        part_number: u32,
        /// The ETag named in the completion request.
        etag: String,
    },
    /// The completion request does not list its parts in strictly ascending order
    /// (S3 `InvalidPartOrder`).
    #[error("parts must be listed in strictly ascending order: {previous} is followed by {next}")]
    InvalidPartOrder {
        /// The part number listed before `next`.
        previous: u32,
        /// The first part number that is not above `previous`.
        next: u32,
    },
    /// A part other than the last is smaller than the minimum part size (S3 `EntityTooSmall`).
    #[error("part {part_number} is {size} bytes, every part but the last must be at least {min}")]
    EntityTooSmall {
        /// The part that is too small.
        part_number: u32,
        /// Its size in bytes.
        size: u64,
        /// The minimum part size in force.
        min: u64,
    },
    /// The whole object's checksum a completion request declared is not the one its parts
    /// combine into (S3 `BadDigest`).
    #[error("The {algorithm} you specified did not match the calculated checksum")]
    ChecksumMismatch {
        /// The algorithm's S3 name (`CRC32`, `SHA256`, ...).
        algorithm: &'static str,
    },
    /// A completion request declared a checksum the upload cannot be checked against: of
    /// another algorithm or type than the upload was created with, or for an upload created
    /// with none (S3 `InvalidRequest`).
    #[error("{0}")]
    ChecksumNotCheckable(String),
    /// A completion request with no parts (S3 `MalformedXML` in practice).
    #[error("a multipart upload cannot be completed without parts")]
    NoParts,
    /// A continuation token that this store did not issue (S3 `InvalidArgument`).
    #[error("continuation token {0:?} was not issued by this store")]
    InvalidContinuationToken(String),
    /// The store's metadata database failed or is already open by another process.
    #[error("metadata database: {0}")]
    Metadata(#[from] redb::Error),
    /// A metadata record could not be decoded: the database was written by an incompatible version
    /// or damaged.
    #[error("corrupt metadata record: {0}")]
    CorruptMetadata(&'static str),
    /// The file system failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
}

/// Every redb error type converts into [`redb::Error`]; these let `?` lift them into the store's error.
macro_rules! from_redb {
    ($($t:ty),* $(,)?) => {
        $(impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Metadata(e.into())
            }
        })*
    };
}

from_redb!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
);

/// Result of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
