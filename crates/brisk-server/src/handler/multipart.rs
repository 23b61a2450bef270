//! The multipart upload: CreateMultipartUpload, UploadPart, UploadPartCopy,
//! CompleteMultipartUpload, AbortMultipartUpload, ListParts and ListMultipartUploads.

use brisk_wire::S3ErrorCode;
use brisk_wire::http::Headers;
use brisk_wire::xml::{
    ChecksumFields, CompleteMultipartUpload, CompleteMultipartUploadResult, CopyPartResult,
    InitiateMultipartUploadResult, ListMultipartUploadsResult, ListPartsResult, PartEntry,
    UploadEntry, XmlDocument,
};

use super::listings::{encoding_type, parse_max};
use super::objects::{receive_into_file, write_body_checksum, write_condition};
use super::{Request, blocking, owner, read_small_body_checked, xml_time};
use crate::auth::PayloadCheck;
use crate::body::{self, BodyDigests, MAX_PUT_SIZE};
use crate::error::S3Error;
use crate::exchange::{Exchange, set};
use crate::objects::{
    RangeRequest, attributes_from, copy_source_refused, parse_copy_source, refuse_what_is_not_kept,
};
use crate::store::{
    Checksum, ChecksumType, CompletedPart, ExpectedChecksum, ObjectInfo, StoreError, UploadQuery,
};

pub(super) async fn create_upload(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    refuse_what_is_not_kept(r.head.headers(), false)?;
    let attributes = attributes_from(r.head)?;
    let checksum = match body::declared_checksum(r.head)? {
        Some(declared) => {
            let algorithm = match declared {
                body::DeclaredChecksum::Compute(a) | body::DeclaredChecksum::Trailer(a) => a,
                body::DeclaredChecksum::Header(v) => v.algorithm(),
            };
            let kind = match r.head.headers().get_str("x-amz-checksum-type") {
                Some(v) => v
                    .trim()
                    .parse()
                    .map_err(|e: brisk_wire::checksum::ChecksumError| {
                        S3Error::invalid_request(e.to_string())
                    })?,
                None => algorithm.default_type(),
            };
            if !algorithm.supports(kind) {
                return Err(S3Error::invalid_request(format!(
                    "The {kind} checksum type cannot be used with the {} checksum algorithm",
                    algorithm.s3_name().to_ascii_lowercase()
                )));
            }
            Some((algorithm, kind))
        }
        None => None,
    };
    let upload_id = blocking(|| {
        r.shared
            .store
            .create_multipart_upload(&r.route.bucket, &r.route.key, attributes, checksum)
    })?;
    let doc = InitiateMultipartUploadResult {
        bucket: r.route.bucket.clone(),
        key: r.route.key.clone(),
        upload_id,
    };
    x.begin(200, r.request_id);
    if let Some((algorithm, kind)) = checksum {
        set(x.headers(), "x-amz-checksum-algorithm", algorithm.s3_name());
        set(x.headers(), "x-amz-checksum-type", kind.s3_name());
    }
    x.send_xml(&doc).await
}

fn part_number(r: &Request<'_>) -> Result<u32, S3Error> {
    let v = r
        .route
        .query
        .get("partNumber")
        .ok_or_else(|| S3Error::invalid_argument("partNumber is required with uploadId"))?;
    v.parse()
        .map_err(|_| S3Error::invalid_argument(format!("partNumber {v:?} is not a number")))
}

