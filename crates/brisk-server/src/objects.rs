//! What object requests and responses carry besides the body: stored attributes from request fields,
//! response fields from stored attributes, `Range`, conditional requests, and `x-amz-copy-source`.

use brisk_wire::S3ErrorCode;
use std::time::SystemTime;

use brisk_wire::http::{Headers, RequestHead};
use brisk_wire::object_headers::StandardHeader;
use brisk_wire::xml::NULL_VERSION_ID;

use crate::error::S3Error;
use crate::exchange::set;
use crate::route::Query;
use crate::store::{Checksum, ObjectAttributes, ObjectInfo};

/// Most bytes of user metadata (`x-amz-meta-*` names and values) per object: 2 KiB, S3's limit.
pub const MAX_USER_METADATA_BYTES: usize = 2048;

const USER_METADATA_PREFIX: &str = "x-amz-meta-";

/// The attributes a PUT (or CreateMultipartUpload, or a REPLACE copy) stores: standard fields and
/// `x-amz-meta-*`. `aws-chunked` is removed from `Content-Encoding`: it describes the transfer, not
/// the object.
pub fn attributes_from(head: &RequestHead) -> Result<ObjectAttributes, S3Error> {
    let h = head.headers();
    let text = |name: &str| h.get_str(name).map(|v| v.trim().to_owned());
    let mut content_encoding = h.get_str("content-encoding").and_then(|v| {
        let kept: Vec<&str> = v
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("aws-chunked"))
            .collect();
        (!kept.is_empty()).then(|| kept.join(", "))
    });
    let mut user_metadata = Vec::new();
    let mut metadata_bytes = 0;
    for (name, value) in h.iter() {
        if name.len() > USER_METADATA_PREFIX.len()
            && name[..USER_METADATA_PREFIX.len()].eq_ignore_ascii_case(USER_METADATA_PREFIX)
        {
            let key = name[USER_METADATA_PREFIX.len()..].to_ascii_lowercase();
            let value = String::from_utf8_lossy(value).trim().to_owned();
            metadata_bytes += key.len() + value.len();
            user_metadata.push((key, value));
        }
    }
    if metadata_bytes > MAX_USER_METADATA_BYTES {
        return Err(S3Error::new(
            S3ErrorCode::MetadataTooLarge,
            format!(
                "Your metadata headers exceed the maximum allowed metadata size \
                 ({metadata_bytes} > {MAX_USER_METADATA_BYTES} bytes)"
            ),
        ));
    }
    let mut attributes = ObjectAttributes {
        user_metadata,
        ..ObjectAttributes::default()
    };
    for header in StandardHeader::ALL {
        *attributes.field_mut(header) = match header {
            StandardHeader::ContentEncoding => content_encoding.take(),
            _ => text(header.name()),
        };
    }
    Ok(attributes)
}

/// Refuses a write (PutObject, CreateMultipartUpload, CopyObject, CreateBucket) whose headers ask
/// for what brisk serve would otherwise drop without a word: access it cannot grant, encryption
/// at rest it does not do, tags or a lock it does not keep. Access control is S3's own default
/// for new buckets, ACLs disabled (bucket owner enforced): the owner's full control (`private`,
/// `bucket-owner-full-control`) is accepted, any other canned ACL or grant is
/// `400 AccessControlListNotSupported`; the rest is `501 NotImplemented`.
///
/// A bucket created with another ACL is `400 InvalidBucketAclWithObjectOwnership`, as S3 answers.
pub fn refuse_what_is_not_kept(h: &Headers, creates_bucket: bool) -> Result<(), S3Error> {
    let acl_code = if creates_bucket {
        S3ErrorCode::InvalidBucketAclWithObjectOwnership
    } else {
        S3ErrorCode::AccessControlListNotSupported
    };
    if let Some(acl) = h.get_str("x-amz-acl").map(str::trim)
        && !matches!(acl, "private" | "bucket-owner-full-control")
    {
        return Err(S3Error::new(
            acl_code,
            format!(
                "The bucket does not allow ACLs: brisk serve has one owner and no access control \
                 beyond its key, so the canned ACL {acl:?} cannot be applied"
            ),
        ));
    }
    if let Some((name, _)) = h.iter().find(|(n, _)| {
        n.len() > "x-amz-grant-".len()
            && n.as_bytes()[.."x-amz-grant-".len()].eq_ignore_ascii_case(b"x-amz-grant-")
    }) {
        return Err(S3Error::new(
            acl_code,
            format!("The bucket does not allow ACLs: {name} cannot be applied"),
        ));
    }
    let refused = [
        (
            "x-amz-server-side-encryption",
            "server-side encryption",
            "objects are stored as they are received, unencrypted",
        ),
        (
            "x-amz-server-side-encryption-customer-algorithm",
            "server-side encryption with a customer key",
            "objects are stored as they are received, unencrypted",
        ),
        ("x-amz-tagging", "object tagging", "no tags are kept"),
        (
            "x-amz-object-lock-mode",
            "object lock",
            "brisk serve keeps one version of each key",
        ),
        (
            "x-amz-object-lock-legal-hold",
            "object lock",
            "brisk serve keeps one version of each key",
        ),
    ];
    if let Some((name, feature, why)) = refused.iter().find(|(name, ..)| h.contains(name)) {
        return Err(S3Error::not_implemented(format!(
            "{name}: {feature} is not implemented ({why})"
        )));
    }
    Ok(())
}

