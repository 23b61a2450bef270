//! The S3 operations: each reads what it needs from the request, calls the store, and writes the
//! response through the connection's [`Exchange`].

use brisk_wire::S3ErrorCode;
use std::time::SystemTime;

use brisk_wire::http::{Headers, RequestHead};
use brisk_wire::xml::{
    BucketEntry, ChecksumFields, CompleteMultipartUpload, CompleteMultipartUploadResult,
    CopyObjectResult, CopyPartResult, Delete, DeleteError, DeleteResult, DeletedObject,
    EncodingType, InitiateMultipartUploadResult, ListAllMyBucketsResult, ListBucketHeader,
    ListMultipartUploadsResult, ListPartsResult, ListVersion, ListVersionsHeader,
    LocationConstraint, ObjectEntry, Owner, PartEntry, UploadEntry, XmlDocument, XmlWriter,
    write_list_bucket_result, write_list_versions_result,
};
use time::OffsetDateTime;

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
use crate::route::{Operation, Route};
use crate::server::Shared;
use crate::store::{
    Checksum, ChecksumType, CompletedPart, ExpectedChecksum, ListQuery, MAX_KEYS_PER_PAGE,
    NewObject, ObjectInfo, StoreError, UploadQuery, WriteCondition,
};

/// Largest XML request body read into memory (CompleteMultipartUpload with 10,000 parts is about
/// 1 MiB; DeleteObjects with 1,000 keys of 1,024 bytes about 1.1 MiB).
pub const MAX_XML_BODY: u64 = 2 << 20;

/// The one owner every bucket and object of this server has.
fn owner() -> Owner {
    Owner {
        id: "brisk".to_owned(),
        display_name: Some("brisk".to_owned()),
    }
}

fn xml_time(t: SystemTime) -> OffsetDateTime {
    OffsetDateTime::from(t)
}

/// Runs a closure that may block for a while (fsync, metadata transactions) without stalling the
/// other tasks of a multi-thread runtime's worker; on a current-thread runtime it just runs.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// One request's context.
pub struct Request<'a> {
    pub shared: &'a Shared,
    pub head: &'a RequestHead,
    pub route: Route,
    pub payload: PayloadCheck,
    pub request_id: &'a str,
}

