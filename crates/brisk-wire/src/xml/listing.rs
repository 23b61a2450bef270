//! `ListBucketResult`, the response of ListObjectsV2 and of the original ListObjects (V1).

use std::io::Write;

use time::OffsetDateTime;

use super::reader::{XmlReader, check_room, required};
use super::values::{EncodingType, Owner, url_decode};
use super::writer::XmlWriter;
use super::{MAX_LIST_ENTRIES, S3_NAMESPACE, XmlDocument, XmlParseError, XmlWriteError};
use crate::checksum::{ChecksumAlgorithm, ChecksumType};

const ROOT: &str = "ListBucketResult";

/// One object of a listing (`Contents`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEntry {
    /// The key (decoded: never url-encoded here).
    pub key: String,
    pub last_modified: OffsetDateTime,
    /// The ETag as S3 writes it, with its double quotes.
    pub etag: String,
    pub size: u64,
    /// `STANDARD` and so on; absent when the server does not say.
    pub storage_class: Option<String>,
    /// The algorithm of the object's additional checksum, if it has one.
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    pub checksum_type: Option<ChecksumType>,
    /// Present when the request asked for it (`fetch-owner=true` in V2; always in V1 on S3).
    pub owner: Option<Owner>,
}

/// Which ListObjects version a listing answers, with the fields only that version has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListVersion {
    /// ListObjects (V1): marker-based paging.
    V1 {
        /// The `marker` of the request (empty when none).
        marker: String,
        /// Where the next page starts; S3 sends it only when a delimiter was given.
        next_marker: Option<String>,
    },
    /// ListObjectsV2: token-based paging.
    V2 {
        /// How many keys and common prefixes this page holds.
        key_count: u32,
        continuation_token: Option<String>,
        next_continuation_token: Option<String>,
        start_after: Option<String>,
    },
}

/// Everything of a listing page but its entries, for writing the entries straight from where they are
/// ([`write_list_bucket_result`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListBucketHeader {
    /// The bucket.
    pub name: String,
    /// The `prefix` of the request (empty when none; S3 always writes the element).
    pub prefix: String,
    pub delimiter: Option<String>,
    pub max_keys: u32,
    pub is_truncated: bool,
    /// When `Some(Url)`, keys, prefixes, the delimiter and markers are percent-encoded on the wire.
    pub encoding_type: Option<EncodingType>,
    pub version: ListVersion,
}

/// A parsed (or to-be-written) listing page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListBucketResult {
    pub header: ListBucketHeader,
    pub contents: Vec<ObjectEntry>,
    /// The `Prefix` of each `CommonPrefixes` element.
    pub common_prefixes: Vec<String>,
}

fn write_entry<W: Write>(
    w: &mut XmlWriter<W>,
    entry: &ObjectEntry,
    encoding: Option<EncodingType>,
) -> Result<(), XmlWriteError> {
    w.start("Contents")?;
    w.key_text("Key", &entry.key, encoding)?;
    w.timestamp("LastModified", entry.last_modified)?;
    w.text("ETag", &entry.etag)?;
    if let Some(algorithm) = entry.checksum_algorithm {
        w.text("ChecksumAlgorithm", algorithm.s3_name())?;
    }
    if let Some(checksum_type) = entry.checksum_type {
        w.text("ChecksumType", checksum_type.s3_name())?;
    }
    w.number("Size", entry.size)?;
    if let Some(owner) = &entry.owner {
        w.owner("Owner", owner)?;
    }
    w.opt_text("StorageClass", entry.storage_class.as_deref())?;
    w.end("Contents")
}

