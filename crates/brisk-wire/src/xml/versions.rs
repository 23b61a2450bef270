//! `ListVersionsResult`, the response of ListObjectVersions, for a store that keeps one version of
//! each key: every object is its key's only version, `null` as S3 names the version of an object
//! in a bucket that never had versioning, and the latest; there are no delete markers. Tools that
//! empty or inventory a bucket through versions (s3-tests, Terraform's `force_destroy`, `aws s3api
//! list-object-versions`) then work on it as on any unversioned S3 bucket.

use std::io::Write;

use super::listing::{ObjectEntry, write_common_prefixes};
use super::values::EncodingType;
use super::writer::XmlWriter;
use super::{S3_NAMESPACE, XmlWriteError};

const ROOT: &str = "ListVersionsResult";

/// The version id S3 gives an object in a bucket without versioning.
pub const NULL_VERSION_ID: &str = "null";

/// Everything of a ListObjectVersions page but its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListVersionsHeader {
    /// The bucket.
    pub name: String,
    /// The `prefix` of the request (empty when none; S3 always writes the element).
    pub prefix: String,
    /// The `key-marker` of the request (empty when none).
    pub key_marker: String,
    /// The `version-id-marker` of the request (empty when none).
    pub version_id_marker: String,
    /// Where the next page starts, when truncated: the last key or common prefix of this one.
    pub next_key_marker: Option<String>,
    pub delimiter: Option<String>,
    pub max_keys: u32,
    pub is_truncated: bool,
    /// When `Some(Url)`, keys, prefixes, markers and the delimiter are percent-encoded on the wire.
    pub encoding_type: Option<EncodingType>,
}

/// Writes a ListObjectVersions page: each of `versions` as the `null`, latest version of its key,
/// then the common prefixes. A truncated page names `null` as its next version-id marker.
pub fn write_list_versions_result<'e, W: Write>(
    out: W,
    header: &ListVersionsHeader,
    versions: impl IntoIterator<Item = &'e ObjectEntry>,
    common_prefixes: impl IntoIterator<Item = &'e str>,
) -> Result<W, XmlWriteError> {
    let enc = header.encoding_type;
    let mut w = XmlWriter::new(out)?;
    w.root(ROOT, Some(S3_NAMESPACE))?;
    w.text("Name", &header.name)?;
    w.key_text("Prefix", &header.prefix, enc)?;
    w.key_text("KeyMarker", &header.key_marker, enc)?;
    w.text("VersionIdMarker", &header.version_id_marker)?;
    if let Some(next) = &header.next_key_marker {
        w.key_text("NextKeyMarker", next, enc)?;
        w.text("NextVersionIdMarker", NULL_VERSION_ID)?;
    }
    w.number("MaxKeys", u64::from(header.max_keys))?;
    w.opt_key_text("Delimiter", header.delimiter.as_deref(), enc)?;
    if let Some(encoding) = enc {
        w.text("EncodingType", encoding.as_str())?;
    }
    w.boolean("IsTruncated", header.is_truncated)?;
    for entry in versions {
        w.start("Version")?;
        w.key_text("Key", &entry.key, enc)?;
        w.text("VersionId", NULL_VERSION_ID)?;
        w.boolean("IsLatest", true)?;
        w.timestamp("LastModified", entry.last_modified)?;
        w.text("ETag", &entry.etag)?;
        w.number("Size", entry.size)?;
        if let Some(owner) = &entry.owner {
            w.owner("Owner", owner)?;
        }
        w.opt_text("StorageClass", entry.storage_class.as_deref())?;
        w.end("Version")?;
    }
    write_common_prefixes(&mut w, common_prefixes, enc)?;
    w.finish(ROOT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::OffsetDateTime;

    #[test]
    fn every_object_is_the_null_latest_version_of_its_key() {
        let entry = ObjectEntry {
            key: "dir/a b".to_owned(),
            last_modified: OffsetDateTime::UNIX_EPOCH,
            etag: "\"e\"".to_owned(),
            size: 3,
            storage_class: Some("STANDARD".to_owned()),
            checksum_algorithm: None,
            checksum_type: None,
            owner: None,
        };
        let header = ListVersionsHeader {
            name: "bkt".to_owned(),
            prefix: "dir/".to_owned(),
            key_marker: String::new(),
            version_id_marker: String::new(),
            next_key_marker: Some("dir/a b".to_owned()),
            delimiter: None,
            max_keys: 1,
            is_truncated: true,
            encoding_type: Some(EncodingType::Url),
        };
        let xml = write_list_versions_result(Vec::new(), &header, [&entry], [])
            .map(String::from_utf8)
            .unwrap()
            .unwrap();
        for part in [
            "<ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
            "<NextKeyMarker>dir/a%20b</NextKeyMarker><NextVersionIdMarker>null</NextVersionIdMarker>",
            "<Version><Key>dir/a%20b</Key><VersionId>null</VersionId><IsLatest>true</IsLatest>",
            "<Size>3</Size>",
            "<IsTruncated>true</IsTruncated>",
        ] {
            assert!(xml.contains(part), "{part} not in {xml}");
        }
    }
}