pub(super) async fn upload_part(x: &mut Exchange, mut r: Request<'_>) -> Result<(), S3Error> {
    let number = part_number(&r)?;
    let upload_id = r.route.query.get("uploadId").unwrap_or_default().to_owned();
    let store = &r.shared.store;
    let mut pending =
        blocking(|| store.begin_upload_part(&r.route.bucket, &r.route.key, &upload_id, number))?;
    // A part's checksum is of the upload's algorithm: S3 refuses another one, and computes it for
    // a part that declares none.
    let expected = pending.checksum_algorithm();
    if let (Some(expected), Some(declared)) = (expected, body::declared_checksum(r.head)?) {
        checksum_type_matches(expected, declared.algorithm())?;
    }
    let payload = std::mem::replace(&mut r.payload, PayloadCheck::None);
    let outcome = receive_into_file(x, &r, payload, pending.file_mut(), expected).await?;
    let checksum = outcome.checksum.as_ref().map(|c| c.to_base64());
    let info = blocking(|| pending.commit(outcome.etag.clone(), checksum))?;
    x.begin(200, r.request_id);
    set(x.headers(), "etag", &info.etag);
    write_body_checksum(x, &outcome);
    x.send_empty().await
}

/// S3's answer to a part whose checksum is not of the algorithm its upload was created with.
fn checksum_type_matches(
    expected: brisk_wire::checksum::ChecksumAlgorithm,
    sent: brisk_wire::checksum::ChecksumAlgorithm,
) -> Result<(), S3Error> {
    if expected == sent {
        return Ok(());
    }
    Err(S3Error::invalid_request(format!(
        "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
        expected.s3_name().to_ascii_lowercase(),
        sent.s3_name().to_ascii_lowercase()
    )))
}

pub(super) async fn upload_part_copy(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let number = part_number(r)?;
    let upload_id = r.route.query.get("uploadId").unwrap_or_default().to_owned();
    let h = r.head.headers();
    let (source_bucket, source_key) =
        parse_copy_source(h.get_str("x-amz-copy-source").unwrap_or_default())?;
    let store = &r.shared.store;
    // Only the source files the copied range falls in are opened.
    let plan = |info: &ObjectInfo| -> Result<_, S3Error> {
        if let Some(condition) = copy_source_refused(h, info) {
            return Err(StoreError::PreconditionFailed { condition }.into());
        }
        let span = match h.get_str("x-amz-copy-source-range") {
            Some(v) => match RangeRequest::parse(v) {
                Some(RangeRequest::From {
                    first,
                    last: Some(last),
                }) if last < info.size => first..last + 1,
                _ => {
                    return Err(S3Error::invalid_argument(format!(
                        "The x-amz-copy-source-range value {v:?} must be bytes=first-last within \
                         the source object of {} bytes",
                        info.size
                    )));
                }
            },
            None => 0..info.size,
        };
        Ok((span.clone(), span))
    };
    let (_, span, mut source) =
        blocking(|| store.open_object_span(&source_bucket, &source_key, plan))?;
    if span.end - span.start > MAX_PUT_SIZE {
        return Err(S3Error::new(
            S3ErrorCode::EntityTooLarge,
            "a copied part may be at most 5 GiB",
        ));
    }
    let mut pending =
        blocking(|| store.begin_upload_part(&r.route.bucket, &r.route.key, &upload_id, number))?;
    let md5_etag = r.shared.config.md5_etag;
    // A copied part of an upload created with a checksum algorithm gets that checksum, as S3 gives
    // it, so the object's checksum can be combined at completion.
    let mut part_checksum = pending
        .checksum_algorithm()
        .map(brisk_wire::checksum::Checksummer::new);
    let mut lent = x.take_scratch()?;
    let etag = {
        let scratch = x.scratch_slice(&mut lent);
        blocking(|| -> Result<String, S3Error> {
            source.seek(SeekFrom::Start(span.start))?;
            let mut md5 = brisk_wire::checksum::Md5::new();
            let mut crc = brisk_wire::checksum::Checksummer::new(
                brisk_wire::checksum::ChecksumAlgorithm::Crc64Nvme,
            );
            let mut left = span.end - span.start;
            while left > 0 {
                let want = usize::try_from(left)
                    .unwrap_or(usize::MAX)
                    .min(scratch.len());
                let n = source.read(&mut scratch[..want])?;
                if n == 0 {
                    return Err(S3Error::internal("source object file ended early"));
                }
                if md5_etag {
                    md5.update(&scratch[..n]);
                } else {
                    crc.update(&scratch[..n]);
                }
                if let Some(h) = &mut part_checksum {
                    h.update(&scratch[..n]);
                }
                pending.file_mut().write_all(&scratch[..n])?;
                left -= n as u64;
            }
            Ok(if md5_etag {
                md5.finalize().to_etag()
            } else {
                format!("\"{}\"", hex::encode(crc.finalize().as_bytes()))
            })
        })
    };
    x.put_scratch(lent);
    let etag = etag?;
    let part_checksum = part_checksum.map(|h| h.finalize());
    let part = blocking(|| pending.commit(etag, part_checksum.map(|c| c.to_base64())))?;
    let mut checksums = ChecksumFields::default();
    if let Some(c) = part_checksum {
        checksums.set(c.algorithm(), c.to_base64());
    }
    let doc = CopyPartResult {
        etag: part.etag,
        last_modified: xml_time(part.last_modified),
        checksums,
    };
    x.begin(200, r.request_id);
    x.send_xml(&doc).await
}

