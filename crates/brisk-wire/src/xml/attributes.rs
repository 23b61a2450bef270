//! `GetObjectAttributesResponse`, the response of GetObjectAttributes: the attributes a request
//! named in `x-amz-object-attributes`, and for a multipart object a page of its parts (number,
//! size, checksum), so a client can check a download part by part without a GET per part.

use std::io::Write;

use super::multipart::ChecksumFields;
use super::writer::XmlWriter;
use super::{S3_NAMESPACE, XmlWriteError};
use crate::checksum::ChecksumType;

const ROOT: &str = "GetObjectAttributesResponse";

/// One part of a multipart object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributesPart {
    pub part_number: u32,
    pub size: u64,
    /// The part's checksum, when the object has per-part checksums.
    pub checksums: ChecksumFields,
}

/// A page of a multipart object's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributesParts {
    /// Parts of the object in all.
    pub parts_count: u32,
    /// The request's `x-amz-part-number-marker` (0 when none): the page starts after it.
    pub part_number_marker: u32,
    /// The last part of this page, when more follow.
    pub next_part_number_marker: Option<u32>,
    pub max_parts: u32,
    pub is_truncated: bool,
    pub parts: Vec<AttributesPart>,
}

/// The attributes asked for; `None` leaves an element out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectAttributes {
    /// The ETag, without the double quotes (as S3 writes it in this document).
    pub etag: Option<String>,
    /// The object's checksum and its type.
    pub checksum: Option<(ChecksumFields, ChecksumType)>,
    /// A multipart object's parts.
    pub object_parts: Option<AttributesParts>,
    pub storage_class: Option<String>,
    pub object_size: Option<u64>,
}

/// Writes a GetObjectAttributes response.
pub fn write_object_attributes<W: Write>(
    out: W,
    attributes: &ObjectAttributes,
) -> Result<W, XmlWriteError> {
    let mut w = XmlWriter::new(out)?;
    w.root(ROOT, Some(S3_NAMESPACE))?;
    w.opt_text("ETag", attributes.etag.as_deref())?;
    if let Some((fields, checksum_type)) = &attributes.checksum {
        w.start("Checksum")?;
        fields.write(&mut w)?;
        w.text("ChecksumType", checksum_type.s3_name())?;
        w.end("Checksum")?;
    }
    if let Some(parts) = &attributes.object_parts {
        w.start("ObjectParts")?;
        w.number("PartsCount", u64::from(parts.parts_count))?;
        w.number("PartNumberMarker", u64::from(parts.part_number_marker))?;
        if let Some(next) = parts.next_part_number_marker {
            w.number("NextPartNumberMarker", u64::from(next))?;
        }
        w.number("MaxParts", u64::from(parts.max_parts))?;
        w.boolean("IsTruncated", parts.is_truncated)?;
        for part in &parts.parts {
            w.start("Part")?;
            w.number("PartNumber", u64::from(part.part_number))?;
            w.number("Size", part.size)?;
            part.checksums.write(&mut w)?;
            w.end("Part")?;
        }
        w.end("ObjectParts")?;
    }
    w.opt_text("StorageClass", attributes.storage_class.as_deref())?;
    if let Some(size) = attributes.object_size {
        w.number("ObjectSize", size)?;
    }
    w.finish(ROOT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::ChecksumAlgorithm;

    #[test]
    fn only_the_attributes_asked_for_are_written() {
        let mut fields = ChecksumFields::default();
        fields.set(ChecksumAlgorithm::Crc32, "WgDhBQ==");
        let mut part_fields = ChecksumFields::default();
        part_fields.set(ChecksumAlgorithm::Crc32, "QoZTGg==");
        let attributes = ObjectAttributes {
            etag: Some("abc-3".to_owned()),
            checksum: Some((fields, ChecksumType::FullObject)),
            object_parts: Some(AttributesParts {
                parts_count: 3,
                part_number_marker: 1,
                next_part_number_marker: Some(2),
                max_parts: 1,
                is_truncated: true,
                parts: vec![AttributesPart {
                    part_number: 2,
                    size: 5,
                    checksums: part_fields,
                }],
            }),
            storage_class: None,
            object_size: Some(15),
        };
        let xml =
            String::from_utf8(write_object_attributes(Vec::new(), &attributes).unwrap()).unwrap();
        for part in [
            "<ETag>abc-3</ETag>",
            "<Checksum><ChecksumCRC32>WgDhBQ==</ChecksumCRC32><ChecksumType>FULL_OBJECT</ChecksumType></Checksum>",
            "<PartsCount>3</PartsCount><PartNumberMarker>1</PartNumberMarker><NextPartNumberMarker>2</NextPartNumberMarker>",
            "<Part><PartNumber>2</PartNumber><Size>5</Size><ChecksumCRC32>QoZTGg==</ChecksumCRC32></Part>",
            "<ObjectSize>15</ObjectSize>",
        ] {
            assert!(xml.contains(part), "{part} not in {xml}");
        }
        assert!(!xml.contains("StorageClass"), "{xml}");
    }
}