/// Runs the operation the route selected and sends its response.
pub async fn handle(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
    use Operation::*;
    match r.route.operation {
        ListBuckets => list_buckets(x, &r).await,
        CreateBucket => create_bucket(x, r).await,
        HeadBucket => {
            blocking(|| r.shared.store.head_bucket(&r.route.bucket))?;
            x.begin(200, r.request_id);
            set(x.headers(), "x-amz-bucket-region", &r.shared.config.region);
            x.send_empty().await
        }
        DeleteBucket => {
            blocking(|| r.shared.store.delete_bucket(&r.route.bucket))?;
            x.begin(204, r.request_id);
            x.send_head_only().await
        }
        GetBucketLocation => {
            blocking(|| r.shared.store.head_bucket(&r.route.bucket))?;
            let region = &r.shared.config.region;
            let doc = LocationConstraint {
                region: (region != "us-east-1").then(|| region.clone()),
            };
            x.begin(200, r.request_id);
            x.send_xml(&doc).await
        }
        GetBucketVersioning => {
            // Never enabled: S3 answers a bucket that never had versioning with an empty
            // configuration (no Status).
            blocking(|| r.shared.store.head_bucket(&r.route.bucket))?;
            x.xml.clear();
            XmlWriter::new(&mut x.xml)
                .and_then(|w| {
                    w.text_with_namespace(
                        "VersioningConfiguration",
                        brisk_wire::xml::S3_NAMESPACE,
                        "",
                    )
                })
                .map_err(|e| S3Error::invalid_argument(e.to_string()))?;
            x.begin(200, r.request_id);
            x.send_xml_buffer().await
        }
        ListObjectVersions => list_versions(x, &r).await,
        GetBucketAcl | GetObjectAcl => {
            // ACLs are disabled, as on a new S3 bucket: reading one shows the owner's full
            // control, after the bucket or object is found.
            if r.route.operation == GetObjectAcl {
                check_version_id(r.route.query.get("versionId"), &r.route.key)?;
                blocking(|| r.shared.store.head_object(&r.route.bucket, &r.route.key))?;
            } else {
                blocking(|| r.shared.store.head_bucket(&r.route.bucket))?;
            }
            x.xml.clear();
            brisk_wire::xml::write_owner_full_control(&mut x.xml, &owner())
                .map_err(|e| S3Error::invalid_argument(e.to_string()))?;
            x.begin(200, r.request_id);
            x.send_xml_buffer().await
        }
        PutBucketAcl | PutObjectAcl => put_acl(x, r).await,
        ListObjectsV1 | ListObjectsV2 => list_objects(x, &r).await,
        ListMultipartUploads => list_uploads(x, &r).await,
        DeleteObjects => delete_objects(x, r).await,
        PutObject => put_object(x, r).await,
        CopyObject => copy_object(x, &r).await,
        GetObject => get_object(x, &r, false).await,
        HeadObject => get_object(x, &r, true).await,
        GetObjectAttributes => object_attributes(x, &r).await,
        DeleteObject => {
            // A version other than the one there is does not exist: deleting it deletes nothing
            // and succeeds, as deleting a missing key does.
            if names_the_object(r.route.query.get("versionId"))? {
                blocking(|| r.shared.store.delete_object(&r.route.bucket, &r.route.key))?;
            }
            x.begin(204, r.request_id);
            x.send_head_only().await
        }
        CreateMultipartUpload => create_upload(x, &r).await,
        UploadPart => upload_part(x, r).await,
        UploadPartCopy => upload_part_copy(x, &r).await,
        CompleteMultipartUpload => complete_upload(x, r).await,
        AbortMultipartUpload => {
            let upload_id = r.route.query.get("uploadId").unwrap_or_default();
            blocking(|| {
                r.shared
                    .store
                    .abort_multipart_upload(&r.route.bucket, &r.route.key, upload_id)
            })?;
            x.begin(204, r.request_id);
            x.send_head_only().await
        }
        ListParts => list_parts(x, &r).await,
    }
}

/// Most buckets one ListBuckets page holds, and the largest `max-buckets` S3 accepts.
const MAX_BUCKETS_PER_PAGE: usize = 10_000;

/// ListBuckets, paginated as S3 does it: `prefix`, `max-buckets` (1 to 10,000; without it, every
/// bucket in one page), and `continuation-token` (opaque to clients: here the base64 of the last
/// name of the previous page). A page that stops short of the end carries the token of the next.
async fn list_buckets(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    use base64::Engine as _;
    let q = &r.route.query;
    let max = match q.get("max-buckets") {
        None => MAX_BUCKETS_PER_PAGE,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_BUCKETS_PER_PAGE).contains(&n) => n,
            _ => {
                return Err(S3Error::invalid_argument(format!(
                    "max-buckets must be an integer from 1 to {MAX_BUCKETS_PER_PAGE}, not {v:?}"
                )));
            }
        },
    };
    let prefix = q.get("prefix").unwrap_or_default();
    let after = match q.get("continuation-token") {
        None => None,
        Some(token) => Some(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(token)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| {
                    S3Error::invalid_argument("the continuation token is not one this server gave")
                })?,
        ),
    };
    let buckets = blocking(|| r.shared.store.list_buckets())?;
    let mut matching = buckets
        .into_iter()
        .filter(|b| b.name.starts_with(prefix))
        .filter(|b| after.as_deref().is_none_or(|a| b.name.as_str() > a))
        .peekable();
    let page: Vec<_> = matching.by_ref().take(max).collect();
    let continuation_token = match (matching.peek(), page.last()) {
        (Some(_), Some(last)) => {
            Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&last.name))
        }
        _ => None,
    };
    let doc = ListAllMyBucketsResult {
        owner: Some(owner()),
        buckets: page
            .into_iter()
            .map(|b| BucketEntry {
                name: b.name,
                creation_date: xml_time(b.created),
                bucket_region: Some(r.shared.config.region.clone()),
            })
            .collect(),
        continuation_token,
        prefix: q.get("prefix").map(str::to_owned),
    };
    x.begin(200, r.request_id);
    x.send_xml(&doc).await
}