/// Writes a listing page whose entries are streamed from `contents` and `common_prefixes` (a server's
/// page buffer, a directory walk): no document is built in memory, each entry is escaped into one
/// reused scratch buffer and written to `out`.
pub fn write_list_bucket_result<'e, W: Write>(
    out: W,
    header: &ListBucketHeader,
    contents: impl IntoIterator<Item = &'e ObjectEntry>,
    common_prefixes: impl IntoIterator<Item = &'e str>,
) -> Result<W, XmlWriteError> {
    let enc = header.encoding_type;
    let mut w = XmlWriter::new(out)?;
    w.root(ROOT, Some(S3_NAMESPACE))?;
    w.text("Name", &header.name)?;
    w.key_text("Prefix", &header.prefix, enc)?;
    match &header.version {
        ListVersion::V1 {
            marker,
            next_marker,
        } => {
            w.key_text("Marker", marker, enc)?;
            w.opt_key_text("NextMarker", next_marker.as_deref(), enc)?;
        }
        ListVersion::V2 {
            key_count,
            continuation_token,
            next_continuation_token,
            start_after,
        } => {
            w.opt_text("ContinuationToken", continuation_token.as_deref())?;
            w.opt_text("NextContinuationToken", next_continuation_token.as_deref())?;
            w.opt_key_text("StartAfter", start_after.as_deref(), enc)?;
            w.number("KeyCount", u64::from(*key_count))?;
        }
    }
    w.number("MaxKeys", u64::from(header.max_keys))?;
    w.opt_key_text("Delimiter", header.delimiter.as_deref(), enc)?;
    if let Some(encoding) = enc {
        w.text("EncodingType", encoding.as_str())?;
    }
    w.boolean("IsTruncated", header.is_truncated)?;
    for entry in contents {
        write_entry(&mut w, entry, enc)?;
    }
    write_common_prefixes(&mut w, common_prefixes, enc)?;
    w.finish(ROOT)
}

/// Writes each of `prefixes` as a `CommonPrefixes` element (of a ListObjects or
/// ListObjectVersions page).
pub(super) fn write_common_prefixes<'e, W: Write>(
    w: &mut XmlWriter<W>,
    prefixes: impl IntoIterator<Item = &'e str>,
    enc: Option<EncodingType>,
) -> Result<(), XmlWriteError> {
    for prefix in prefixes {
        w.start("CommonPrefixes")?;
        w.key_text("Prefix", prefix, enc)?;
        w.end("CommonPrefixes")?;
    }
    Ok(())
}

fn parse_entry(r: &mut XmlReader<'_>) -> Result<ObjectEntry, XmlParseError> {
    let (mut key, mut last_modified, mut size) = (None, None, None);
    let mut entry = ObjectEntry {
        key: String::new(),
        last_modified: OffsetDateTime::UNIX_EPOCH,
        etag: String::new(),
        size: 0,
        storage_class: None,
        checksum_algorithm: None,
        checksum_type: None,
        owner: None,
    };
    r.children(|r, name| {
        match name {
            b"Key" => key = Some(r.text("Key")?),
            b"LastModified" => last_modified = Some(r.timestamp("LastModified")?),
            b"ETag" => entry.etag = r.text("ETag")?,
            b"Size" => size = Some(r.u64("Size")?),
            b"StorageClass" => entry.storage_class = Some(r.text("StorageClass")?),
            // A list in S3's model; brisk objects carry at most one. Keep the first one known.
            b"ChecksumAlgorithm" => {
                let algorithm = r.lenient("ChecksumAlgorithm")?;
                entry.checksum_algorithm = entry.checksum_algorithm.or(algorithm);
            }
            b"ChecksumType" => entry.checksum_type = r.lenient("ChecksumType")?,
            b"Owner" => entry.owner = Some(r.owner("Owner")?),
            _ => {}
        }
        Ok(())
    })?;
    entry.key = required(key, "Contents", "Key")?;
    entry.last_modified = required(last_modified, "Contents", "LastModified")?;
    entry.size = required(size, "Contents", "Size")?;
    Ok(entry)
}

fn decode(value: &mut String, element: &'static str) -> Result<(), XmlParseError> {
    *value = url_decode(value).map_err(|reason| XmlParseError::InvalidValue {
        element,
        value: value.clone(),
        reason,
    })?;
    Ok(())
}

fn decode_opt(value: &mut Option<String>, element: &'static str) -> Result<(), XmlParseError> {
    value.as_mut().map_or(Ok(()), |v| decode(v, element))
}

