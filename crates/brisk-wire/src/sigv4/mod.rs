//! AWS Signature Version 4 as S3 speaks it: signing (client) and verifying (server), by header, by
//! presigned URL, and for aws-chunked streaming bodies.
//!
//! Nothing here depends on the HTTP codec: a request is handed in as plain parts
//! ([`SignableRequest`]: method, raw path, raw query, headers), and time is always passed in
//! ([`AmzDate`]), never read, so every signature is reproducible in tests.
//!
//! | module | concern |
//! |---|---|
//! | [`time`] | the `YYYYMMDD'T'HHMMSS'Z'` timestamp and clock-skew arithmetic |
//! | [`credentials`] | access key, secret, session token, and the per-day signing key cache |
//! | [`canonical`] | canonical request: S3 path and key encoding, query and header canonicalisation |
//! | [`sign`] | `Authorization` header signing ([`Signer`]) |
//! | [`presign`] | presigned URLs (query signing) |
//! | [`chunked`] | aws-chunked encoders: [`ChunkSigner`], [`UnsignedChunkEncoder`], encoded lengths |
//! | [`decoder`] | the server's aws-chunked [`AwsChunkedDecoder`] (a [`crate::framing::BodyDecoder`]) |
//! | [`verify`] | server-side verification ([`Verifier`]) and [`PayloadHashVerifier`] |
//! | [`error`] | [`SigningError`] (client) and [`AuthError`] (server, one variant per S3 error code) |
//!
//! The signing key (four chained HMACs) is derived once per credentials, day, region and service and
//! then shared as an `Arc`, so signing a request costs two SHA-256 passes over small strings and one HMAC.

pub mod canonical;
pub mod chunked;
pub mod credentials;
pub mod decoder;
pub mod error;
pub mod presign;
pub mod sign;
pub mod time;
pub mod verify;

mod hashing;

pub use canonical::{SignableRequest, encode_key_path};
pub use chunked::{ChunkHeader, ChunkSigner, UnsignedChunkEncoder};
pub use credentials::{Credentials, SigningKey};
pub use decoder::{AwsChunkedDecoder, ChunkedMode, Trailer};
pub use error::{AccessDeniedReason, AuthError, SigningError};
pub use presign::PresignedQuery;
pub use sign::{PayloadHash, SignedRequest, Signer};
pub use time::AmzDate;
pub use verify::{CredentialsProvider, PayloadHashVerifier, VerifiedRequest, Verifier};

/// The only algorithm SigV4 for S3 uses, as it appears in `Authorization`, `X-Amz-Algorithm` and the
/// string to sign.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// The last element of every credential scope.
pub const SCOPE_TERMINATOR: &str = "aws4_request";

/// `x-amz-content-sha256` value for a payload that is not signed (presigned URLs, and requests that
/// rely on TLS plus a checksum for integrity).
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
/// `x-amz-content-sha256` value for aws-chunked bodies whose chunks are each signed.
pub const STREAMING_PAYLOAD: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
/// `x-amz-content-sha256` value for signed aws-chunked bodies followed by signed trailers.
pub const STREAMING_PAYLOAD_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
/// `x-amz-content-sha256` value for unsigned aws-chunked bodies followed by (unsigned) trailers.
pub const STREAMING_UNSIGNED_PAYLOAD_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
/// Hex SHA-256 of the empty string: the payload hash of bodiless requests.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