/// Writes an object's descriptive fields (ETag, Last-Modified, type, standard fields, metadata)
/// into a response, applying the `response-*` overrides of a GET's query.
pub fn write_object_fields(h: &mut Headers, info: &ObjectInfo, query: &Query) {
    set(h, "etag", &info.etag);
    set(
        h,
        "last-modified",
        &httpdate::fmt_http_date(info.last_modified),
    );
    set(h, "accept-ranges", "bytes");
    let a = &info.attributes;
    for header in StandardHeader::ALL {
        let value = query.get(header.response_override()).or(a.field(header));
        match (header, value) {
            (_, Some(v)) => {
                let _ = h.set(header.name(), header_value(v).as_ref());
            }
            (StandardHeader::ContentType, None) => set(h, header.name(), "binary/octet-stream"),
            _ => {}
        }
    }
    for (name, value) in &a.user_metadata {
        let _ = h.append(
            &format!("{USER_METADATA_PREFIX}{name}"),
            header_value(value).as_ref(),
        );
    }
}

/// A stored value as a response field carries it. Printable ASCII goes as it is; anything else
/// (a non-ASCII character, a control character) makes the whole value one RFC 2047 encoded word,
/// `=?UTF-8?B?<base64 of the UTF-8 bytes>?=`, as S3 returns user metadata holding non-ASCII
/// characters. A response thus never carries raw non-ASCII bytes, which HTTP clients read as
/// Latin-1 (botocore, `http.client`) or refuse.
pub fn header_value(value: &str) -> std::borrow::Cow<'_, str> {
    use base64::Engine as _;
    let plain = |b: u8| b == b'\t' || (b' '..=b'~').contains(&b);
    if value.bytes().all(plain) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut out = String::from("=?UTF-8?B?");
    base64::engine::general_purpose::STANDARD.encode_string(value, &mut out);
    out.push_str("?=");
    std::borrow::Cow::Owned(out)
}

/// Writes the stored checksum (`x-amz-checksum-*` and `x-amz-checksum-type`) when the client asked
/// for it with `x-amz-checksum-mode: ENABLED`.
pub fn write_checksum_fields(h: &mut Headers, info: &ObjectInfo) {
    if let Some(c) = &info.checksum {
        write_checksum(h, c, &c.value);
    }
}

/// Writes part `part_number`'s checksum (`x-amz-checksum-<algorithm>` of the part's bytes, and the
/// object's `x-amz-checksum-type`), as S3 answers a GET or HEAD of one part of a multipart object
/// with checksums; nothing for an object without them.
pub fn write_part_checksum_fields(h: &mut Headers, info: &ObjectInfo, part_number: u32) {
    let part = usize::try_from(part_number)
        .ok()
        .and_then(|n| info.parts.get(n.checked_sub(1)?));
    if let (Some(c), Some(value)) = (&info.checksum, part.and_then(|p| p.checksum.as_ref())) {
        write_checksum(h, c, value.as_str());
    }
}

/// `x-amz-checksum-<algorithm>: value` and the type of `checksum` (the header names are the
/// wire's static ones: no name is formatted per response).
fn write_checksum(h: &mut Headers, checksum: &Checksum, value: &str) {
    set(h, checksum.algorithm.header_name(), value);
    set(h, "x-amz-checksum-type", checksum.checksum_type.s3_name());
}

/// The byte range a GET asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// `bytes=first-` or `bytes=first-last`.
    From { first: u64, last: Option<u64> },
    /// `bytes=-n`: the last `n` bytes.
    Suffix(u64),
}