impl ListBucketResult {
    /// Decodes every url-encoded field in place (called after parsing when `EncodingType` is `url`).
    fn url_decode_fields(&mut self) -> Result<(), XmlParseError> {
        let header = &mut self.header;
        decode(&mut header.prefix, "Prefix")?;
        decode_opt(&mut header.delimiter, "Delimiter")?;
        match &mut header.version {
            ListVersion::V1 {
                marker,
                next_marker,
            } => {
                decode(marker, "Marker")?;
                decode_opt(next_marker, "NextMarker")?;
            }
            ListVersion::V2 { start_after, .. } => decode_opt(start_after, "StartAfter")?,
        }
        for entry in &mut self.contents {
            decode(&mut entry.key, "Key")?;
        }
        for prefix in &mut self.common_prefixes {
            decode(prefix, "Prefix")?;
        }
        Ok(())
    }
}

impl XmlDocument for ListBucketResult {
    const ROOT: &'static str = ROOT;

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        write_list_bucket_result(
            out,
            &self.header,
            &self.contents,
            self.common_prefixes.iter().map(String::as_str),
        )
    }

    /// Parses either version. A document with `KeyCount`, `ContinuationToken`, `NextContinuationToken`
    /// or `StartAfter` is V2; otherwise V1. Url-encoded fields are decoded when `EncodingType` is `url`.
    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, ROOT, |r| {
            let mut name = None;
            let mut prefix = String::new();
            let mut delimiter = None;
            let mut max_keys = 0;
            let mut is_truncated = false;
            let mut encoding_type = None;
            let (mut marker, mut next_marker) = (String::new(), None);
            let mut key_count = None;
            let (mut token, mut next_token, mut start_after) = (None, None, None);
            let mut contents = Vec::new();
            let mut common_prefixes = Vec::new();
            r.children(|r, element| {
                match element {
                    b"Name" => name = Some(r.text("Name")?),
                    b"Prefix" => prefix = r.text("Prefix")?,
                    b"Delimiter" => delimiter = Some(r.text("Delimiter")?),
                    b"MaxKeys" => max_keys = r.u32("MaxKeys")?,
                    b"IsTruncated" => is_truncated = r.boolean("IsTruncated")?,
                    b"EncodingType" => {
                        let text = r.text("EncodingType")?;
                        encoding_type =
                            Some(text.parse().map_err(|()| XmlParseError::InvalidValue {
                                element: "EncodingType",
                                value: text.clone(),
                                reason: "the only encoding type is url",
                            })?);
                    }
                    b"Marker" => marker = r.text("Marker")?,
                    b"NextMarker" => next_marker = Some(r.text("NextMarker")?),
                    b"KeyCount" => key_count = Some(r.u32("KeyCount")?),
                    b"ContinuationToken" => token = Some(r.text("ContinuationToken")?),
                    b"NextContinuationToken" => {
                        next_token = Some(r.text("NextContinuationToken")?);
                    }
                    b"StartAfter" => start_after = Some(r.text("StartAfter")?),
                    b"Contents" => {
                        check_room(
                            contents.len() + common_prefixes.len(),
                            MAX_LIST_ENTRIES,
                            "Contents",
                        )?;
                        contents.push(parse_entry(r)?);
                    }
                    b"CommonPrefixes" => {
                        check_room(
                            contents.len() + common_prefixes.len(),
                            MAX_LIST_ENTRIES,
                            "CommonPrefixes",
                        )?;
                        let mut prefix = None;
                        r.children(|r, element| {
                            if element == b"Prefix" {
                                prefix = Some(r.text("Prefix")?);
                            }
                            Ok(())
                        })?;
                        common_prefixes.push(required(prefix, "CommonPrefixes", "Prefix")?);
                    }
                    _ => {}
                }
                Ok(())
            })?;
            let is_v2 = key_count.is_some()
                || token.is_some()
                || next_token.is_some()
                || start_after.is_some();
            let version = if is_v2 {
                ListVersion::V2 {
                    key_count: key_count.unwrap_or((contents.len() + common_prefixes.len()) as u32),
                    continuation_token: token,
                    next_continuation_token: next_token,
                    start_after,
                }
            } else {
                ListVersion::V1 {
                    marker,
                    next_marker,
                }
            };
            let mut result = ListBucketResult {
                header: ListBucketHeader {
                    name: required(name, ROOT, "Name")?,
                    prefix,
                    delimiter,
                    max_keys,
                    is_truncated,
                    encoding_type,
                    version,
                },
                contents,
                common_prefixes,
            };
            if encoding_type == Some(EncodingType::Url) {
                result.url_decode_fields()?;
            }
            Ok(result)
        })
    }
}
