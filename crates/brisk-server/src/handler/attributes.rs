//! GetObjectAttributes: an object's attributes from its record alone, without opening its body.

use brisk_wire::xml::ChecksumFields;

use super::multipart::completed_checksum;
use super::{Request, blocking};
use crate::error::S3Error;
use crate::exchange::{Exchange, set};
use crate::objects::check_version_id;

/// The attributes GetObjectAttributes can name in `x-amz-object-attributes`.
const OBJECT_ATTRIBUTES: [&str; 5] = [
    "ETag",
    "Checksum",
    "ObjectParts",
    "StorageClass",
    "ObjectSize",
];

/// GetObjectAttributes: the attributes named in `x-amz-object-attributes` (at least one, each one
/// of [`OBJECT_ATTRIBUTES`]), from the object's record alone. `ObjectParts` is there for a
/// multipart object: its part count and a page of parts (`x-amz-part-number-marker`,
/// `x-amz-max-parts`, at most 1,000) with each part's size and checksum.
pub(super) async fn object_attributes(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    use brisk_wire::xml::{AttributesPart, AttributesParts, ObjectAttributes as Attributes};
    check_version_id(r.route.query.get("versionId"), &r.route.key)?;
    let h = r.head.headers();
    let named: Vec<&str> = h
        .get_all("x-amz-object-attributes")
        .filter_map(|v| std::str::from_utf8(v).ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if named.is_empty() {
        return Err(S3Error::invalid_request(
            "Missing required header for this request: x-amz-object-attributes",
        ));
    }
    if let Some(unknown) = named.iter().find(|a| !OBJECT_ATTRIBUTES.contains(a)) {
        return Err(S3Error::invalid_argument(format!(
            "Invalid attribute name specified: {unknown}"
        )));
    }
    let number = |name: &str, default: u32| -> Result<u32, S3Error> {
        h.get_str(name).map_or(Ok(default), |v| {
            v.trim()
                .parse()
                .map_err(|_| S3Error::invalid_argument(format!("{name} {v:?} is not a number")))
        })
    };
    let max_parts = number("x-amz-max-parts", 1000)?.min(1000);
    let marker = number("x-amz-part-number-marker", 0)?;
    let info = blocking(|| r.shared.store.head_object(&r.route.bucket, &r.route.key))?;
    let wants = |name: &str| named.contains(&name);
    let algorithm = info.checksum.as_ref().map(|c| c.algorithm);
    let object_parts = (wants("ObjectParts") && !info.parts.is_empty()).then(|| {
        let after = usize::try_from(marker).unwrap_or(usize::MAX);
        let page: Vec<AttributesPart> = info
            .parts
            .iter()
            .enumerate()
            .skip(after)
            .take(max_parts as usize)
            .map(|(index, part)| {
                let mut checksums = ChecksumFields::default();
                if let (Some(algorithm), Some(value)) = (algorithm, &part.checksum) {
                    checksums.set(algorithm, value.as_str());
                }
                AttributesPart {
                    part_number: index as u32 + 1,
                    size: part.size,
                    checksums,
                }
            })
            .collect();
        let last = page.last().map(|p| p.part_number);
        let is_truncated = last.is_some_and(|n| (n as usize) < info.parts.len());
        AttributesParts {
            parts_count: info.parts.len() as u32,
            part_number_marker: marker,
            next_part_number_marker: last.filter(|_| is_truncated),
            max_parts,
            is_truncated,
            parts: page,
        }
    });
    let doc = Attributes {
        etag: wants("ETag").then(|| info.etag.trim_matches('"').to_owned()),
        checksum: info
            .checksum
            .as_ref()
            .filter(|_| wants("Checksum"))
            .map(|c| completed_checksum(Some(c)))
            .and_then(|(fields, kind)| Some((fields, kind?))),
        object_parts,
        storage_class: wants("StorageClass").then(|| "STANDARD".to_owned()),
        object_size: wants("ObjectSize").then_some(info.size),
    };
    x.xml.clear();
    brisk_wire::xml::write_object_attributes(&mut x.xml, &doc)
        .map_err(|e| S3Error::invalid_argument(e.to_string()))?;
    x.begin(200, r.request_id);
    set(
        x.headers(),
        "last-modified",
        &httpdate::fmt_http_date(info.last_modified),
    );
    x.send_xml_buffer().await
}
