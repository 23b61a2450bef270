//! Azure Blob Storage on the wire: Shared Key signing, service SAS tokens, the CRC-64 of
//! `x-ms-content-crc64`, and the XML bodies of listings, errors and block lists.
//!
//! Like the rest of the crate this is pure: a request is handed in as plain parts ([`AzureRequest`]:
//! method, raw path, raw query, headers) and times are passed in, so every signature is reproducible.
//!
//! | module | concern |
//! |---|---|
//! | [`shared_key`] | the account key, the Shared Key string to sign and the `Authorization` value |
//! | `collation` | the order the service sorts `x-ms-*` headers in (not plain byte order) |
//! | [`sas`] | service SAS tokens for a blob or a container |
//! | [`mod@crc64`] | the CRC-64 behind `x-ms-content-crc64` and its little-endian base64 header value |
//! | [`xml`] | List Blobs, List Containers, Error documents; the Put Block List body and block ids |
//!
//! Azure differs from S3 in ways that are easy to get subtly wrong, and each module says which:
//! Content-Length `0` is signed as an empty line, `x-ms-*` headers sort with hyphens ignored at first,
//! query values are signed decoded, a path-style emulator URL signs the account name twice, the CRC-64
//! header is little-endian, and List Blobs may percent-encode a name (`<Name Encoded="true">`).

mod collation;
pub mod crc64;
pub mod sas;
pub mod shared_key;
pub mod xml;

pub use crc64::{Crc64, crc64, crc64_header_value, parse_crc64_header};
pub use sas::{SasError, ServiceSas};
pub use shared_key::{AzureKeyError, AzureRequest, SharedKeyCredential, string_to_sign};
pub use xml::{
    AzureErrorDocument, BlobEntry, BlobListPage, ContainerEntry, ContainerListPage, block_id,
    block_list_body, parse_error, parse_list_blobs, parse_list_containers,
};

/// The `x-ms-version` sent with every request, and the `sv` of every SAS: a version both Azurite 3.35
/// and the current Azure SDKs accept, so the emulator and the service answer alike.
pub const API_VERSION: &str = "2025-11-05";