/// A byte position as RFC 9110 writes one: ASCII digits only. `u64::from_str` also takes a leading
/// `+`, which would make `bytes=+0-+9` a range; S3 serves the whole object for it.
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl RangeRequest {
    /// Parses a `Range` field. Forms S3 ignores (other units, several ranges, garbage) give `None`:
    /// the whole object is served.
    pub fn parse(value: &str) -> Option<Self> {
        let spec = value.trim().strip_prefix("bytes=")?.trim();
        if spec.contains(',') {
            return None;
        }
        let (first, last) = spec.split_once('-')?;
        let (first, last) = (first.trim(), last.trim());
        if first.is_empty() {
            return digits(last).map(Self::Suffix);
        }
        let first = digits(first)?;
        let last = if last.is_empty() {
            None
        } else {
            Some(digits(last)?)
        };
        if last.is_some_and(|l| l < first) {
            return None;
        }
        Some(Self::From { first, last })
    }

    /// The byte range `start..end` in an object of `size` bytes, or `InvalidRange` (416).
    pub fn resolve(self, size: u64) -> Result<std::ops::Range<u64>, S3Error> {
        match self {
            Self::From { first, last } if first < size => {
                let end = last.map_or(size, |l| l.saturating_add(1).min(size));
                Ok(first..end)
            }
            Self::Suffix(n) if n > 0 && size > 0 => Ok(size.saturating_sub(n)..size),
            _ => Err(S3Error::invalid_range(size)),
        }
    }
}

/// The byte range a GET or HEAD with `partNumber=n` serves, as S3 answers it: an object made by a
/// single PUT is one part, the whole object; a part number past the last is
/// `416 InvalidPartNumber`.
pub fn part_span(info: &ObjectInfo, n: u32) -> Result<std::ops::Range<u64>, S3Error> {
    info.part_range(n).ok_or_else(|| {
        S3Error::new(
            S3ErrorCode::InvalidPartNumber,
            "The requested partnumber is not satisfiable",
        )
    })
}

/// What the conditional fields of a GET or HEAD decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Serve the object.
    Proceed,
    /// `304 Not Modified`.
    NotModified,
}

fn etag_matches(list: &str, etag: &str) -> bool {
    let etag = etag.trim_matches('"');
    list.split(',').map(str::trim).any(|candidate| {
        candidate == "*" || candidate.trim_start_matches("W/").trim_matches('"') == etag
    })
}

fn parse_http_date(value: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(value.trim()).ok()
}

/// Whole seconds, the precision of HTTP dates.
fn seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The four conditional fields of one kind of request, named as S3 names them in a
/// `PreconditionFailed` error (header lookup ignores case).
struct ConditionFields {
    if_match: &'static str,
    if_unmodified_since: &'static str,
    if_none_match: &'static str,
    if_modified_since: &'static str,
}