pub(super) async fn complete_upload(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
    let (shared, request_id) = (r.shared, r.request_id);
    let bucket = r.route.bucket.clone();
    let key = r.route.key.clone();
    let upload_id = r.route.query.get("uploadId").unwrap_or_default().to_owned();
    let condition = write_condition(r.head.headers())?;
    let expected = expected_object_checksum(r.head.headers())?;
    let digests = BodyDigests::for_completion(r.head, &r.payload)?;
    let body = read_small_body_checked(x, r, digests).await?;
    let request = CompleteMultipartUpload::parse(&body)?;
    let parts: Vec<CompletedPart> = request
        .parts
        .iter()
        .map(|p| CompletedPart {
            part_number: p.part_number,
            etag: p.etag.clone(),
        })
        .collect();
    let info = blocking(|| {
        match shared.store.complete_multipart_upload_if(
            &bucket,
            &key,
            &upload_id,
            &parts,
            expected.as_ref(),
            &condition,
        ) {
            // Completed before (its answer lost on the way): S3 answers the repeat with the
            // same result while the object is the one that completion made.
            Err(StoreError::NoSuchUpload(id)) => shared
                .store
                .already_completed(&bucket, &key, &parts, expected.as_ref())?
                .ok_or(StoreError::NoSuchUpload(id)),
            other => other,
        }
    })?;
    let (checksums, checksum_type) = completed_checksum(info.checksum.as_ref());
    let doc = CompleteMultipartUploadResult {
        location: format!("/{bucket}/{key}"),
        bucket,
        key,
        etag: info.etag,
        checksums,
        checksum_type,
    };
    x.begin(200, request_id);
    x.send_xml(&doc).await
}

/// The whole object's checksum a CompleteMultipartUpload declares (`x-amz-checksum-<algorithm>`,
/// and `x-amz-checksum-type` if given), to be checked against the one its parts combine into.
fn expected_object_checksum(h: &Headers) -> Result<Option<ExpectedChecksum>, S3Error> {
    let Some((algorithm, value)) = brisk_wire::checksum::ChecksumAlgorithm::ALL
        .into_iter()
        .find_map(|a| Some((a, h.get_str(a.header_name())?)))
    else {
        return Ok(None);
    };
    let checksum_type =
        match h.get_str("x-amz-checksum-type") {
            None => None,
            Some(v) => Some(v.trim().parse().map_err(
                |e: brisk_wire::checksum::ChecksumError| S3Error::invalid_request(e.to_string()),
            )?),
        };
    Ok(Some(ExpectedChecksum {
        algorithm,
        checksum_type,
        value: value.trim().to_owned(),
    }))
}

/// The completed object's checksum as CompleteMultipartUploadResult shows it.
pub(super) fn completed_checksum(
    checksum: Option<&Checksum>,
) -> (ChecksumFields, Option<ChecksumType>) {
    let mut fields = ChecksumFields::default();
    let Some(c) = checksum else {
        return (fields, None);
    };
    fields.set(c.algorithm, c.value.clone());
    (fields, Some(c.checksum_type))
}

