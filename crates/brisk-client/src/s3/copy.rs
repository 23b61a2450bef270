//! The S3 form of a copy: CopyObject, or UploadPartCopy parts above 5 GiB.

use crate::client::{Client, read_small_body};
use crate::copy::{CopyOptions, CopyResult, copy_part_size};
use crate::error::{Error, Result, ServiceError};
use crate::multipart::next_finished_part;
use crate::request::{RequestSpec, push_query};
use brisk_wire::sigv4::encode_key_path;
use brisk_wire::xml::{
    CompletedPart, CopyObjectResult, CopyPartResult, ErrorDocument, XmlDocument,
};
use time::OffsetDateTime;
use tokio::task::JoinSet;

impl Client {
    /// The S3 form of [`copy_object`](Self::copy_object).
    pub(crate) async fn s3_copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        options: CopyOptions,
    ) -> Result<CopyResult> {
        // The source's size decides between one request and parts: the caller's, or a HEAD's (as the
        // AWS CLI makes; a CopyObject over 5 GiB would only fail after the round trip). A multipart
        // copy needs the HEAD anyway, for the ETag it pins and the metadata it carries over.
        if options
            .source_size
            .is_none_or(|size| size > options.multipart_threshold)
        {
            let meta = self.head(src_bucket, src_key).await?;
            if meta.content_length > options.multipart_threshold {
                return self
                    .copy_in_parts(src_bucket, src_key, dst_bucket, dst_key, &options, meta)
                    .await;
            }
        }
        let source = copy_source(src_bucket, src_key);
        let spec = RequestSpec::new("PUT", Some(dst_bucket), Some(dst_key))
            .header("x-amz-copy-source", source)
            .slow_answer();
        let spec = options.metadata_headers(spec, None)?;
        let mut response = self.send(&spec).await?;
        let xml = read_small_body(&mut response).await?;
        response.release();
        let result = self.copy_answer::<CopyObjectResult>(&xml)?;
        Ok(CopyResult {
            etag: result.etag,
            last_modified: result.last_modified,
        })
    }

    /// The multipart copy of a source of `meta.content_length` bytes.
    async fn copy_in_parts(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        options: &CopyOptions,
        meta: crate::ObjectMeta,
    ) -> Result<CopyResult> {
        let etag = meta.etag.clone().ok_or_else(|| Error::UnexpectedResponse {
            what: "HEAD answered without an ETag; a multipart copy can not be pinned".into(),
        })?;
        let size = meta.content_length;
        let part_size = copy_part_size(size, options.part_size);
        let create = RequestSpec::new("POST", Some(dst_bucket), Some(dst_key));
        let upload_id = self
            .create_upload(options.metadata_headers(create, Some(&meta))?)
            .await?;

        let source = copy_source(src_bucket, src_key);
        let copied = self
            .copy_parts(
                dst_bucket, dst_key, &upload_id, &source, &etag, size, part_size, options,
            )
            .await;
        let completed = match copied {
            Ok(parts) => {
                self.complete_multipart_upload(dst_bucket, dst_key, &upload_id, parts, None)
                    .await
            }
            Err(e) => Err(e),
        };
        match completed {
            Ok(etag) => {
                let last_modified = self
                    .head(dst_bucket, dst_key)
                    .await
                    .ok()
                    .and_then(|m| m.last_modified)
                    .map(OffsetDateTime::from)
                    .unwrap_or_else(OffsetDateTime::now_utc);
                Ok(CopyResult {
                    etag,
                    last_modified,
                })
            }
            Err(e) => {
                // Best effort: the copy's failure is what the caller needs to see.
                let _ = self
                    .abort_multipart_upload(dst_bucket, dst_key, &upload_id)
                    .await;
                Err(e)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn copy_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        source: &str,
        etag: &str,
        size: u64,
        part_size: u64,
        options: &CopyOptions,
    ) -> Result<Vec<CompletedPart>> {
        let count = size.div_ceil(part_size);
        let mut done = Vec::with_capacity(count as usize);
        let mut tasks: JoinSet<Result<CompletedPart>> = JoinSet::new();
        let mut next = 0u64;
        while next < count || !tasks.is_empty() {
            while next < count && tasks.len() < options.parts_in_flight {
                let first = next * part_size;
                let last = (first + part_size).min(size) - 1;
                let part_number = (next + 1) as u32;
                let (client, bucket, key, upload_id, source, etag) = (
                    self.clone(),
                    bucket.to_owned(),
                    key.to_owned(),
                    upload_id.to_owned(),
                    source.to_owned(),
                    etag.to_owned(),
                );
                tasks.spawn(async move {
                    let mut spec = RequestSpec::new("PUT", Some(&bucket), Some(&key))
                        .header("x-amz-copy-source", source)
                        .header("x-amz-copy-source-range", format!("bytes={first}-{last}"))
                        .header("x-amz-copy-source-if-match", etag)
                        .slow_answer();
                    push_query(&mut spec.query, "partNumber", &part_number.to_string());
                    push_query(&mut spec.query, "uploadId", &upload_id);
                    let mut response = client.send(&spec).await?;
                    let xml = read_small_body(&mut response).await?;
                    response.release();
                    let result = client.copy_answer::<CopyPartResult>(&xml)?;
                    Ok(CompletedPart {
                        part_number,
                        etag: result.etag,
                        ..CompletedPart::default()
                    })
                });
                next += 1;
            }
            if let Some(part) = next_finished_part(&mut tasks, "copy").await? {
                done.push(part);
            }
        }
        done.sort_by_key(|p| p.part_number);
        Ok(done)
    }

    /// A copy's answer: its result document, or the Error document S3 sends with a 200 when a copy
    /// fails after the response began (a server-side failure, reported as the 500 it stands for).
    fn copy_answer<T: XmlDocument>(&self, xml: &[u8]) -> Result<T> {
        match T::parse(xml) {
            Ok(result) => Ok(result),
            Err(parse) => match ErrorDocument::parse(xml) {
                Ok(document) => Err(Error::from_service(ServiceError::new(
                    500,
                    Some(document),
                    None,
                    &self.config().region,
                ))),
                Err(_) => Err(parse.into()),
            },
        }
    }
}

/// `x-amz-copy-source`: `/bucket/key`, the key percent-encoded as in a path.
fn copy_source(bucket: &str, key: &str) -> String {
    format!("/{bucket}{}", encode_key_path(key))
}
