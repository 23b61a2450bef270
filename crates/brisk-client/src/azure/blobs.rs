//! Blob writes, deletes and copies in Azure's wire form.

use std::time::Duration;

use brisk_wire::azure::{block_id, block_list_body, crc64, crc64_header_value};
use brisk_wire::checksum::Md5;
use brisk_wire::xml::{CompletedPart, DeleteResult};
use time::OffsetDateTime;

use crate::UploadChecksum;
use crate::client::{Client, finish};
use crate::copy::CopyResult;
use crate::error::{Error, Result};
use crate::objects::{PutOptions, PutResult};
use crate::part_sums::PartSums;
use crate::request::{RequestSpec, push_query};

/// How long a pending copy is waited for before giving up: 1 hour. A copy within an account is
/// usually complete when the request returns; across accounts it runs at the service's pace.
const COPY_WAIT: Duration = Duration::from_secs(3600);

impl Client {
    /// Put Blob: `body` as a block blob in one request, with its CRC-64 (taken from `known`
    /// when the upload computed it while it read the bytes).
    pub(crate) async fn azure_put_blob(
        &self,
        container: &str,
        blob: &str,
        body: &[u8],
        options: &PutOptions,
        known: Option<PartSums>,
    ) -> Result<PutResult> {
        let known_crc64 = known
            .filter(|_| options.checksum == UploadChecksum::Crc64Nvme)
            .and_then(|k| super::crc64_from_s3_base64(&k.checksum));
        let crc = known_crc64.unwrap_or_else(|| crc64_header_value(crc64(body)));
        let response = self
            .send_checked(body, &crc, |integrity| {
                let mut spec = RequestSpec::new("PUT", Some(container), Some(blob))
                    .header("x-ms-blob-type", "BlockBlob")
                    .header(integrity.0, integrity.1);
                spec = options
                    .headers
                    .add_to(spec, options.content_type.as_deref(), true);
                if options.if_none_match_any {
                    spec = spec.header("if-none-match", "*");
                }
                spec.body = body;
                spec
            })
            .await?;
        let etag = response.header("etag").map(str::to_owned);
        finish(response).await?;
        Ok(PutResult {
            etag,
            checksum_crc32c: String::new(),
            checksum_algorithm: UploadChecksum::Crc64Nvme,
            checksum: crc,
        })
    }

    /// Put Block: part `part_number` (1-based) staged as block `block_id(part_number - 1)`, with
    /// its CRC-64 (taken from `known` when computed while the part was read, as `algorithm`).
    pub(crate) async fn azure_put_block(
        &self,
        container: &str,
        blob: &str,
        part_number: u32,
        data: &[u8],
        algorithm: UploadChecksum,
        known: Option<PartSums>,
    ) -> Result<CompletedPart> {
        let known_crc64 = known
            .filter(|_| algorithm == UploadChecksum::Crc64Nvme)
            .and_then(|k| super::crc64_from_s3_base64(&k.checksum));
        let crc = known_crc64.unwrap_or_else(|| crc64_header_value(crc64(data)));
        let id = block_id(part_number - 1);
        let response = self
            .send_checked(data, &crc, |integrity| {
                let mut spec = RequestSpec::new("PUT", Some(container), Some(blob))
                    .header(integrity.0, integrity.1);
                push_query(&mut spec.query, "comp", "block");
                push_query(&mut spec.query, "blockid", &id);
                spec.body = data;
                spec
            })
            .await?;
        finish(response).await?;
        Ok(CompletedPart {
            part_number,
            etag: id,
            ..CompletedPart::default()
        })
    }

    /// Put Block List: commits the staged blocks of `parts` in part order; returns the blob's ETag.
    /// With `stored`'s `if_none_match_any`, only if no blob exists under the name
    /// (`If-None-Match: *`): the staged blocks stay uncommitted otherwise.
    pub(crate) async fn azure_put_block_list(
        &self,
        container: &str,
        blob: &str,
        mut parts: Vec<CompletedPart>,
        stored: Option<&crate::TransferOptions>,
    ) -> Result<String> {
        parts.sort_by_key(|p| p.part_number);
        let ids: Vec<String> = parts.iter().map(|p| block_id(p.part_number - 1)).collect();
        let body = block_list_body(&ids);
        let mut spec = RequestSpec::new("PUT", Some(container), Some(blob))
            .header("content-type", "application/xml")
            .header("content-md5", Md5::digest(body.as_bytes()).to_base64())
            .slow_answer();
        if let Some(options) = stored {
            spec = options
                .headers
                .add_to(spec, options.content_type.as_deref(), true);
            if options.if_none_match_any {
                spec = spec.header("if-none-match", "*");
            }
        }
        push_query(&mut spec.query, "comp", "blocklist");
        spec.body = body.as_bytes();
        let response = self.send(&spec).await?;
        let etag = response.header("etag").map(str::to_owned);
        finish(response).await?;
        etag.ok_or_else(|| Error::UnexpectedResponse {
            what: "Put Block List answered without an ETag".into(),
        })
    }