/// What the conditional fields decide about `info`, in RFC 9110 §13.2.2's order: an `If-Match`
/// that holds overrides `If-Unmodified-Since`, an `If-None-Match` that holds overrides
/// `If-Modified-Since`.
enum Evaluated {
    Proceed,
    /// `If-Match` or `If-Unmodified-Since` failed (its name).
    Failed(&'static str),
    /// `If-None-Match` or `If-Modified-Since` failed (its name).
    Unchanged(&'static str),
}

fn evaluate(h: &Headers, info: &ObjectInfo, fields: &ConditionFields) -> Evaluated {
    let modified = seconds(info.last_modified);
    if let Some(list) = h.get_str(fields.if_match) {
        if !etag_matches(list, &info.etag) {
            return Evaluated::Failed(fields.if_match);
        }
    } else if let Some(since) = h
        .get_str(fields.if_unmodified_since)
        .and_then(parse_http_date)
        && modified > seconds(since)
    {
        return Evaluated::Failed(fields.if_unmodified_since);
    }
    if let Some(list) = h.get_str(fields.if_none_match) {
        if etag_matches(list, &info.etag) {
            return Evaluated::Unchanged(fields.if_none_match);
        }
    } else if let Some(since) = h
        .get_str(fields.if_modified_since)
        .and_then(parse_http_date)
        && modified <= seconds(since)
    {
        return Evaluated::Unchanged(fields.if_modified_since);
    }
    Evaluated::Proceed
}

/// Evaluates `If-Match`, `If-Unmodified-Since` (412 `PreconditionFailed`), `If-None-Match` and
/// `If-Modified-Since` (304) as RFC 9110 §13.2.2 orders them.
pub fn check_preconditions(h: &Headers, info: &ObjectInfo) -> Result<Precondition, S3Error> {
    const FIELDS: ConditionFields = ConditionFields {
        if_match: "If-Match",
        if_unmodified_since: "If-Unmodified-Since",
        if_none_match: "If-None-Match",
        if_modified_since: "If-Modified-Since",
    };
    match evaluate(h, info, &FIELDS) {
        Evaluated::Proceed => Ok(Precondition::Proceed),
        Evaluated::Unchanged(_) => Ok(Precondition::NotModified),
        Evaluated::Failed(field) => Err(S3Error::new(
            S3ErrorCode::PreconditionFailed,
            "At least one of the pre-conditions you specified did not hold",
        )
        .with("Condition", field)),
    }
}

/// Evaluates the copy-source conditions of CopyObject and UploadPartCopy
/// (`x-amz-copy-source-if-match`, `-if-none-match`, `-if-unmodified-since`, `-if-modified-since`)
/// against the source, in the same order as a GET's; returns the field that fails. S3 answers every
/// failure with 412 `PreconditionFailed`: a copy has no 304.
pub fn copy_source_refused(h: &Headers, info: &ObjectInfo) -> Option<&'static str> {
    const FIELDS: ConditionFields = ConditionFields {
        if_match: "x-amz-copy-source-If-Match",
        if_unmodified_since: "x-amz-copy-source-If-Unmodified-Since",
        if_none_match: "x-amz-copy-source-If-None-Match",
        if_modified_since: "x-amz-copy-source-If-Modified-Since",
    };
    match evaluate(h, info, &FIELDS) {
        Evaluated::Proceed => None,
        Evaluated::Failed(field) | Evaluated::Unchanged(field) => Some(field),
    }
}

/// Parses `x-amz-copy-source` (`bucket/key` or `/bucket/key`, percent-encoded, optionally with
/// `?versionId=`, which must name the one version there is: [`check_version_id`]) into bucket
/// and key.
pub fn parse_copy_source(value: &str) -> Result<(String, String), S3Error> {
    let value = value.trim();
    let (path, query) = value.split_once('?').unwrap_or((value, ""));
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| S3Error::invalid_argument("x-amz-copy-source is not UTF-8"))?;
    let trimmed = decoded.strip_prefix('/').unwrap_or(&decoded);
    let (bucket, key) = match trimmed.split_once('/') {
        Some((bucket, key)) if !bucket.is_empty() && !key.is_empty() => {
            (bucket.to_owned(), key.to_owned())
        }
        _ => {
            return Err(S3Error::invalid_argument(
                "x-amz-copy-source must be bucket/key",
            ));
        }
    };
    let version_id = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("versionId="));
    check_version_id(version_id, &key)?;
    Ok((bucket, key))
}

/// What a request's `versionId` names. The store keeps one version of each key, which S3 calls
/// `null` in a bucket that never had versioning: naming it (or no version) names the object; any
/// other id names a version that does not exist. An empty id is `400 InvalidArgument`.
pub fn names_the_object(version_id: Option<&str>) -> Result<bool, S3Error> {
    match version_id {
        None | Some(NULL_VERSION_ID) => Ok(true),
        Some("") => Err(S3Error::invalid_argument(
            "Version id cannot be the empty string",
        )),
        Some(_) => Ok(false),
    }
}