pub(super) async fn abort_upload(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    let upload_id = r.route.query.get("uploadId").unwrap_or_default();
    blocking(|| {
        r.shared
            .store
            .abort_multipart_upload(&r.route.bucket, &r.route.key, upload_id)
    })?;
    x.begin(204, r.request_id);
    x.send_head_only().await
}

pub(super) async fn list_parts(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    let q = &r.route.query;
    let upload_id = q.get("uploadId").unwrap_or_default();
    let max_parts = parse_max(q, "max-parts", crate::store::MAX_PARTS_PER_PAGE)?;
    let marker: u32 = match q.get("part-number-marker") {
        Some(v) => v.parse().map_err(|_| {
            S3Error::invalid_argument(format!("part-number-marker {v:?} is not a number"))
        })?,
        None => 0,
    };
    let page = blocking(|| {
        r.shared
            .store
            .list_parts(&r.route.bucket, &r.route.key, upload_id, marker, max_parts)
    })?;
    // Each part's checksum is of the upload's algorithm (UploadPart refuses any other).
    let algorithm = page.checksum_algorithm;
    let doc = ListPartsResult {
        bucket: r.route.bucket.clone(),
        key: r.route.key.clone(),
        upload_id: upload_id.to_owned(),
        part_number_marker: Some(marker),
        next_part_number_marker: page.next_part_number_marker,
        max_parts: max_parts as u32,
        is_truncated: page.is_truncated,
        initiator: Some(owner()),
        owner: Some(owner()),
        storage_class: Some("STANDARD".to_owned()),
        checksum_algorithm: algorithm.map(|(a, _)| a),
        checksum_type: algorithm.map(|(_, kind)| kind),
        parts: page
            .parts
            .into_iter()
            .map(|p| {
                let mut checksums = ChecksumFields::default();
                if let (Some((a, _)), Some(value)) = (algorithm, p.checksum) {
                    checksums.set(a, value);
                }
                PartEntry {
                    part_number: p.part_number,
                    last_modified: xml_time(p.last_modified),
                    etag: p.etag,
                    size: p.size,
                    checksums,
                }
            })
            .collect(),
    };
    x.begin(200, r.request_id);
    x.send_xml(&doc).await
}

pub(super) async fn list_uploads(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    let q = &r.route.query;
    let max_uploads = parse_max(q, "max-uploads", crate::store::MAX_UPLOADS_PER_PAGE)?;
    let query = UploadQuery {
        prefix: q.get("prefix").unwrap_or_default().to_owned(),
        key_marker: q
            .get("key-marker")
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        upload_id_marker: q
            .get("upload-id-marker")
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        max_uploads,
        delimiter: q
            .get("delimiter")
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    };
    let page = blocking(|| {
        r.shared
            .store
            .list_multipart_uploads(&r.route.bucket, &query)
    })?;
    let doc = ListMultipartUploadsResult {
        bucket: r.route.bucket.clone(),
        key_marker: query.key_marker.clone().unwrap_or_default(),
        upload_id_marker: query.upload_id_marker.clone().unwrap_or_default(),
        next_key_marker: page.next_key_marker,
        next_upload_id_marker: page.next_upload_id_marker,
        prefix: Some(query.prefix.clone()),
        delimiter: query.delimiter.clone(),
        max_uploads: max_uploads as u32,
        is_truncated: page.is_truncated,
        encoding_type: encoding_type(q)?,
        uploads: page
            .uploads
            .into_iter()
            .map(|u| UploadEntry {
                key: u.key,
                upload_id: u.upload_id,
                initiated: xml_time(u.initiated),
                storage_class: Some("STANDARD".to_owned()),
                initiator: Some(owner()),
                owner: Some(owner()),
                checksum_algorithm: None,
                checksum_type: None,
            })
            .collect(),
        common_prefixes: page.common_prefixes,
    };
    x.begin(200, r.request_id);
    x.send_xml(&doc).await
}
