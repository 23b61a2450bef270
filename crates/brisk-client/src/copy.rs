//! Server-side copies: one object copied to another key by the server, no payload through the
//! client. Up to 5 GiB one CopyObject; above, a multipart upload whose parts are UploadPartCopy
//! requests for ranges of the source (S3 refuses a CopyObject of more than 5 GiB).

use time::OffsetDateTime;

use crate::client::Client;
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::request::{RequestSpec, check_bucket, check_key};
use crate::transfer::{MAX_PARTS, MIN_PART_SIZE};

/// S3's limit on user metadata: 2 KB, names and values together (as UTF-8 bytes).
pub const MAX_USER_METADATA: usize = 2 * 1024;

/// S3's largest CopyObject: 5 GiB. Larger sources are copied in parts.
pub const MAX_COPY_OBJECT_SIZE: u64 = 5 * 1024 * 1024 * 1024;

/// Part size of a multipart copy: 256 MiB. The bytes never pass through the client, so a part
/// costs it one request, not memory; 256 MiB keeps a 5 TiB copy near S3's 10,000 parts (the size
/// grows past that) and a 6 GiB one at 24 parts that [`DEFAULT_COPY_PARTS_IN_FLIGHT`] spread over
/// the server.
pub const DEFAULT_COPY_PART_SIZE: u64 = 256 * 1024 * 1024;

/// UploadPartCopy requests in flight at once: 8 (each is a server-side copy of one part).
pub const DEFAULT_COPY_PARTS_IN_FLIGHT: usize = 8;

/// S3's largest part: 5 GiB.
pub(crate) const MAX_PART_SIZE: u64 = 5 * 1024 * 1024 * 1024;

/// What the copy's metadata is (`x-amz-metadata-directive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetadataDirective {
    /// The source's content type, standard headers (Cache-Control, Content-Disposition, ...) and
    /// user metadata are kept (S3's default).
    #[default]
    Copy,
    /// The copy gets [`CopyOptions::content_type`] and [`CopyOptions::metadata`] instead.
    Replace,
}

/// Options of [`Client::copy_object`].
#[derive(Debug, Clone)]
pub struct CopyOptions {
    /// Keep the source's metadata or replace it.
    pub metadata_directive: MetadataDirective,
    /// `Content-Type` of the copy ([`MetadataDirective::Replace`] only).
    pub content_type: Option<String>,
    /// User metadata of the copy, sent as `x-amz-meta-<name>` ([`MetadataDirective::Replace`]
    /// only). Names are ASCII header tokens, stored lower-case; at most [`MAX_USER_METADATA`] bytes.
    pub metadata: Vec<(String, String)>,
    /// Sources larger than this are copied in parts ([`MAX_COPY_OBJECT_SIZE`] by default, the
    /// most S3 copies in one request; at most that).
    pub multipart_threshold: u64,
    /// Bytes per part of a multipart copy (grown to stay within 10,000 parts); at least 5 MiB.
    pub part_size: u64,
    /// UploadPartCopy requests in flight (at least 1).
    pub parts_in_flight: usize,
    /// The source's size, when the caller knows it (from a listing or a HEAD of its own): a source
    /// at or below `multipart_threshold` is then copied with one CopyObject and no HEAD first.
    pub source_size: Option<u64>,
}

impl Default for CopyOptions {
    fn default() -> Self {
        Self {
            metadata_directive: MetadataDirective::Copy,
            content_type: None,
            metadata: Vec::new(),
            multipart_threshold: MAX_COPY_OBJECT_SIZE,
            part_size: DEFAULT_COPY_PART_SIZE,
            parts_in_flight: DEFAULT_COPY_PARTS_IN_FLIGHT,
            source_size: None,
        }
    }
}

impl CopyOptions {
    /// The metadata headers of the copy's request (CopyObject), or of its CreateMultipartUpload
    /// when `source` (the source's own, read with HEAD) is given for a multipart copy that keeps it.
    pub(crate) fn metadata_headers<'a>(
        &self,
        mut spec: RequestSpec<'a>,
        source: Option<&crate::ObjectMeta>,
    ) -> Result<RequestSpec<'a>> {
        let (content_type, metadata) = match self.metadata_directive {
            MetadataDirective::Copy => {
                match source {
                    // One CopyObject: the server copies the metadata itself.
                    None => return Ok(spec.header("x-amz-metadata-directive", "COPY")),
                    // In parts: the new upload gets the source's standard headers (Cache-Control,
                    // Content-Disposition, ...) as a CopyObject would have kept them, then its
                    // content type and user metadata below.
                    Some(meta) => {
                        let standard = crate::ObjectHeaders {
                            metadata: Vec::new(),
                            ..meta.headers.clone()
                        };
                        spec = standard.add_to(spec, None, false);
                        (meta.content_type.as_ref(), &meta.metadata)
                    }
                }
            }
            MetadataDirective::Replace => {
                if source.is_none() {
                    spec = spec.header("x-amz-metadata-directive", "REPLACE");
                }
                (self.content_type.as_ref(), &self.metadata)
            }
        };
        if let Some(ct) = content_type {
            check_header_value("content type", ct)?;
            spec = spec.header("content-type", ct.clone());
        }
        check_metadata(metadata)?;
        for (name, value) in metadata {
            spec = spec.header_named(
                format!("x-amz-meta-{}", name.to_ascii_lowercase()),
                value.clone(),
            );
        }
        Ok(spec)
    }

    fn check(&self) -> Result<()> {
        if self.metadata_directive == MetadataDirective::Copy
            && (self.content_type.is_some() || !self.metadata.is_empty())
        {
            return Err(Error::InvalidArgument {
                what: "a content type or user metadata for a copy needs MetadataDirective::Replace (COPY keeps the source's)".to_owned(),
            });
        }
        if self.multipart_threshold > MAX_COPY_OBJECT_SIZE {
            return Err(Error::InvalidArgument {
                what: format!(
                    "multipart threshold {} is above S3's {MAX_COPY_OBJECT_SIZE}-byte CopyObject limit",
                    self.multipart_threshold
                ),
            });
        }
        if self.part_size < MIN_PART_SIZE as u64 || self.part_size > MAX_PART_SIZE {
            return Err(Error::InvalidArgument {
                what: format!(
                    "copy part size {} is outside {MIN_PART_SIZE}..={MAX_PART_SIZE} bytes",
                    self.part_size
                ),
            });
        }
        if self.parts_in_flight == 0 {
            return Err(Error::InvalidArgument {
                what: "parts_in_flight must be at least 1".into(),
            });
        }
        Ok(())
    }
}

