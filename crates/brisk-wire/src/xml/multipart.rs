//! Multipart uploads (Initiate, Complete, ListParts, ListMultipartUploads) and the copy results
//! (CopyObject, UploadPartCopy), which share the `Checksum*` fields.

use std::io::Write;

use time::OffsetDateTime;

use super::reader::{XmlReader, check_room, required};
use super::values::{EncodingType, Owner, url_decode};
use super::writer::XmlWriter;
use super::{
    MAX_COMPLETE_PARTS, MAX_LIST_ENTRIES, S3_NAMESPACE, XmlDocument, XmlParseError, XmlWriteError,
};
use crate::checksum::{ChecksumAlgorithm, ChecksumType};

/// The `ChecksumCRC32` ... `ChecksumSHA256` elements of a part or object, as text: base64 for a part or
/// a full-object checksum, `<base64>-<parts>` for a composite one (parse them with
/// [`ChecksumValue`](crate::checksum::ChecksumValue) or
/// [`MultipartChecksum`](crate::checksum::MultipartChecksum)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChecksumFields {
    pub crc32: Option<String>,
    pub crc32c: Option<String>,
    pub crc64nvme: Option<String>,
    pub sha1: Option<String>,
    pub sha256: Option<String>,
}

impl ChecksumFields {
    /// The value of `algorithm`'s element.
    pub fn get(&self, algorithm: ChecksumAlgorithm) -> Option<&str> {
        self.slot(algorithm).as_deref()
    }

    /// Sets `algorithm`'s element.
    pub fn set(&mut self, algorithm: ChecksumAlgorithm, value: impl Into<String>) {
        *self.slot_mut(algorithm) = Some(value.into());
    }

    fn slot(&self, algorithm: ChecksumAlgorithm) -> &Option<String> {
        match algorithm {
            ChecksumAlgorithm::Crc32 => &self.crc32,
            ChecksumAlgorithm::Crc32c => &self.crc32c,
            ChecksumAlgorithm::Crc64Nvme => &self.crc64nvme,
            ChecksumAlgorithm::Sha1 => &self.sha1,
            ChecksumAlgorithm::Sha256 => &self.sha256,
        }
    }

    fn slot_mut(&mut self, algorithm: ChecksumAlgorithm) -> &mut Option<String> {
        match algorithm {
            ChecksumAlgorithm::Crc32 => &mut self.crc32,
            ChecksumAlgorithm::Crc32c => &mut self.crc32c,
            ChecksumAlgorithm::Crc64Nvme => &mut self.crc64nvme,
            ChecksumAlgorithm::Sha1 => &mut self.sha1,
            ChecksumAlgorithm::Sha256 => &mut self.sha256,
        }
    }

    pub(super) fn write<W: Write>(&self, w: &mut XmlWriter<W>) -> Result<(), XmlWriteError> {
        for algorithm in ChecksumAlgorithm::ALL {
            w.opt_text(algorithm.xml_element(), self.get(algorithm))?;
        }
        Ok(())
    }

    /// Reads the element `name` if it is a checksum element; returns whether it was.
    fn read(&mut self, r: &mut XmlReader<'_>, name: &[u8]) -> Result<bool, XmlParseError> {
        for algorithm in ChecksumAlgorithm::ALL {
            if name == algorithm.xml_element().as_bytes() {
                *self.slot_mut(algorithm) = Some(r.text(algorithm.xml_element())?);
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The response of CreateMultipartUpload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InitiateMultipartUploadResult {
    pub bucket: String,
    pub key: String,
    pub upload_id: String,
}

impl XmlDocument for InitiateMultipartUploadResult {
    const ROOT: &'static str = "InitiateMultipartUploadResult";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        w.text("Bucket", &self.bucket)?;
        w.text("Key", &self.key)?;
        w.text("UploadId", &self.upload_id)?;
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let (mut bucket, mut key, mut upload_id) = (String::new(), String::new(), None);
            r.children(|r, name| {
                match name {
                    b"Bucket" => bucket = r.text("Bucket")?,
                    b"Key" => key = r.text("Key")?,
                    b"UploadId" => upload_id = Some(r.text("UploadId")?),
                    _ => {}
                }
                Ok(())
            })?;
            Ok(Self {
                bucket,
                key,
                upload_id: required(upload_id, Self::ROOT, "UploadId")?,
            })
        })
    }
}

/// One part named in a CompleteMultipartUpload request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompletedPart {
    pub part_number: u32,
    /// The part's ETag as UploadPart returned it (usually quoted).
    pub etag: String,
    pub checksums: ChecksumFields,
}

