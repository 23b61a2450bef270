//! The object operations: PutObject (and the body's way to its file, which UploadPart shares),
//! CopyObject, GetObject and HeadObject, DeleteObject and DeleteObjects.

use brisk_wire::S3ErrorCode;
use brisk_wire::http::Headers;
use brisk_wire::xml::{
    ChecksumFields, CopyObjectResult, Delete, DeleteError, DeleteResult, DeletedObject, XmlDocument,
};

use super::{Request, blocking, read_small_body, xml_time};
use crate::auth::PayloadCheck;
use crate::body::{self, BodyDigests, BodyOutcome, MAX_PUT_SIZE};
use crate::direct::BodyWriter;
use crate::error::S3Error;
use crate::exchange::{Exchange, set};
use crate::objects::{
    Precondition, RangeRequest, attributes_from, check_preconditions, check_version_id,
    copy_source_refused, names_the_object, parse_copy_source, part_span, refuse_what_is_not_kept,
    write_checksum_fields, write_object_fields, write_part_checksum_fields,
};
use crate::store::{Checksum, ChecksumType, NewObject, ObjectInfo, StoreError, WriteCondition};

/// Streams the request body into `file`, hashing it; returns what the digests found. With
/// `default_checksum`, a body that declares no checksum gets one of that algorithm computed.
pub(super) async fn receive_into_file(
    x: &mut Exchange,
    r: &Request<'_>,
    payload: PayloadCheck,
    file: &mut std::fs::File,
    default_checksum: Option<brisk_wire::checksum::ChecksumAlgorithm>,
) -> Result<BodyOutcome, S3Error> {
    let mut digests = BodyDigests::new(r.head, &payload, r.shared.config.md5_etag)?
        .compute_if_undeclared(default_checksum);
    let chunked = matches!(payload, PayloadCheck::Chunked(_));
    let len = body::payload_length(r.head, &x.conn, chunked, MAX_PUT_SIZE)?.ok_or_else(|| {
        S3Error::new(
            S3ErrorCode::MissingContentLength,
            "You must provide the Content-Length HTTP header",
        )
    })?;
    let mut decoder = payload.chunked_decoder(len);
    // A durable body of a stage or more skips the page cache (see `direct.rs`); smaller ones, one
    // write each, keep the path the small-PUT soak measured.
    let direct = r.shared.config.fsync && len >= r.shared.config.read_buffer_size as u64;
    let mut scratch = if direct {
        Some(x.take_scratch()?)
    } else {
        None
    };
    let stage = match &mut scratch {
        Some(lent) => x.scratch_slice(lent),
        None => &mut [],
    };
    let mut writer = BodyWriter::new(file, stage, direct);
    let received = if writer.is_staged() && decoder.is_none() {
        body::read_body_staged(&mut x.conn, &mut writer, MAX_PUT_SIZE, |data| {
            digests.update(data)
        })
        .await
    } else {
        body::read_body(
            &mut x.conn,
            decoder.as_mut(),
            &mut x.carry,
            MAX_PUT_SIZE,
            |data| {
                digests.update(data);
                writer.write(data).map_err(S3Error::from)
            },
        )
        .await
    };
    let written = received.and_then(|_| writer.finish().map_err(S3Error::from));
    if let Some(scratch) = scratch {
        x.put_scratch(scratch);
    }
    written?;
    let conn_trailers = x.conn.trailers();
    digests.finish(|name| {
        decoder
            .as_ref()
            .and_then(|d| d.trailer(name))
            .or_else(|| conn_trailers.and_then(|t| t.get_str(name)))
    })
}

fn stored_checksum(outcome: &BodyOutcome) -> Option<Checksum> {
    outcome.checksum.as_ref().map(|c| Checksum {
        algorithm: c.algorithm(),
        checksum_type: ChecksumType::FullObject,
        value: c.to_base64(),
    })
}

pub(super) fn write_body_checksum(x: &mut Exchange, outcome: &BodyOutcome) {
    if let Some(c) = &outcome.checksum {
        set(x.headers(), c.algorithm().header_name(), &c.to_base64());
    }
}