/// The part size of a multipart copy of `size` bytes: `wanted`, grown (in whole MiB) until the
/// copy fits in [`MAX_PARTS`] parts.
pub fn copy_part_size(size: u64, wanted: u64) -> u64 {
    const MIB: u64 = 1024 * 1024;
    let least = size.div_ceil(MAX_PARTS).div_ceil(MIB) * MIB;
    wanted.max(least)
}

/// What CopyObject returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyResult {
    /// The copy's ETag, with its quotes.
    pub etag: String,
    /// When the copy was written.
    pub last_modified: OffsetDateTime,
}

impl Client {
    /// Copies `src_bucket`/`src_key` to `dst_bucket`/`dst_key` on the server: no bytes of the
    /// object pass through this process. A source above [`CopyOptions::multipart_threshold`]
    /// (5 GiB, S3's CopyObject limit) is copied as a multipart upload of UploadPartCopy ranges,
    /// every part pinned to the source's ETag (`x-amz-copy-source-if-match`) so the copy is of one
    /// version, with the source's content type, standard headers and user metadata carried over
    /// (or the content type and metadata replaced); a failed multipart copy is aborted.
    pub async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        options: CopyOptions,
    ) -> Result<CopyResult> {
        check_bucket(src_bucket)?;
        check_key(src_key)?;
        check_bucket(dst_bucket)?;
        check_key(dst_key)?;
        options.check()?;
        match self.dialect() {
            Dialect::S3(_) => {
                self.s3_copy_object(src_bucket, src_key, dst_bucket, dst_key, options)
                    .await
            }
            Dialect::Azure(_) => {
                self.azure_copy_blob(src_bucket, src_key, dst_bucket, dst_key)
                    .await
            }
        }
    }
}

/// Names must be header tokens (RFC 9110) and values free of control characters, or the request
/// head would break; S3 bounds the total size.
fn check_metadata(metadata: &[(String, String)]) -> Result<()> {
    let mut total = 0;
    for (name, value) in metadata {
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(Error::InvalidArgument {
                what: format!(
                    "user metadata name {name:?} is not an HTTP header token (letters, digits, -_.)"
                ),
            });
        }
        check_header_value("user metadata value", value)?;
        total += name.len() + value.len();
    }
    if total > MAX_USER_METADATA {
        return Err(Error::InvalidArgument {
            what: format!(
                "user metadata is {total} bytes; S3 allows at most {MAX_USER_METADATA} (names and values)"
            ),
        });
    }
    Ok(())
}

fn check_header_value(what: &str, value: &str) -> Result<()> {
    if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
        return Err(Error::InvalidArgument {
            what: format!("{what} {value:?} contains control characters"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_parts_stay_within_s3s_part_count() {
        const MIB: u64 = 1024 * 1024;
        assert_eq!(copy_part_size(6 << 30, DEFAULT_COPY_PART_SIZE), 256 * MIB);
        let five_tib = 5u64 << 40;
        let part = copy_part_size(five_tib, DEFAULT_COPY_PART_SIZE);
        assert!(five_tib.div_ceil(part) <= MAX_PARTS, "{part}");
        assert_eq!(part % MIB, 0);
        assert!(part <= MAX_PART_SIZE);
    }

    #[test]
    fn metadata_is_checked() {
        assert!(check_metadata(&[("Color".into(), "blue".into())]).is_ok());
        assert!(check_metadata(&[("".into(), "v".into())]).is_err());
        assert!(check_metadata(&[("a b".into(), "v".into())]).is_err());
        assert!(check_metadata(&[("a:b".into(), "v".into())]).is_err());
        assert!(check_metadata(&[("a".into(), "line\r\nbreak".into())]).is_err());
        assert!(check_metadata(&[("a".into(), "v".repeat(MAX_USER_METADATA))]).is_err());
        assert!(check_metadata(&[("a".into(), "v".repeat(MAX_USER_METADATA - 1))]).is_ok());
    }
}