/// The body of CompleteMultipartUpload: at least one and at most [`MAX_COMPLETE_PARTS`] parts. Their
/// order is not checked here (S3 answers `InvalidPartOrder`, a different error, for parts out of order).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompleteMultipartUpload {
    pub parts: Vec<CompletedPart>,
}

impl XmlDocument for CompleteMultipartUpload {
    const ROOT: &'static str = "CompleteMultipartUpload";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        for part in &self.parts {
            w.start("Part")?;
            w.text("ETag", &part.etag)?;
            part.checksums.write(&mut w)?;
            w.number("PartNumber", part.part_number.into())?;
            w.end("Part")?;
        }
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let mut parts = Vec::new();
            r.children(|r, name| {
                if name != b"Part" {
                    return Ok(());
                }
                check_room(parts.len(), MAX_COMPLETE_PARTS, "Part")?;
                let (mut number, mut etag) = (None, None);
                let mut checksums = ChecksumFields::default();
                r.children(|r, name| {
                    match name {
                        b"PartNumber" => number = Some(r.u32("PartNumber")?),
                        b"ETag" => etag = Some(r.text("ETag")?),
                        other => {
                            checksums.read(r, other)?;
                        }
                    }
                    Ok(())
                })?;
                parts.push(CompletedPart {
                    part_number: required(number, "Part", "PartNumber")?,
                    etag: required(etag, "Part", "ETag")?,
                    checksums,
                });
                Ok(())
            })?;
            if parts.is_empty() {
                return Err(XmlParseError::MissingElement {
                    parent: Self::ROOT,
                    element: "Part",
                });
            }
            Ok(Self { parts })
        })
    }
}

/// The response of CompleteMultipartUpload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompleteMultipartUploadResult {
    pub location: String,
    pub bucket: String,
    pub key: String,
    /// The multipart ETag (`"<hex>-<parts>"`).
    pub etag: String,
    pub checksums: ChecksumFields,
    pub checksum_type: Option<ChecksumType>,
}

impl XmlDocument for CompleteMultipartUploadResult {
    const ROOT: &'static str = "CompleteMultipartUploadResult";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        w.text("Location", &self.location)?;
        w.text("Bucket", &self.bucket)?;
        w.text("Key", &self.key)?;
        w.text("ETag", &self.etag)?;
        self.checksums.write(&mut w)?;
        if let Some(t) = self.checksum_type {
            w.text("ChecksumType", t.s3_name())?;
        }
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let mut out = Self::default();
            r.children(|r, name| {
                match name {
                    b"Location" => out.location = r.text("Location")?,
                    b"Bucket" => out.bucket = r.text("Bucket")?,
                    b"Key" => out.key = r.text("Key")?,
                    b"ETag" => out.etag = r.text("ETag")?,
                    b"ChecksumType" => out.checksum_type = r.lenient("ChecksumType")?,
                    other => {
                        out.checksums.read(r, other)?;
                    }
                }
                Ok(())
            })?;
            Ok(out)
        })
    }
}

/// One part of a ListParts response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartEntry {
    pub part_number: u32,
    pub last_modified: OffsetDateTime,
    pub etag: String,
    pub size: u64,
    pub checksums: ChecksumFields,
}

/// The response of ListParts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListPartsResult {
    pub bucket: String,
    pub key: String,
    pub upload_id: String,
    pub part_number_marker: Option<u32>,
    pub next_part_number_marker: Option<u32>,
    pub max_parts: u32,
    pub is_truncated: bool,
    pub initiator: Option<Owner>,
    pub owner: Option<Owner>,
    pub storage_class: Option<String>,
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    pub checksum_type: Option<ChecksumType>,
    pub parts: Vec<PartEntry>,
}

