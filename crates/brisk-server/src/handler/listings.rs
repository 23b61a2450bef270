//! The listings of a bucket's objects: ListObjects (V1 and V2) and ListObjectVersions, and the
//! query parameters every listing reads (`max-*`, `encoding-type`).

use brisk_wire::xml::{
    EncodingType, ListBucketHeader, ListVersion, ListVersionsHeader, ObjectEntry,
    write_list_bucket_result, write_list_versions_result,
};

use super::{Request, blocking, owner, xml_time};
use crate::error::S3Error;
use crate::exchange::Exchange;
use crate::route::Operation;
use crate::store::{ListQuery, MAX_KEYS_PER_PAGE};

pub(super) fn parse_max(
    query: &crate::route::Query,
    name: &str,
    cap: usize,
) -> Result<usize, S3Error> {
    match query.get(name) {
        None => Ok(cap),
        Some(v) => v
            .parse::<usize>()
            .map(|n| n.min(cap))
            .map_err(|_| S3Error::invalid_argument(format!("{name} {v:?} is not a number"))),
    }
}

pub(super) fn encoding_type(query: &crate::route::Query) -> Result<Option<EncodingType>, S3Error> {
    match query.get("encoding-type") {
        None => Ok(None),
        Some(v) => v
            .parse::<EncodingType>()
            .map(Some)
            .map_err(|()| S3Error::invalid_argument(format!("Invalid Encoding Method {v:?}"))),
    }
}

pub(super) async fn list_objects(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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
pub(super) async fn list_versions(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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