/// Reads a small request body (an XML document) into memory, verifying its digests.
async fn read_small_body(
    x: &mut Exchange,
    r: Request<'_>,
    md5_etag: bool,
) -> Result<Vec<u8>, S3Error> {
    let digests = BodyDigests::new(r.head, &r.payload, md5_etag)?;
    read_small_body_checked(x, r, digests).await
}

/// [`read_small_body`] with the digests to check it against.
async fn read_small_body_checked(
    x: &mut Exchange,
    r: Request<'_>,
    mut digests: BodyDigests,
) -> Result<Vec<u8>, S3Error> {
    let chunked = matches!(r.payload, PayloadCheck::Chunked(_));
    let len = body::payload_length(r.head, &x.conn, chunked, MAX_XML_BODY)?;
    let mut decoder = r.payload.chunked_decoder(len.unwrap_or(0));
    let mut out = Vec::with_capacity(len.unwrap_or(0) as usize);
    body::read_body(
        &mut x.conn,
        decoder.as_mut(),
        &mut x.carry,
        MAX_XML_BODY,
        |data| {
            digests.update(data);
            out.extend_from_slice(data);
            Ok(())
        },
    )
    .await?;
    let conn_trailers = x.conn.trailers();
    digests.finish(|name| {
        decoder
            .as_ref()
            .and_then(|d| d.trailer(name))
            .or_else(|| conn_trailers.and_then(|t| t.get_str(name)))
    })?;
    Ok(out)
}

async fn create_bucket(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
    refuse_what_is_not_kept(r.head.headers(), true)?;
    let bucket = r.route.bucket.clone();
    let (shared, request_id) = (r.shared, r.request_id);
    let body = read_small_body(x, r, false).await?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        let config = brisk_wire::xml::CreateBucketConfiguration::parse(&body)?;
        if let Some(location) = config.location_constraint
            && location != shared.config.region
        {
            return Err(S3Error::new(
                S3ErrorCode::IllegalLocationConstraintException,
                format!(
                    "The {location} location constraint is incompatible with the region {} of this server",
                    shared.config.region
                ),
            ));
        }
    }
    match blocking(|| shared.store.create_bucket(&bucket)) {
        Ok(_) => {}
        // S3 in us-east-1 answers 200 to creating a bucket the caller already owns (a legacy of
        // that region); every other region answers 409 BucketAlreadyOwnedByYou.
        Err(StoreError::BucketAlreadyOwnedByYou(_)) if shared.config.region == "us-east-1" => {}
        Err(e) => return Err(e.into()),
    }
    x.begin(200, request_id);
    set(x.headers(), "location", &format!("/{bucket}"));
    x.send_empty().await
}

fn parse_max(query: &crate::route::Query, name: &str, cap: usize) -> Result<usize, S3Error> {
    match query.get(name) {
        None => Ok(cap),
        Some(v) => v
            .parse::<usize>()
            .map(|n| n.min(cap))
            .map_err(|_| S3Error::invalid_argument(format!("{name} {v:?} is not a number"))),
    }
}

fn encoding_type(query: &crate::route::Query) -> Result<Option<EncodingType>, S3Error> {
    match query.get("encoding-type") {
        None => Ok(None),
        Some(v) => v
            .parse::<EncodingType>()
            .map(Some)
            .map_err(|()| S3Error::invalid_argument(format!("Invalid Encoding Method {v:?}"))),
    }
}