impl XmlDocument for ListPartsResult {
    const ROOT: &'static str = "ListPartsResult";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        w.text("Bucket", &self.bucket)?;
        w.text("Key", &self.key)?;
        w.text("UploadId", &self.upload_id)?;
        if let Some(marker) = self.part_number_marker {
            w.number("PartNumberMarker", marker.into())?;
        }
        if let Some(marker) = self.next_part_number_marker {
            w.number("NextPartNumberMarker", marker.into())?;
        }
        w.number("MaxParts", self.max_parts.into())?;
        w.boolean("IsTruncated", self.is_truncated)?;
        for part in &self.parts {
            w.start("Part")?;
            w.number("PartNumber", part.part_number.into())?;
            w.timestamp("LastModified", part.last_modified)?;
            w.text("ETag", &part.etag)?;
            w.number("Size", part.size)?;
            part.checksums.write(&mut w)?;
            w.end("Part")?;
        }
        if let Some(initiator) = &self.initiator {
            w.owner("Initiator", initiator)?;
        }
        if let Some(owner) = &self.owner {
            w.owner("Owner", owner)?;
        }
        w.opt_text("StorageClass", self.storage_class.as_deref())?;
        if let Some(algorithm) = self.checksum_algorithm {
            w.text("ChecksumAlgorithm", algorithm.s3_name())?;
        }
        if let Some(t) = self.checksum_type {
            w.text("ChecksumType", t.s3_name())?;
        }
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let mut out = Self::default();
            r.children(|r, name| {
                match name {
                    b"Bucket" => out.bucket = r.text("Bucket")?,
                    b"Key" => out.key = r.text("Key")?,
                    b"UploadId" => out.upload_id = r.text("UploadId")?,
                    b"PartNumberMarker" => {
                        out.part_number_marker = Some(r.u32("PartNumberMarker")?);
                    }
                    b"NextPartNumberMarker" => {
                        out.next_part_number_marker = Some(r.u32("NextPartNumberMarker")?);
                    }
                    b"MaxParts" => out.max_parts = r.u32("MaxParts")?,
                    b"IsTruncated" => out.is_truncated = r.boolean("IsTruncated")?,
                    b"Initiator" => out.initiator = Some(r.owner("Initiator")?),
                    b"Owner" => out.owner = Some(r.owner("Owner")?),
                    b"StorageClass" => out.storage_class = Some(r.text("StorageClass")?),
                    b"ChecksumAlgorithm" => {
                        out.checksum_algorithm = r.lenient("ChecksumAlgorithm")?
                    }
                    b"ChecksumType" => out.checksum_type = r.lenient("ChecksumType")?,
                    b"Part" => {
                        check_room(out.parts.len(), MAX_LIST_ENTRIES, "Part")?;
                        out.parts.push(parse_part(r)?);
                    }
                    _ => {}
                }
                Ok(())
            })?;
            Ok(out)
        })
    }
}

fn parse_part(r: &mut XmlReader<'_>) -> Result<PartEntry, XmlParseError> {
    let (mut number, mut last_modified, mut size) = (None, None, None);
    let mut etag = String::new();
    let mut checksums = ChecksumFields::default();
    r.children(|r, name| {
        match name {
            b"PartNumber" => number = Some(r.u32("PartNumber")?),
            b"LastModified" => last_modified = Some(r.timestamp("LastModified")?),
            b"ETag" => etag = r.text("ETag")?,
            b"Size" => size = Some(r.u64("Size")?),
            other => {
                checksums.read(r, other)?;
            }
        }
        Ok(())
    })?;
    Ok(PartEntry {
        part_number: required(number, "Part", "PartNumber")?,
        last_modified: required(last_modified, "Part", "LastModified")?,
        etag,
        size: required(size, "Part", "Size")?,
        checksums,
    })
}

/// One upload in progress, in a ListMultipartUploads response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadEntry {
    pub key: String,
    pub upload_id: String,
    pub initiated: OffsetDateTime,
    pub storage_class: Option<String>,
    pub initiator: Option<Owner>,
    pub owner: Option<Owner>,
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    pub checksum_type: Option<ChecksumType>,
}

/// The response of ListMultipartUploads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListMultipartUploadsResult {
    pub bucket: String,
    /// The `key-marker` of the request (empty when none).
    pub key_marker: String,
    pub upload_id_marker: String,
    pub next_key_marker: Option<String>,
    pub next_upload_id_marker: Option<String>,
    pub prefix: Option<String>,
    pub delimiter: Option<String>,
    pub max_uploads: u32,
    pub is_truncated: bool,
    /// When `Some(Url)`, keys, prefixes, markers and the delimiter are percent-encoded on the wire.
    pub encoding_type: Option<EncodingType>,
    pub uploads: Vec<UploadEntry>,
    pub common_prefixes: Vec<String>,
}

