//! CopyObject: one object copied to another key by the server, no payload through the client.

use brisk_wire::sigv4::encode_key_path;
use brisk_wire::xml::{CopyObjectResult, ErrorDocument, XmlDocument};
use time::OffsetDateTime;

use crate::client::{Client, read_small_body};
use crate::error::{Error, Result, ServiceError};
use crate::request::{RequestSpec, check_bucket, check_key};

/// S3's limit on user metadata: 2 KB, names and values together (as UTF-8 bytes).
pub const MAX_USER_METADATA: usize = 2 * 1024;

/// What the copy's metadata is (`x-amz-metadata-directive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetadataDirective {
    /// The source's content type and user metadata are kept (S3's default).
    #[default]
    Copy,
    /// The copy gets [`CopyOptions::content_type`] and [`CopyOptions::metadata`] instead.
    Replace,
}

/// Options of [`Client::copy_object`].
#[derive(Debug, Clone, Default)]
pub struct CopyOptions {
    /// Keep the source's metadata or replace it.
    pub metadata_directive: MetadataDirective,
    /// `Content-Type` of the copy ([`MetadataDirective::Replace`] only).
    pub content_type: Option<String>,
    /// User metadata of the copy, sent as `x-amz-meta-<name>` ([`MetadataDirective::Replace`]
    /// only). Names are ASCII header tokens, stored lower-case; at most [`MAX_USER_METADATA`] bytes.
    pub metadata: Vec<(String, String)>,
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
    /// Copies `src_bucket`/`src_key` to `dst_bucket`/`dst_key` on the server (CopyObject): no
    /// bytes of the object pass through this process. S3 copies objects up to 5 GiB this way;
    /// larger ones need a multipart copy.
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
        let source = format!("/{src_bucket}{}", encode_key_path(src_key));
        let mut spec = RequestSpec::new("PUT", Some(dst_bucket), Some(dst_key))
            .header("x-amz-copy-source", source)
            .slow_answer();
        match options.metadata_directive {
            MetadataDirective::Copy => {
                if options.content_type.is_some() || !options.metadata.is_empty() {
                    return Err(Error::InvalidArgument {
                        what: "a content type or user metadata for a copy needs MetadataDirective::Replace (COPY keeps the source's)".to_owned(),
                    });
                }
                spec = spec.header("x-amz-metadata-directive", "COPY");
            }
            MetadataDirective::Replace => {
                spec = spec.header("x-amz-metadata-directive", "REPLACE");
                if let Some(ct) = &options.content_type {
                    check_header_value("content type", ct)?;
                    spec = spec.header("content-type", ct.clone());
                }
                check_metadata(&options.metadata)?;
                for (name, value) in &options.metadata {
                    spec = spec.header_named(
                        format!("x-amz-meta-{}", name.to_ascii_lowercase()),
                        value.clone(),
                    );
                }
            }
        }
        let mut response = self.send(&spec).await?;
        let xml = read_small_body(&mut response).await?;
        response.release();
        match CopyObjectResult::parse(&xml) {
            Ok(result) => Ok(CopyResult {
                etag: result.etag,
                last_modified: result.last_modified,
            }),
            // S3 answers 200 with an Error document when a copy fails after the response began:
            // a server-side failure, reported as the 500 it stands for.
            Err(parse) => match ErrorDocument::parse(&xml) {
                Ok(document) => Err(Error::from_service(ServiceError::new(
                    500,
                    Some(document),
                    None,
                    &self.config().region,
                ))),
                Err(_) => Err(parse.into()),
            },
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
