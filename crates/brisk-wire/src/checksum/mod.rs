//! Streaming checksums for S3 payloads: the `x-amz-checksum-*` family (CRC32, CRC32C, CRC64NVME,
//! SHA-1, SHA-256), MD5 for `Content-MD5` and ETags, and the multipart combinations S3 defines on top of them.
//!
//! Every hasher here is fed slices as the bytes pass (from the socket buffer, from the pooled block) and
//! finalized once, so a payload is never buffered or copied to be checksummed.
//!
//! * CRCs go through `crc-fast`, which folds with carry-less multiplication (PCLMULQDQ / VPCLMULQDQ on
//!   x86_64, PMULL on aarch64) and falls back to tables elsewhere.
//! * SHA-256 goes through `sha2`, which detects the SHA extensions (SHA-NI) at run time; SHA-1 through
//!   `sha1`, which does the same.
//! * MD5 goes through `md-5` with its assembly core on x86 (MD5 has no hardware support).
//!
//! Which implementation computes MD5 and SHA-256 is decided in one place, `checksum/engine.rs`, by measurement.
//!
//! [`Checksummer`] dispatches through an enum, not a boxed trait object, so `update` costs one `match` per
//! call and no allocation ever. See `docs/checksums.md` for which algorithm is used by default where.

mod algorithm;
mod blocks;
mod checksummer;
mod combine;
pub(crate) mod engine;
mod md5;
mod multipart;
mod value;

pub use algorithm::{ChecksumAlgorithm, ChecksumType};
pub use blocks::BlockCrcs;
pub use checksummer::Checksummer;
pub use md5::{Md5, Md5Digest, MultipartEtag};
pub use multipart::{CompositeChecksum, FullObjectCrc, MultipartChecksum};
pub use value::{ChecksumValue, MAX_DIGEST_LEN};

/// Why a checksum name or value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChecksumError {
    /// The algorithm name (from `x-amz-checksum-algorithm` or `x-amz-sdk-checksum-algorithm`) is not one
    /// brisk supports.
    #[error(
        "unsupported checksum algorithm {0:?} (expected CRC32, CRC32C, CRC64NVME, SHA1 or SHA256)"
    )]
    UnknownAlgorithm(String),
    /// The checksum type (from `x-amz-checksum-type`) is neither `COMPOSITE` nor `FULL_OBJECT`.
    #[error("unknown checksum type {0:?} (expected COMPOSITE or FULL_OBJECT)")]
    UnknownType(String),
    /// A checksum value is not valid base64 (standard alphabet, padded).
    #[error("checksum value {value:?} is not valid base64")]
    InvalidBase64 { value: String },
    /// A checksum value decodes to the wrong number of bytes for its algorithm.
    #[error("{algorithm} checksum must be {expected} bytes, got {actual}")]
    WrongLength {
        algorithm: ChecksumAlgorithm,
        expected: usize,
        actual: usize,
    },
    /// A multipart checksum or ETag lacks its `-<part count>` suffix, or the count is not a number in
    /// `1..=10000`.
    #[error("multipart value {value:?} lacks a valid -<part count> suffix")]
    InvalidPartCount { value: String },
    /// The algorithm cannot be combined the requested way (for example a full-object SHA-256, which S3
    /// does not define because SHA-256 states cannot be combined).
    #[error("{algorithm} does not support {checksum_type} multipart checksums")]
    UnsupportedCombination {
        algorithm: ChecksumAlgorithm,
        checksum_type: ChecksumType,
    },
    /// A part checksum of one algorithm was offered to a multipart checksum of another.
    #[error("expected a {expected} part checksum, got {actual}")]
    AlgorithmMismatch {
        expected: ChecksumAlgorithm,
        actual: ChecksumAlgorithm,
    },
    /// A hex MD5 digest (an ETag) is not 32 hexadecimal digits.
    #[error("MD5 digest {value:?} is not 32 hexadecimal digits")]
    InvalidMd5Hex { value: String },
}

/// The most parts an S3 multipart upload may have; multipart suffixes above it are rejected.
pub const MAX_PARTS: u32 = 10_000;
