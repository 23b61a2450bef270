//! The S3 forms of the multipart primitives: CreateMultipartUpload, UploadPart,
//! CompleteMultipartUpload, AbortMultipartUpload.

use crate::client::{Client, finish, read_small_body};
use crate::error::{Error, Result, ServiceError};
use crate::integrity::UploadChecksum;
use crate::multipart::completed_part;
use crate::part_sums::PartSums;
use crate::request::{RequestSpec, TrailingChecksum, push_query};
use crate::transfer::TransferOptions;
use brisk_wire::sigv4::PayloadHash;
use brisk_wire::xml::{
    CompleteMultipartUpload, CompleteMultipartUploadResult, CompletedPart, ErrorDocument,
    XmlDocument,
};

impl Client {
    /// The S3 form of [`create_multipart_upload`](Self::create_multipart_upload).
    pub(crate) async fn s3_create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        options: &TransferOptions,
    ) -> Result<String> {
        let checksum = options.checksum;
        let mut spec = RequestSpec::new("POST", Some(bucket), Some(key))
            .header("x-amz-checksum-algorithm", checksum.algorithm().s3_name());
        spec = options
            .headers
            .add_to(spec, options.content_type.as_deref(), false);
        // A CRC can be combined from the parts' CRCs, so the object gets a checksum of its whole
        // bytes (S3's FULL_OBJECT type), which a parallel download checks without knowing the part
        // boundaries. SHA-256 can only be COMPOSITE (a checksum of the parts' checksums).
        if checksum != UploadChecksum::Sha256 {
            spec = spec.header("x-amz-checksum-type", "FULL_OBJECT");
        }
        self.create_upload(spec).await
    }

    #[allow(clippy::too_many_arguments)]
    /// The S3 form of [`upload_part`](Self::upload_part).
    pub(crate) async fn s3_upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        data: &[u8],
        signed: bool,
        algorithm: UploadChecksum,
        known: Option<PartSums>,
    ) -> Result<CompletedPart> {
        // A checksum known before the head (computed while the part was read, on cache-hot bytes)
        // goes in a header, with the payload signed or `UNSIGNED-PAYLOAD`. A signed payload needs
        // its SHA-256 before the head anyway, so its checksum is computed then if not known; an
        // unsigned one without a known checksum is sent aws-chunked with the checksum computed
        // while it is written, as a trailer.
        let trailer = TrailingChecksum::new(algorithm);
        let mut spec = RequestSpec::new("PUT", Some(bucket), Some(key)).part_of_created_upload();
        let header_checksum = if signed || known.is_some() {
            let sums = known.unwrap_or_else(|| PartSums::of(algorithm, data, signed));
            spec.payload = sums.payload_hash(signed, data);
            let checksum = sums.checksum;
            spec = spec.header(algorithm.algorithm().header_name(), checksum.clone());
            spec.body = data;
            Some(checksum)
        } else {
            spec = spec.aws_chunked(data, &trailer);
            None
        };
        push_query(&mut spec.query, "partNumber", &part_number.to_string());
        push_query(&mut spec.query, "uploadId", upload_id);
        let response = self.send(&spec).await?;
        let checksum = header_checksum
            .or_else(|| trailer.value())
            .expect("a part was sent, so its checksum was computed");
        completed_part(response, part_number, algorithm, checksum).await
    }

    /// The S3 form of [`complete_multipart_upload`](Self::complete_multipart_upload).
    pub(crate) async fn s3_complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<CompletedPart>,
        stored: Option<&TransferOptions>,
    ) -> Result<String> {
        let body = CompleteMultipartUpload { parts }.to_vec()?;
        let mut spec = RequestSpec::new("POST", Some(bucket), Some(key))
            .header("content-type", "application/xml")
            .slow_answer();
        if stored.is_some_and(|o| o.if_none_match_any) {
            spec = spec.header("if-none-match", "*");
        }
        push_query(&mut spec.query, "uploadId", upload_id);
        spec.payload = PayloadHash::of(&body);
        spec.body = &body;
        let mut response = self.send(&spec).await?;
        let status = response.head().status();
        let request_id = response.header("x-amz-request-id").map(str::to_owned);
        let xml = read_small_body(&mut response).await?;
        response.release();
        // S3 may answer 200 and then report a failure in the body (the head goes out before the
        // parts are assembled).
        if let Ok(document) = ErrorDocument::parse(&xml) {
            return Err(Error::from_service(ServiceError::new(
                status.max(500),
                Some(document),
                request_id,
                &self.config().region,
            )));
        }
        Ok(CompleteMultipartUploadResult::parse(&xml)?.etag)
    }

    /// The S3 form of [`abort_multipart_upload`](Self::abort_multipart_upload).
    pub(crate) async fn s3_abort_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<()> {
        let mut spec = RequestSpec::new("DELETE", Some(bucket), Some(key));
        push_query(&mut spec.query, "uploadId", upload_id);
        let response = self.send(&spec).await?;
        finish(response).await
    }
}
