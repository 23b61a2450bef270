//! What both ends of brisk must agree on: the HTTP/1.1 codec, AWS Signature Version 4, checksums,
//! the S3 XML bodies and the standard headers stored with an object ([`object_headers`]); and, for
//! the client's Azure dialect, Azure Blob Storage's signing, checksum and XML formats ([`azure`]).
//!
//! Body framings (HTTP chunked, aws-chunked) are sans-IO decoders over a caller's buffer (see
//! [`framing`]), so the same code serves the client and the server, is fuzzed without sockets, and never
//! copies payload bytes: it only points at them.

pub mod azure;
pub mod checksum;
pub mod error_code;
pub mod framing;
pub mod http;
pub mod object_headers;
pub mod sigv4;
pub mod xml;

pub use error_code::S3ErrorCode;
