//! The S3 operations: each reads what it needs from the request, calls the store, and writes the
//! response through the connection's [`Exchange`].
//!
//! One module per concern, as in `store/`; this one routes each [`Operation`] to its handler and
//! holds what they share (the request's context, the small-body reader, the owner).
//!
//! | module | operations |
//! |---|---|
//! | `buckets` | ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation, GetBucketVersioning |
//! | `listings` | ListObjects (V1 and V2), ListObjectVersions |
//! | `objects` | PutObject, CopyObject, GetObject, HeadObject, DeleteObject, DeleteObjects |
//! | `attributes` | GetObjectAttributes |
//! | `acl` | the bucket and object ACLs (Get and Put), disabled as on a new S3 bucket |
//! | `multipart` | CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads |

mod acl;
mod attributes;
mod buckets;
mod listings;
mod multipart;
mod objects;

use std::time::SystemTime;

use brisk_wire::http::RequestHead;
use brisk_wire::xml::Owner;
use time::OffsetDateTime;

use crate::auth::PayloadCheck;
use crate::blocking::blocking;
use crate::body::{self, BodyDigests};
use crate::error::S3Error;
use crate::exchange::Exchange;
use crate::route::{Operation, Route};
use crate::server::Shared;

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
        ListBuckets => buckets::list_buckets(x, &r).await,
        CreateBucket => buckets::create_bucket(x, r).await,
        HeadBucket => buckets::head_bucket(x, &r).await,
        DeleteBucket => buckets::delete_bucket(x, &r).await,
        GetBucketLocation => buckets::get_bucket_location(x, &r).await,
        GetBucketVersioning => buckets::get_bucket_versioning(x, &r).await,
        ListObjectVersions => listings::list_versions(x, &r).await,
        GetBucketAcl | GetObjectAcl => acl::get_acl(x, &r).await,
        PutBucketAcl | PutObjectAcl => acl::put_acl(x, r).await,
        ListObjectsV1 | ListObjectsV2 => listings::list_objects(x, &r).await,
        ListMultipartUploads => multipart::list_uploads(x, &r).await,
        DeleteObjects => objects::delete_objects(x, r).await,
        PutObject => objects::put_object(x, r).await,
        CopyObject => objects::copy_object(x, &r).await,
        GetObject => objects::get_object(x, &r, false).await,
        HeadObject => objects::get_object(x, &r, true).await,
        GetObjectAttributes => attributes::object_attributes(x, &r).await,
        DeleteObject => objects::delete_object(x, &r).await,
        CreateMultipartUpload => multipart::create_upload(x, &r).await,
        UploadPart => multipart::upload_part(x, r).await,
        UploadPartCopy => multipart::upload_part_copy(x, &r).await,
        CompleteMultipartUpload => multipart::complete_upload(x, r).await,
        AbortMultipartUpload => multipart::abort_upload(x, &r).await,
        ListParts => multipart::list_parts(x, &r).await,
    }
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