impl XmlDocument for ListMultipartUploadsResult {
    const ROOT: &'static str = "ListMultipartUploadsResult";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let enc = self.encoding_type;
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        w.text("Bucket", &self.bucket)?;
        w.key_text("KeyMarker", &self.key_marker, enc)?;
        w.text("UploadIdMarker", &self.upload_id_marker)?;
        w.opt_key_text("NextKeyMarker", self.next_key_marker.as_deref(), enc)?;
        w.opt_text("NextUploadIdMarker", self.next_upload_id_marker.as_deref())?;
        w.opt_key_text("Prefix", self.prefix.as_deref(), enc)?;
        w.opt_key_text("Delimiter", self.delimiter.as_deref(), enc)?;
        w.number("MaxUploads", self.max_uploads.into())?;
        if let Some(encoding) = enc {
            w.text("EncodingType", encoding.as_str())?;
        }
        w.boolean("IsTruncated", self.is_truncated)?;
        for upload in &self.uploads {
            w.start("Upload")?;
            w.key_text("Key", &upload.key, enc)?;
            w.text("UploadId", &upload.upload_id)?;
            if let Some(initiator) = &upload.initiator {
                w.owner("Initiator", initiator)?;
            }
            if let Some(owner) = &upload.owner {
                w.owner("Owner", owner)?;
            }
            w.opt_text("StorageClass", upload.storage_class.as_deref())?;
            w.timestamp("Initiated", upload.initiated)?;
            if let Some(algorithm) = upload.checksum_algorithm {
                w.text("ChecksumAlgorithm", algorithm.s3_name())?;
            }
            if let Some(t) = upload.checksum_type {
                w.text("ChecksumType", t.s3_name())?;
            }
            w.end("Upload")?;
        }
        for prefix in &self.common_prefixes {
            w.start("CommonPrefixes")?;
            w.key_text("Prefix", prefix, enc)?;
            w.end("CommonPrefixes")?;
        }
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        let mut out = XmlReader::document(input, Self::ROOT, |r| {
            let mut out = Self::default();
            r.children(|r, name| {
                let entries = out.uploads.len() + out.common_prefixes.len();
                match name {
                    b"Bucket" => out.bucket = r.text("Bucket")?,
                    b"KeyMarker" => out.key_marker = r.text("KeyMarker")?,
                    b"UploadIdMarker" => out.upload_id_marker = r.text("UploadIdMarker")?,
                    b"NextKeyMarker" => out.next_key_marker = Some(r.text("NextKeyMarker")?),
                    b"NextUploadIdMarker" => {
                        out.next_upload_id_marker = Some(r.text("NextUploadIdMarker")?);
                    }
                    b"Prefix" => out.prefix = Some(r.text("Prefix")?),
                    b"Delimiter" => out.delimiter = Some(r.text("Delimiter")?),
                    b"MaxUploads" => out.max_uploads = r.u32("MaxUploads")?,
                    b"IsTruncated" => out.is_truncated = r.boolean("IsTruncated")?,
                    b"EncodingType" => {
                        let text = r.text("EncodingType")?;
                        out.encoding_type =
                            Some(text.parse().map_err(|()| XmlParseError::InvalidValue {
                                element: "EncodingType",
                                value: text.clone(),
                                reason: "the only encoding type is url",
                            })?);
                    }
                    b"Upload" => {
                        check_room(entries, MAX_LIST_ENTRIES, "Upload")?;
                        out.uploads.push(parse_upload(r)?);
                    }
                    b"CommonPrefixes" => {
                        check_room(entries, MAX_LIST_ENTRIES, "CommonPrefixes")?;
                        let mut prefix = None;
                        r.children(|r, name| {
                            if name == b"Prefix" {
                                prefix = Some(r.text("Prefix")?);
                            }
                            Ok(())
                        })?;
                        out.common_prefixes
                            .push(required(prefix, "CommonPrefixes", "Prefix")?);
                    }
                    _ => {}
                }
                Ok(())
            })?;
            Ok(out)
        })?;
        if out.encoding_type == Some(EncodingType::Url) {
            let decode = |value: &mut String, element: &'static str| {
                *value = url_decode(value).map_err(|reason| XmlParseError::InvalidValue {
                    element,
                    value: value.clone(),
                    reason,
                })?;
                Ok::<(), XmlParseError>(())
            };
            decode(&mut out.key_marker, "KeyMarker")?;
            for (value, element) in [
                (&mut out.next_key_marker, "NextKeyMarker"),
                (&mut out.prefix, "Prefix"),
                (&mut out.delimiter, "Delimiter"),
            ] {
                if let Some(value) = value {
                    decode(value, element)?;
                }
            }
            for upload in &mut out.uploads {
                decode(&mut upload.key, "Key")?;
            }
            for prefix in &mut out.common_prefixes {
                decode(prefix, "Prefix")?;
            }
        }
        Ok(out)
    }
}

