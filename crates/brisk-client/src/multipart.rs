//! The multipart primitives every multipart write is made of: create an upload, send a part (from
//! memory, or from a file range with `sendfile`), complete or abort the upload (Azure: stage a
//! block, commit the block list), and take the parts' results as they finish. The file upload
//! (`upload.rs`), [`ObjectWriter`](crate::ObjectWriter) and multipart copies
//! ([`Client::copy_object`]) are built on them.

use brisk_wire::xml::{CompletedPart, InitiateMultipartUploadResult, XmlDocument};
use tokio::task::JoinSet;

use crate::client::{Client, finish, read_small_body};
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::integrity::UploadChecksum;
use crate::part_sums::PartSums;
use crate::request::{FileBody, RequestSpec, TrailingChecksum, push_query};
use crate::transfer::TransferOptions;

impl Client {
    /// Azure checks each block against `x-ms-content-crc64`: its uploads compute CRC-64 while they
    /// read, whatever was chosen for S3.
    pub(crate) fn with_dialect_checksum(&self, mut options: TransferOptions) -> TransferOptions {
        if let Some(checksum) = self.dialect().block_checksum() {
            options.checksum = checksum;
        }
        options
    }
}

impl Client {
    /// CreateMultipartUpload with `options`' checksum algorithm and content type.
    pub(crate) async fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        options: &TransferOptions,
    ) -> Result<String> {
        match self.dialect() {
            Dialect::S3(_) => self.s3_create_multipart_upload(bucket, key, options).await,
            Dialect::Azure(_) => {
                // Blocks are staged under ids of their own; there is no upload to create (the
                // content type goes with the block list).
                Ok(String::new())
            }
        }
    }

    /// CreateMultipartUpload of `spec` (a POST to the object, with whatever headers the upload is
    /// created with); returns the upload id.
    pub(crate) async fn create_upload(&self, mut spec: RequestSpec<'_>) -> Result<String> {
        spec.query = "uploads=".into();
        let mut response = self.send(&spec).await?;
        let xml = read_small_body(&mut response).await?;
        response.release();
        Ok(InitiateMultipartUploadResult::parse(&xml)?.upload_id)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn upload_part(
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
        match self.dialect() {
            Dialect::S3(_) => {
                self.s3_upload_part(
                    bucket,
                    key,
                    upload_id,
                    part_number,
                    data,
                    signed,
                    algorithm,
                    known,
                )
                .await
            }
            Dialect::Azure(_) => {
                self.azure_put_block(bucket, key, part_number, data, algorithm, known)
                    .await
            }
        }
    }

    /// Sends part `part_number` from the file range `body` (see [`FileBody`]): aws-chunked, its
    /// checksum taken as the chunks go out and sent as the trailer.
    pub(crate) async fn upload_part_file(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        body: &FileBody,
        algorithm: UploadChecksum,
    ) -> Result<CompletedPart> {
        let trailer = TrailingChecksum::new(algorithm);
        let mut spec = RequestSpec::new("PUT", Some(bucket), Some(key))
            .part_of_created_upload()
            .aws_chunked_file(body, &trailer);
        push_query(&mut spec.query, "partNumber", &part_number.to_string());
        push_query(&mut spec.query, "uploadId", upload_id);
        let response = self.send(&spec).await?;
        let checksum = trailer
            .value()
            .expect("a part was sent, so its checksum was computed");
        completed_part(response, part_number, algorithm, checksum).await
    }
}

/// The part an UploadPart response acknowledged, with the checksum that was sent for it.
pub(crate) async fn completed_part(
    response: crate::client::Response,
    part_number: u32,
    algorithm: UploadChecksum,
    checksum: String,
) -> Result<CompletedPart> {
    let etag =
        response
            .header("etag")
            .map(str::to_owned)
            .ok_or_else(|| Error::UnexpectedResponse {
                what: format!("UploadPart {part_number} answered without an ETag"),
            })?;
    finish(response).await?;
    let mut part = CompletedPart {
        part_number,
        etag,
        ..CompletedPart::default()
    };
    part.checksums.set(algorithm.algorithm(), checksum);
    Ok(part)
}

impl Client {
    /// CompleteMultipartUpload of `parts` (Azure: Put Block List); returns the object's ETag.
    /// `stored` is the upload's options: the headers and content type go with an Azure block
    /// list, and `if_none_match_any` makes the completion conditional (`If-None-Match: *`). A
    /// refused condition leaves the upload in place, to be aborted by the caller.
    pub(crate) async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<CompletedPart>,
        stored: Option<&TransferOptions>,
    ) -> Result<String> {
        match self.dialect() {
            Dialect::S3(_) => {
                self.s3_complete_multipart_upload(bucket, key, upload_id, parts, stored)
                    .await
            }
            Dialect::Azure(_) => self.azure_put_block_list(bucket, key, parts, stored).await,
        }
    }

    pub(crate) async fn abort_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<()> {
        match self.dialect() {
            Dialect::S3(_) => self.s3_abort_multipart_upload(bucket, key, upload_id).await,
            Dialect::Azure(_) => {
                // Uncommitted blocks are discarded by the service after a week; nothing to abort.
                Ok(())
            }
        }
    }
}

/// The next part a set of part tasks finished, `Ok(None)` when none is running. The first failure (a
/// request's error, or a task that panicked) is returned, and ends the transfer.
pub(crate) async fn next_finished_part(
    tasks: &mut JoinSet<Result<CompletedPart>>,
    what: &str,
) -> Result<Option<CompletedPart>> {
    match tasks.join_next().await {
        Some(Ok(result)) => result.map(Some),
        Some(Err(join)) => Err(Error::UnexpectedResponse {
            what: format!("{what} task failed: {join}"),
        }),
        None => Ok(None),
    }
}