pub(super) async fn put_object(x: &mut Exchange, mut r: Request<'_>) -> Result<(), S3Error> {
    refuse_what_is_not_kept(r.head.headers(), false)?;
    let attributes = attributes_from(r.head)?;
    let condition = write_condition(r.head.headers())?;
    let store = &r.shared.store;
    if condition != WriteCondition::Always {
        // Checked before the body too, so a client waiting on `100 Continue` is refused without
        // sending it; the check that counts is the one inside the commit.
        match blocking(|| store.head_object(&r.route.bucket, &r.route.key)) {
            Ok(current) => {
                if let Some(failed) = condition.refused_by(Some(&current.etag)) {
                    return Err(StoreError::PreconditionFailed { condition: failed }.into());
                }
            }
            Err(StoreError::NoSuchKey { .. }) if condition == WriteCondition::IfAbsent => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut pending = blocking(|| store.begin_put(&r.route.bucket, &r.route.key))?;
    let payload = std::mem::replace(&mut r.payload, PayloadCheck::None);
    let outcome = receive_into_file(x, &r, payload, pending.file_mut(), None).await?;
    let new = NewObject {
        etag: outcome.etag.clone(),
        attributes,
        checksum: stored_checksum(&outcome),
    };
    let info = blocking(|| pending.commit_if(new, &condition))?;
    x.begin(200, r.request_id);
    set(x.headers(), "etag", &info.etag);
    write_body_checksum(x, &outcome);
    x.send_empty().await
}

/// The conditional-write headers of a PutObject or CompleteMultipartUpload: `If-None-Match: *`
/// (create only) or
/// `If-Match: <etag>` (replace only that version). S3 accepts no other `If-None-Match` value on a
/// write.
pub(super) fn write_condition(h: &Headers) -> Result<WriteCondition, S3Error> {
    match (h.get_str("if-none-match"), h.get_str("if-match")) {
        (None, None) => Ok(WriteCondition::Always),
        (Some(v), None) if v.trim() == "*" => Ok(WriteCondition::IfAbsent),
        (Some(_), None) => Err(S3Error::not_implemented(
            "If-None-Match on a write accepts only '*'",
        )),
        (None, Some(etag)) => Ok(WriteCondition::IfMatch(etag.trim().to_owned())),
        (Some(_), Some(_)) => Err(S3Error::not_implemented(
            "If-None-Match and If-Match together on a write",
        )),
    }
}

pub(super) async fn copy_object(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    let h = r.head.headers();
    refuse_what_is_not_kept(h, false)?;
    let (source_bucket, source_key) =
        parse_copy_source(h.get_str("x-amz-copy-source").unwrap_or_default())?;
    let replace = match h.get_str("x-amz-metadata-directive").map(str::trim) {
        None | Some("COPY") => false,
        Some("REPLACE") => true,
        Some(other) => {
            return Err(S3Error::invalid_argument(format!(
                "Unknown metadata directive {other:?}"
            )));
        }
    };
    let same = source_bucket == r.route.bucket && source_key == r.route.key;
    if same && !replace {
        return Err(S3Error::invalid_request(
            "This copy request is illegal because it is trying to copy an object to itself \
             without changing the object's metadata",
        ));
    }
    let attributes = replace.then(|| attributes_from(r.head)).transpose()?;
    let info = blocking(|| {
        r.shared.store.copy_object_if(
            &source_bucket,
            &source_key,
            &r.route.bucket,
            &r.route.key,
            attributes,
            |source| copy_source_refused(h, source),
        )
    })?;
    let doc = CopyObjectResult {
        etag: info.etag.clone(),
        last_modified: xml_time(info.last_modified),
        checksums: ChecksumFields::default(),
        checksum_type: None,
    };
    x.begin(200, r.request_id);
    x.send_xml(&doc).await
}

pub(super) async fn get_object(
    x: &mut Exchange,
    r: &Request<'_>,
    head_only: bool,
) -> Result<(), S3Error> {
    check_version_id(r.route.query.get("versionId"), &r.route.key)?;
    let h = r.head.headers();
    let part_number =
        match r.route.query.get("partNumber") {
            Some(v) => Some(v.parse::<u32>().map_err(|_| {
                S3Error::invalid_argument(format!("partNumber {v:?} is not a number"))
            })?),
            None => None,
        };
    // S3 (and MinIO) refuse the two together rather than pick one.
    if part_number.is_some() && h.get_str("range").is_some() {
        return Err(S3Error::invalid_request(
            "Cannot specify both Range header and partNumber query parameter",
        ));
    }
    // Preconditions and the range are decided on the metadata before the body is opened, so that
    // only the files the response sends are opened (none for a HEAD or a 304).
    let plan = |info: &ObjectInfo| -> Result<_, S3Error> {
        let precondition = check_preconditions(h, info)?;
        let range = if let Some(n) = part_number {
            Some(part_span(info, n)?)
        } else {
            match h.get_str("range").and_then(RangeRequest::parse) {
                Some(range) => Some(range.resolve(info.size)?),
                None => None,
            }
        };
        let read = if head_only || precondition == Precondition::NotModified {
            0..0
        } else {
            range.clone().unwrap_or(0..info.size)
        };
        Ok(((precondition, range), read))
    };
    // The lookup runs on the worker itself, not through `blocking`: it is a read of the metadata
    // tree and an open(2), which the page cache answers in microseconds, as it answers the
    // `sendfile` that follows on this same worker. `block_in_place` would hand the worker's other
    // tasks to another thread for each GET: under random 256 KiB reads at queue depth 64 that was
    // 4 times the context switches (57,000 against 13,000 in 5 s) and 65 server threads instead
    // of 3. Writes, which fsync, still go through `blocking`.
    let (info, (precondition, range), file) =
        r.shared
            .store
            .open_object_span(&r.route.bucket, &r.route.key, plan)?;
    if precondition == Precondition::NotModified {
        x.begin(304, r.request_id);
        set(x.headers(), "etag", &info.etag);
        set(
            x.headers(),
            "last-modified",
            &httpdate::fmt_http_date(info.last_modified),
        );
        return x.send_head_only().await;
    }
    // A part (or range) is a 206 with its Content-Range, even when it is the whole object, as S3
    // answers `partNumber=1` of a single-part object; an empty one (the part of an empty object)
    // has no range to name and is a 200.
    let (status, span) = match range {
        Some(span) if !span.is_empty() => (206, span),
        _ => (200, 0..info.size),
    };
    x.begin(status, r.request_id);
    let out = x.headers();
    write_object_fields(out, &info, &r.route.query);
    out.set_content_length(span.end - span.start);
    if status == 206 {
        set(
            out,
            "content-range",
            &format!("bytes {}-{}/{}", span.start, span.end - 1, info.size),
        );
    }
    // S3 sends the part count only when asked for a part of a multipart object.
    if part_number.is_some() && !info.parts.is_empty() {
        set(out, "x-amz-mp-parts-count", &info.parts_count().to_string());
    }
    if h.get_str("x-amz-checksum-mode")
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("ENABLED"))
    {
        match part_number {
            Some(n) if !info.parts.is_empty() => write_part_checksum_fields(out, &info, n),
            _ if span == (0..info.size) => write_checksum_fields(out, &info),
            _ => {}
        }
    }
    if head_only {
        return x.send_head_only().await;
    }
    x.send_body(&file, span).await
}

pub(super) async fn delete_object(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    // A version other than the one there is does not exist: deleting it deletes nothing and
    // succeeds, as deleting a missing key does.
    if names_the_object(r.route.query.get("versionId"))? {
        blocking(|| r.shared.store.delete_object(&r.route.bucket, &r.route.key))?;
    }
    x.begin(204, r.request_id);
    x.send_head_only().await
}

pub(super) async fn delete_objects(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
    let bucket = r.route.bucket.clone();
    let (shared, request_id) = (r.shared, r.request_id);
    let body = read_small_body(x, r, false).await?;
    let delete = Delete::parse(&body)?;
    // An entry naming a version other than the one there is deletes nothing and is reported
    // deleted, as DeleteObject answers it; one naming `null` deletes the object; an empty
    // version id is that entry's error, as DeleteObject's.
    let named: Vec<Result<bool, S3Error>> = delete
        .objects
        .iter()
        .map(|o| names_the_object(o.version_id.as_deref()))
        .collect();
    let keys: Vec<&str> = delete
        .objects
        .iter()
        .zip(&named)
        .filter(|(_, named)| matches!(named, Ok(true)))
        .map(|(o, _)| o.key.as_str())
        .collect();
    let mut outcomes = blocking(|| shared.store.delete_objects(&bucket, &keys))?.into_iter();
    let mut result = DeleteResult::default();
    for (object, named) in delete.objects.iter().zip(named) {
        let outcome = match named {
            Ok(true) => outcomes.next().unwrap_or(Ok(())).map_err(S3Error::from),
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) if !delete.quiet => result.deleted.push(DeletedObject {
                key: object.key.clone(),
                version_id: object.version_id.clone(),
                delete_marker: None,
                delete_marker_version_id: None,
            }),
            Ok(()) => {}
            Err(e) => {
                result.errors.push(DeleteError {
                    key: object.key.clone(),
                    version_id: object.version_id.clone(),
                    code: e.code.as_str().to_owned(),
                    message: e.message,
                });
            }
        }
    }
    x.begin(200, request_id);
    x.send_xml(&result).await
}