fn parse_upload(r: &mut XmlReader<'_>) -> Result<UploadEntry, XmlParseError> {
    let (mut key, mut upload_id, mut initiated) = (None, None, None);
    let mut entry = UploadEntry {
        key: String::new(),
        upload_id: String::new(),
        initiated: OffsetDateTime::UNIX_EPOCH,
        storage_class: None,
        initiator: None,
        owner: None,
        checksum_algorithm: None,
        checksum_type: None,
    };
    r.children(|r, name| {
        match name {
            b"Key" => key = Some(r.text("Key")?),
            b"UploadId" => upload_id = Some(r.text("UploadId")?),
            b"Initiated" => initiated = Some(r.timestamp("Initiated")?),
            b"StorageClass" => entry.storage_class = Some(r.text("StorageClass")?),
            b"Initiator" => entry.initiator = Some(r.owner("Initiator")?),
            b"Owner" => entry.owner = Some(r.owner("Owner")?),
            b"ChecksumAlgorithm" => entry.checksum_algorithm = r.lenient("ChecksumAlgorithm")?,
            b"ChecksumType" => entry.checksum_type = r.lenient("ChecksumType")?,
            _ => {}
        }
        Ok(())
    })?;
    entry.key = required(key, "Upload", "Key")?;
    entry.upload_id = required(upload_id, "Upload", "UploadId")?;
    entry.initiated = required(initiated, "Upload", "Initiated")?;
    Ok(entry)
}

/// The response of CopyObject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyObjectResult {
    pub etag: String,
    pub last_modified: OffsetDateTime,
    pub checksums: ChecksumFields,
    pub checksum_type: Option<ChecksumType>,
}

/// The response of UploadPartCopy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyPartResult {
    pub etag: String,
    pub last_modified: OffsetDateTime,
    pub checksums: ChecksumFields,
}

/// The fields both copy results share, parsed once.
struct CopyFields {
    etag: String,
    last_modified: OffsetDateTime,
    checksums: ChecksumFields,
    checksum_type: Option<ChecksumType>,
}

fn write_copy<W: Write>(
    out: W,
    root: &'static str,
    etag: &str,
    last_modified: OffsetDateTime,
    checksums: &ChecksumFields,
    checksum_type: Option<ChecksumType>,
) -> Result<W, XmlWriteError> {
    let mut w = XmlWriter::new(out)?;
    w.root(root, Some(S3_NAMESPACE))?;
    w.timestamp("LastModified", last_modified)?;
    w.text("ETag", etag)?;
    if let Some(t) = checksum_type {
        w.text("ChecksumType", t.s3_name())?;
    }
    checksums.write(&mut w)?;
    w.finish(root)
}

fn parse_copy(input: &[u8], root: &'static str) -> Result<CopyFields, XmlParseError> {
    XmlReader::document(input, root, |r| {
        let (mut etag, mut last_modified) = (None, None);
        let mut checksums = ChecksumFields::default();
        let mut checksum_type = None;
        r.children(|r, name| {
            match name {
                b"ETag" => etag = Some(r.text("ETag")?),
                b"LastModified" => last_modified = Some(r.timestamp("LastModified")?),
                b"ChecksumType" => checksum_type = r.lenient("ChecksumType")?,
                other => {
                    checksums.read(r, other)?;
                }
            }
            Ok(())
        })?;
        Ok(CopyFields {
            etag: required(etag, root, "ETag")?,
            last_modified: required(last_modified, root, "LastModified")?,
            checksums,
            checksum_type,
        })
    })
}

impl XmlDocument for CopyObjectResult {
    const ROOT: &'static str = "CopyObjectResult";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        write_copy(
            out,
            Self::ROOT,
            &self.etag,
            self.last_modified,
            &self.checksums,
            self.checksum_type,
        )
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        let f = parse_copy(input, Self::ROOT)?;
        Ok(Self {
            etag: f.etag,
            last_modified: f.last_modified,
            checksums: f.checksums,
            checksum_type: f.checksum_type,
        })
    }
}

impl XmlDocument for CopyPartResult {
    const ROOT: &'static str = "CopyPartResult";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        write_copy(
            out,
            Self::ROOT,
            &self.etag,
            self.last_modified,
            &self.checksums,
            None,
        )
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        let f = parse_copy(input, Self::ROOT)?;
        Ok(Self {
            etag: f.etag,
            last_modified: f.last_modified,
            checksums: f.checksums,
        })
    }
}