/// Checks the `versionId` of a read or a copy's source ([`names_the_object`]): a version that
/// does not exist is `404 NoSuchVersion`, rather than the id being ignored, which would answer
/// with a version the client did not ask for.
pub fn check_version_id(version_id: Option<&str>, key: &str) -> Result<(), S3Error> {
    if names_the_object(version_id)? {
        return Ok(());
    }
    let id = version_id.unwrap_or_default();
    Err(S3Error::new(
        S3ErrorCode::NoSuchVersion,
        format!("The specified version {id:?} of {key:?} does not exist"),
    )
    .with("Key", key)
    .with("VersionId", id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_resolve_as_s3_does() {
        let r = |s: &str| RangeRequest::parse(s).unwrap().resolve(100);
        assert_eq!(r("bytes=0-9").unwrap(), 0..10);
        assert_eq!(r("bytes=90-").unwrap(), 90..100);
        assert_eq!(r("bytes=90-1000").unwrap(), 90..100);
        assert_eq!(r("bytes=-10").unwrap(), 90..100);
        assert_eq!(r("bytes=-1000").unwrap(), 0..100);
        assert_eq!(r("bytes=100-").unwrap_err().status, 416);
        assert_eq!(r("bytes=-0").unwrap_err().status, 416);
        assert_eq!(RangeRequest::parse("bytes=5-1"), None);
        assert_eq!(RangeRequest::parse("items=0-1"), None);
        assert_eq!(RangeRequest::parse("bytes=0-1,5-6"), None);
        // Signs are not digits: these ask for nothing S3 recognises, so the whole object is served.
        assert_eq!(RangeRequest::parse("bytes=+0-+9"), None);
        assert_eq!(RangeRequest::parse("bytes=+0-9"), None);
        assert_eq!(RangeRequest::parse("bytes=0-+9"), None);
        assert_eq!(RangeRequest::parse("bytes=-+5"), None);
        assert_eq!(RangeRequest::parse("bytes=0x1-9"), None);
        assert_eq!(
            RangeRequest::parse("bytes=0-")
                .unwrap()
                .resolve(0)
                .unwrap_err()
                .code,
            "InvalidRange"
        );
    }

    #[test]
    fn writes_asking_for_what_is_not_kept_are_refused_whatever_the_case_of_the_name() {
        let refused = |pairs: &[(&str, &str)], bucket: bool| {
            let mut h = Headers::new();
            for (n, v) in pairs {
                h.append(n, v).unwrap();
            }
            refuse_what_is_not_kept(&h, bucket)
                .err()
                .map(|e| (e.status, e.code))
        };
        assert_eq!(refused(&[("x-amz-acl", "private")], false), None);
        assert_eq!(
            refused(&[("X-Amz-Acl", "bucket-owner-full-control")], false),
            None
        );
        assert_eq!(
            refused(&[("x-amz-acl", "public-read")], false),
            Some((400, S3ErrorCode::AccessControlListNotSupported))
        );
        assert_eq!(
            refused(&[("x-amz-acl", "public-read")], true),
            Some((400, S3ErrorCode::InvalidBucketAclWithObjectOwnership))
        );
        assert_eq!(
            refused(&[("X-Amz-Grant-Read", "id=x")], false),
            Some((400, S3ErrorCode::AccessControlListNotSupported))
        );
        assert_eq!(refused(&[("x-amz-grant-", "id=x")], false), None);
        for name in [
            "X-Amz-Server-Side-Encryption",
            "x-amz-server-side-encryption-customer-algorithm",
            "x-amz-tagging",
            "x-amz-object-lock-mode",
        ] {
            assert_eq!(
                refused(&[(name, "v")], false),
                Some((501, S3ErrorCode::NotImplemented)),
                "{name}"
            );
        }
        assert_eq!(refused(&[("x-amz-meta-colour", "blue")], false), None);
    }

    #[test]
    fn copy_sources_are_decoded() {
        assert_eq!(
            parse_copy_source("/b/a%20b/c?versionId=null").unwrap(),
            ("b".to_owned(), "a b/c".to_owned())
        );
        let other = parse_copy_source("/b/k?versionId=3HL4kqtJlcpXroDTDmJ").unwrap_err();
        assert_eq!(
            (other.status, other.code),
            (404, S3ErrorCode::NoSuchVersion)
        );
        assert_eq!(
            parse_copy_source("b/k").unwrap(),
            ("b".to_owned(), "k".to_owned())
        );
        assert!(parse_copy_source("b").is_err());
    }

    #[test]
    fn non_ascii_values_are_rfc_2047_encoded_words() {
        assert_eq!(header_value("plain ascii, 1=2"), "plain ascii, 1=2");
        // "café" is 63 61 66 c3 a9 in UTF-8 (checked with Python's email.header).
        assert_eq!(header_value("café"), "=?UTF-8?B?Y2Fmw6k=?=");
        assert_eq!(header_value("日本"), "=?UTF-8?B?5pel5pys?=");
        assert_eq!(header_value("a\u{1}b"), "=?UTF-8?B?YQFi?=");
        // An encoded word the client sent itself is ASCII and goes back as it came.
        assert_eq!(header_value("=?UTF-8?B?Y2Fmw6k=?="), "=?UTF-8?B?Y2Fmw6k=?=");
    }

    #[test]
    fn etag_lists_match_quoted_unquoted_and_star() {
        assert!(etag_matches("\"abc\"", "\"abc\""));
        assert!(etag_matches("abc", "\"abc\""));
        assert!(etag_matches("\"x\", \"abc\"", "\"abc\""));
        assert!(etag_matches("*", "\"abc\""));
        assert!(!etag_matches("\"abd\"", "\"abc\""));
    }
}
