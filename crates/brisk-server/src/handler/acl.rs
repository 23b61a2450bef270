//! The bucket and object ACLs: disabled, as on a new S3 bucket, so reading one shows the owner's
//! full control and setting one accepts only that.

use brisk_wire::S3ErrorCode;

use super::{Request, blocking, owner, read_small_body};
use crate::error::S3Error;
use crate::exchange::Exchange;
use crate::objects::{check_version_id, refuse_what_is_not_kept};
use crate::route::Operation;

/// GetBucketAcl and GetObjectAcl.
pub(super) async fn get_acl(x: &mut Exchange, r: &Request<'_>) -> Result<(), S3Error> {
    // ACLs are disabled, as on a new S3 bucket: reading one shows the owner's full control, after
    // the bucket or object is found.
    if r.route.operation == Operation::GetObjectAcl {
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

/// PutBucketAcl and PutObjectAcl on a store whose ACLs are disabled, as S3 answers them then:
/// the owner's full control (`x-amz-acl: private` or `bucket-owner-full-control`, no body) is what
/// there is already and is accepted; anything else, a grant or an `AccessControlPolicy` body, is
/// `400 AccessControlListNotSupported`.
pub(super) async fn put_acl(x: &mut Exchange, r: Request<'_>) -> Result<(), S3Error> {
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
