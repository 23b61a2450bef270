//! The bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation
//! and GetBucketVersioning.

use brisk_wire::S3ErrorCode;
use brisk_wire::xml::{
    BucketEntry, ListAllMyBucketsResult, LocationConstraint, XmlDocument, XmlWriter,
};

use super::{Request, blocking, owner, read_small_body, xml_time};
use crate::error::S3Error;
use crate::exchange::{Exchange, set};
use crate::objects::refuse_what_is_not_kept;
use crate::store::StoreError;

/// Most buckets one ListBuckets page holds, and the largest `max-buckets` S3 accepts.
const MAX_BUCKETS_PER_PAGE: usize = 10_000;

/// ListBuckets, paginated as S3 does it: `prefix`, `max-buckets` (1 to 10,000; without it, every
/// bucket in one page), and `continuation-token` (opaque to clients: here the base64 of the last
/// name of the previous page). A page that stops short of the end carries the token of the next.
pub(super) async fn list_buckets(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
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

pub(super) async fn create_bucket(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
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

pub(super) async fn head_bucket(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    blocking(|| r.shared.store.head_bucket(&r.route.bucket))?;
    x.begin(200, r.request_id);
    set(x.headers(), "x-amz-bucket-region", &r.shared.config.region);
    x.send_empty().await
}

pub(super) async fn delete_bucket(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    blocking(|| r.shared.store.delete_bucket(&r.route.bucket))?;
    x.begin(204, r.request_id);
    x.send_head_only().await
}

pub(super) async fn get_bucket_location(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    blocking(|| r.shared.store.head_bucket(&r.route.bucket))?;
    let region = &r.shared.config.region;
    let doc = LocationConstraint {
        region: (region != "us-east-1").then(|| region.clone()),
    };
    x.begin(200, r.request_id);
    x.send_xml(&doc).await
}

pub(super) async fn get_bucket_versioning(
    x: &mut Exchange,
    r: &Request<'_>,
) -> Result<(), S3Error> {
    // Never enabled: S3 answers a bucket that never had versioning with an empty configuration
    // (no Status).
    blocking(|| r.shared.store.head_bucket(&r.route.bucket))?;
    x.xml.clear();
    XmlWriter::new(&mut x.xml)
        .and_then(|w| {
            w.text_with_namespace("VersioningConfiguration", brisk_wire::xml::S3_NAMESPACE, "")
        })
        .map_err(|e| S3Error::invalid_argument(e.to_string()))?;
    x.begin(200, r.request_id);
    x.send_xml_buffer().await
}