    /// Sends the write `build` makes with the integrity header it is given: `x-ms-content-crc64`
    /// (`crc`), or `Content-MD5` of `data` where the service refuses the CRC (then remembered for
    /// the client's later writes; Azurite refuses it unless started `--loose`).
    async fn send_checked<'a>(
        &self,
        data: &[u8],
        crc: &str,
        build: impl Fn((&'static str, String)) -> RequestSpec<'a>,
    ) -> Result<crate::client::Response> {
        let azure = self.dialect().azure().expect("an Azure client");
        if !azure.crc64_refused() {
            match self
                .send(&build(("x-ms-content-crc64", crc.to_owned())))
                .await
            {
                Err(e) if azure.refuses_crc64(&e) => {}
                other => return other,
            }
        }
        self.send(&build(("content-md5", Md5::digest(data).to_base64())))
            .await
    }

    /// The Azure form of [`delete_many`](Self::delete_many): one Delete Blob per key.
    pub(crate) async fn azure_delete_blobs<K: AsRef<str>>(
        &self,
        container: &str,
        keys: &[K],
    ) -> Result<DeleteResult> {
        let mut total = DeleteResult::default();
        // Azure has no multi-delete in the blob API (batch is a separate multipart protocol):
        // one Delete Blob per key, each failure reported as DeleteObjects reports it.
        for key in keys {
            let key = key.as_ref();
            match self.azure_delete_blob(container, key).await {
                Ok(()) => total.deleted.push(brisk_wire::xml::DeletedObject {
                    key: key.to_owned(),
                    ..Default::default()
                }),
                Err(e) => total.errors.push(brisk_wire::xml::DeleteError {
                    key: key.to_owned(),
                    code: e
                        .service_error()
                        .map_or_else(|| "ClientError".to_owned(), |s| s.code.clone()),
                    message: e.to_string(),
                    ..Default::default()
                }),
            }
        }
        Ok(total)
    }

    /// Delete Blob. A blob that does not exist counts as deleted, as a missing key does in S3.
    pub(crate) async fn azure_delete_blob(&self, container: &str, blob: &str) -> Result<()> {
        match self
            .send(&RequestSpec::new("DELETE", Some(container), Some(blob)))
            .await
        {
            Ok(response) => finish(response).await,
            Err(Error::NoSuchKey(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Copy Blob from `src` to `dst` in the same account: the service copies, no bytes pass
    /// through this process. A copy answered `pending` is waited for (polling the destination's
    /// `x-ms-copy-status`), and a copy that fails or is aborted is an error.
    pub(crate) async fn azure_copy_blob(
        &self,
        src_container: &str,
        src_blob: &str,
        dst_container: &str,
        dst_blob: &str,
    ) -> Result<CopyResult> {
        let source = self.azure_blob_url(src_container, src_blob);
        let spec = RequestSpec::new("PUT", Some(dst_container), Some(dst_blob))
            .header("x-ms-copy-source", source)
            .slow_answer();
        let response = self.send(&spec).await?;
        let mut status = response.header("x-ms-copy-status").map(str::to_owned);
        let mut etag = response.header("etag").map(str::to_owned);
        let mut last_modified = response.header("last-modified").map(str::to_owned);
        finish(response).await?;
        let deadline = tokio::time::Instant::now() + COPY_WAIT;
        let mut wait = Duration::from_millis(50);
        while status.as_deref() == Some("pending") {
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::UnexpectedResponse {
                    what: format!(
                        "the copy to {dst_container}/{dst_blob} was still pending after {COPY_WAIT:?}"
                    ),
                });
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(2));
            let response = self
                .send(&RequestSpec::new(
                    "HEAD",
                    Some(dst_container),
                    Some(dst_blob),
                ))
                .await?;
            status = response.header("x-ms-copy-status").map(str::to_owned);
            etag = response.header("etag").map(str::to_owned);
            last_modified = response.header("last-modified").map(str::to_owned);
            let description = response
                .header("x-ms-copy-status-description")
                .map(str::to_owned);
            response.release();
            if matches!(status.as_deref(), Some("failed" | "aborted")) {
                return Err(Error::UnexpectedResponse {
                    what: format!(
                        "the copy to {dst_container}/{dst_blob} {}: {}",
                        status.as_deref().unwrap_or_default(),
                        description.unwrap_or_default()
                    ),
                });
            }
        }
        Ok(CopyResult {
            etag: etag.ok_or_else(|| Error::UnexpectedResponse {
                what: "Copy Blob answered without an ETag".into(),
            })?,
            last_modified: last_modified
                .and_then(|t| httpdate::parse_http_date(&t).ok())
                .map_or_else(OffsetDateTime::now_utc, OffsetDateTime::from),
        })
    }

    /// The URL of a blob as a copy source names it (with the client's SAS, if it uses one).
    fn azure_blob_url(&self, container: &str, blob: &str) -> String {
        let target = self.target(Some(container), Some(blob));
        let scheme = self.config().endpoint.scheme.as_str();
        let mut url = format!("{scheme}://{}{}", target.host_header, target.path);
        if let Some(crate::config::AzureCredentials::Sas(token)) =
            self.config().azure.as_ref().map(|a| &a.credentials)
        {
            url.push('?');
            url.push_str(token);
        }
        url
    }
}
