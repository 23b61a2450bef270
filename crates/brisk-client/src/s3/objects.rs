//! The S3 forms of the object writes: PutObject, DeleteObject.

use crate::client::{Client, finish, read_small_body};
use crate::error::Result;
use crate::integrity::UploadChecksum;
use crate::objects::{PutOptions, PutResult};
use crate::part_sums::PartSums;
use crate::request::DELETE_BATCH;
use crate::request::RequestSpec;
use brisk_wire::checksum::Md5;
use brisk_wire::sigv4::PayloadHash;
use brisk_wire::xml::{Delete, DeleteResult, ObjectIdentifier, XmlDocument};

impl Client {
    /// The S3 form of [`put_summed`](Self::put_summed).
    pub(crate) async fn s3_put_summed(
        &self,
        bucket: &str,
        key: &str,
        body: &[u8],
        options: &PutOptions,
        known: Option<PartSums>,
    ) -> Result<PutResult> {
        let signed = self.signs_payload(options.payload_signing);
        let sums = known.unwrap_or_else(|| PartSums::of(options.checksum, body, signed));
        let payload = sums.payload_hash(signed, body);
        let checksum = sums.checksum;
        let mut spec = RequestSpec::new("PUT", Some(bucket), Some(key))
            .header(options.checksum.algorithm().header_name(), checksum.clone());
        spec = options
            .headers
            .add_to(spec, options.content_type.as_deref(), false);
        if options.if_none_match_any {
            spec = spec.header("if-none-match", "*");
        }
        spec.payload = payload;
        spec.body = body;
        let response = self.send(&spec).await?;
        let etag = response.header("etag").map(str::to_owned);
        finish(response).await?;
        Ok(PutResult {
            etag,
            checksum_crc32c: if options.checksum == UploadChecksum::Crc32c {
                checksum.clone()
            } else {
                String::new()
            },
            checksum_algorithm: options.checksum,
            checksum,
        })
    }

    /// The S3 form of [`delete`](Self::delete).
    pub(crate) async fn s3_delete(&self, bucket: &str, key: &str) -> Result<()> {
        let response = self
            .send(&RequestSpec::new("DELETE", Some(bucket), Some(key)))
            .await?;
        finish(response).await
    }

    /// The S3 form of [`delete_many`](Self::delete_many): DeleteObjects, [`DELETE_BATCH`] keys per
    /// request.
    pub(crate) async fn s3_delete_many<K: AsRef<str>>(
        &self,
        bucket: &str,
        keys: &[K],
    ) -> Result<DeleteResult> {
        let mut total = DeleteResult::default();
        for batch in keys.chunks(DELETE_BATCH) {
            let document = Delete {
                quiet: true,
                objects: batch
                    .iter()
                    .map(|k| ObjectIdentifier {
                        key: k.as_ref().to_owned(),
                        version_id: None,
                    })
                    .collect(),
            };
            let body = document.to_vec()?;
            let mut spec = RequestSpec::new("POST", Some(bucket), None)
                .header("content-md5", Md5::digest(&body).to_base64())
                .header("content-type", "application/xml");
            spec.query = "delete=".to_owned();
            spec.payload = PayloadHash::of(&body);
            spec.body = &body;
            let mut response = self.send(&spec).await?;
            let xml = read_small_body(&mut response).await?;
            response.release();
            let result = DeleteResult::parse(&xml)?;
            total.deleted.extend(result.deleted);
            total.errors.extend(result.errors);
        }
        Ok(total)
    }
}