async fn list_objects(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    let q = &r.route.query;
    let v2 = r.route.operation == Operation::ListObjectsV2;
    let max_keys = parse_max(q, "max-keys", MAX_KEYS_PER_PAGE)?;
    let encoding = encoding_type(q)?;
    let prefix = q.get("prefix").unwrap_or_default().to_owned();
    let delimiter = q
        .get("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_owned);
    let start_after = if v2 {
        q.get("start-after")
    } else {
        q.get("marker")
    }
    .filter(|s| !s.is_empty())
    .map(str::to_owned);
    let continuation_token = v2
        .then(|| q.get("continuation-token"))
        .flatten()
        .map(str::to_owned);
    let query = ListQuery {
        prefix: prefix.clone(),
        delimiter: delimiter.clone(),
        start_after: start_after.clone(),
        continuation_token: continuation_token.clone(),
        max_keys,
    };
    let mut page = list_page(r, &query)?;
    let fetch_owner = !v2 || q.get("fetch-owner") == Some("true");
    let entries = object_entries(&mut page, fetch_owner);
    let version = if v2 {
        ListVersion::V2 {
            key_count: (entries.len() + page.common_prefixes.len()) as u32,
            continuation_token,
            next_continuation_token: page.next_continuation_token,
            start_after: if v2 { start_after } else { None },
        }
    } else {
        ListVersion::V1 {
            marker: start_after.unwrap_or_default(),
            next_marker: delimiter
                .is_some()
                .then_some(page.next_marker)
                .flatten()
                .filter(|_| page.is_truncated),
        }
    };
    let header = ListBucketHeader {
        name: r.route.bucket.clone(),
        prefix,
        delimiter,
        max_keys: max_keys as u32,
        is_truncated: page.is_truncated,
        encoding_type: encoding,
        version,
    };
    x.xml.clear();
    write_list_bucket_result(
        &mut x.xml,
        &header,
        &entries,
        page.common_prefixes.iter().map(String::as_str),
    )
    .map_err(|e| S3Error::invalid_argument(e.to_string()))?;
    x.begin(200, r.request_id);
    x.send_xml_buffer().await
}

/// One page of the bucket's listing; `max-keys=0` is an empty page of a bucket that exists.
fn list_page(r: &Request<'_>, query: &ListQuery) -> Result<crate::store::ListPage, S3Error> {
    if query.max_keys == 0 {
        blocking(|| r.shared.store.head_bucket(&r.route.bucket))?;
        Ok(Default::default())
    } else {
        Ok(blocking(|| {
            r.shared.store.list_objects(&r.route.bucket, query)
        })?)
    }
}

/// A page's objects as listing entries (taken out of the page), with their owner if asked.
fn object_entries(page: &mut crate::store::ListPage, with_owner: bool) -> Vec<ObjectEntry> {
    std::mem::take(&mut page.objects)
        .into_iter()
        .map(|o| ObjectEntry {
            key: o.key,
            last_modified: xml_time(o.last_modified),
            etag: o.etag,
            size: o.size,
            storage_class: Some("STANDARD".to_owned()),
            checksum_algorithm: None,
            checksum_type: None,
            owner: with_owner.then(owner),
        })
        .collect()
}

/// ListObjectVersions: the listing of ListObjects, each object its key's only version (`null`,
/// the latest). `key-marker` pages as ListObjects' `marker`; a `version-id-marker` must come with
/// a key marker, as S3 requires, and there is no later version of a key to resume within.
async fn list_versions(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    let q = &r.route.query;
    let max_keys = parse_max(q, "max-keys", MAX_KEYS_PER_PAGE)?;
    let encoding = encoding_type(q)?;
    let prefix = q.get("prefix").unwrap_or_default().to_owned();
    let delimiter = q
        .get("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_owned);
    let key_marker = q.get("key-marker").unwrap_or_default().to_owned();
    let version_id_marker = q.get("version-id-marker").unwrap_or_default().to_owned();
    if !version_id_marker.is_empty() && key_marker.is_empty() {
        return Err(S3Error::invalid_argument(
            "A version-id marker cannot be specified without a key marker.",
        ));
    }
    let query = ListQuery {
        prefix: prefix.clone(),
        delimiter: delimiter.clone(),
        start_after: (!key_marker.is_empty()).then(|| key_marker.clone()),
        continuation_token: None,
        max_keys,
    };
    let mut page = list_page(r, &query)?;
    let versions = object_entries(&mut page, true);
    let header = ListVersionsHeader {
        name: r.route.bucket.clone(),
        prefix,
        key_marker,
        version_id_marker,
        next_key_marker: page.next_marker.filter(|_| page.is_truncated),
        delimiter,
        max_keys: max_keys as u32,
        is_truncated: page.is_truncated,
        encoding_type: encoding,
    };
    x.xml.clear();
    write_list_versions_result(
        &mut x.xml,
        &header,
        &versions,
        page.common_prefixes.iter().map(String::as_str),
    )
    .map_err(|e| S3Error::invalid_argument(e.to_string()))?;
    x.begin(200, r.request_id);
    x.send_xml_buffer().await
}

/// PutBucketAcl and PutObjectAcl on a store whose ACLs are disabled, as S3 answers them then:
/// the owner's full control (`x-amz-acl: private` or `bucket-owner-full-control`, no body) is what
/// there is already and is accepted; anything else, a grant or an `AccessControlPolicy` body, is
/// `400 AccessControlListNotSupported`.
async fn put_acl(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
    refuse_what_is_not_kept(r.head.headers(), false)?;
    let object = r.route.operation == Operation::PutObjectAcl;
    let (shared, request_id) = (r.shared, r.request_id);
    let (bucket, key) = (r.route.bucket.clone(), r.route.key.clone());
    if object {
        check_version_id(r.route.query.get("versionId"), &key)?;
    }
    let canned = r.head.headers().contains("x-amz-acl");
    let body = read_small_body(x, r, false).await?;
    if !body.iter().all(u8::is_ascii_whitespace) || !canned {
        return Err(S3Error::new(
            S3ErrorCode::AccessControlListNotSupported,
            "The bucket does not allow ACLs: only the owner's full control (x-amz-acl: private or \
             bucket-owner-full-control) can be set, and it is already",
        ));
    }
    if object {
        blocking(|| shared.store.head_object(&bucket, &key))?;
    } else {
        blocking(|| shared.store.head_bucket(&bucket))?;
    }
    x.begin(200, request_id);
    x.send_empty().await
}

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
async fn object_attributes(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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

async fn list_uploads(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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

async fn delete_objects(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
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

/// Streams the request body into `file`, hashing it; returns what the digests found. With
/// `default_checksum`, a body that declares no checksum gets one of that algorithm computed.
async fn receive_into_file(
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

fn write_body_checksum(x: &mut Exchange, outcome: &BodyOutcome) {
    if let Some(c) = &outcome.checksum {
        set(x.headers(), c.algorithm().header_name(), &c.to_base64());
    }
}

async fn put_object(x: &mut Exchange, mut r: Request<'_>) -> Result<(), S3Error> {
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
fn write_condition(h: &Headers) -> Result<WriteCondition, S3Error> {
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

async fn copy_object(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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

async fn get_object(x: &mut Exchange, r: &Request<'_>, head_only: bool) -> Result<(), S3Error> {
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

async fn create_upload(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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

async fn upload_part(x: &mut Exchange, mut r: Request<'_>) -> Result<(), S3Error> {
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

async fn upload_part_copy(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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

async fn complete_upload(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
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
fn completed_checksum(checksum: Option<&Checksum>) -> (ChecksumFields, Option<ChecksumType>) {
    let mut fields = ChecksumFields::default();
    let Some(c) = checksum else {
        return (fields, None);
    };
    fields.set(c.algorithm, c.value.clone());
    (fields, Some(c.checksum_type))
}

async fn list_parts(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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
