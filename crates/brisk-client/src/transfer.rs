//! Whole-file transfers: multipart upload from a file and parallel ranged download to a file.
//!
//! # Memory
//!
//! Each part in flight holds one pooled block of `part_size` rounded up to the pool's size class
//! (8 MiB parts use 8 MiB blocks), taken from the client's [`BufferPool`](brisk_mem::BufferPool) and
//! so paid from its memory budget; a part waits for its block when the budget is full. At most
//! `parts_in_flight` parts are in flight, so an upload holds at most
//! `parts_in_flight × block_size(part_size)` bytes of buffers (4 × 8 MiB = 32 MiB by default),
//! whatever the file's size. A download from S3 streams `parts_in_flight` GETs at a time (each a
//! span of up to 64 MiB of `part_size` ranges) through two blocks of `DOWNLOAD_CHUNK` (1 MiB) per
//! GET, one filling while the other is written: `parts_in_flight × 2 MiB` (8 MiB by default). Azure
//! downloads stream the same way; where parts are of at most 4 MiB each GET asks for one part, so
//! that the service sends its MD5, which the stream checks as the bytes pass. Blocks are recycled
//! through the pool's free lists, so a long transfer allocates its blocks once. A download of 2 GiB
//! or more measures whether one stream carries it as fast and for less CPU, and if so goes on with
//! one (holding 2 MiB), asking for four spans at a time (see [`crate::stream_count`]).
//! An upload with an unsigned payload over plain HTTP holds no part block at all: each part in
//! flight reads through one 256 KiB scratch block (below).
//!
//! # Copies
//!
//! Upload: file → block (one read), block → socket (written from where it is). Unsigned over plain
//! HTTP: file → scratch block, 256 KiB at a time, only to take the checksum; the kernel sends the
//! bytes from the page cache with `sendfile` (aws-chunked, the checksum as the trailer; see
//! `FileBody`). Download: socket → block (read straight into it), block → file (one positioned
//! write).
//!
//! # Failure
//!
//! A failed upload aborts its multipart upload (so no parts linger and cost storage); a failed or
//! dropped download removes its temporary file. A download writes to a temporary file beside the destination
//! and renames it into place only when every part has arrived, so the destination never holds half
//! an object. Every ranged GET of a download is pinned to the ETag read first (`If-Match`), so the
//! file holds one version of the object, or the download fails with
//! [`Error::ObjectChanged`].
//!
//! # Integrity
//!
//! Multipart uploads with a CRC store a `FULL_OBJECT` checksum, and a download checks the bytes it
//! assembled against the stored full-object CRC (combined from the parts' CRCs as they land; see
//! [`Client::download`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use brisk_mem::{MAX_BLOCK_SIZE, PooledBlock};
use brisk_wire::checksum::{
    ChecksumAlgorithm, ChecksumValue, Checksummer, CompositeChecksum, FullObjectCrc, Md5,
    Md5Digest, MultipartChecksum,
};
use brisk_wire::sigv4::PayloadHash;
use brisk_wire::xml::{
    CompleteMultipartUpload, CompleteMultipartUploadResult, CompletedPart, ErrorDocument,
    InitiateMultipartUploadResult, XmlDocument,
};
use tokio::task::JoinSet;

use crate::client::{Client, finish, read_small_body};
use crate::error::{Error, Result, ServiceError};
use crate::integrity::TRANSACTIONAL_MD5_MAX;
use crate::integrity::UploadChecksum;
use crate::objects::{DownloadHead, ObjectHeaders, PayloadSigning, StoredChecksum};
use crate::request::{
    FileBody, RequestSpec, TrailingChecksum, check_bucket, check_key, push_query,
};
use crate::stream::ObjectStream;
use crate::stream_count::{StreamCount, StreamMeasure};

/// Default part size: 8 MiB, the AWS CLI's default and the pool's largest block class (so a part
/// is one block with nothing wasted). At 100 ms per request a part moves at 80 MiB/s per
/// connection; throughput comes from parts in flight.
pub const DEFAULT_PART_SIZE: usize = 8 * 1024 * 1024;

/// Default parts in flight per transfer: 4, i.e. 32 MiB of buffers with the default part size (an
/// upload from blocks holds one more, read ahead: [`UPLOAD_READ_AHEAD`]). On
/// loopback or a LAN a few connections saturate the link; raise it for high-latency links (the
/// bandwidth-delay formula in `docs/memory.md`: 1.25 GB/s × 100 ms ≈ 15 parts of 8 MiB).
pub const DEFAULT_PARTS_IN_FLIGHT: usize = 4;

/// Parts an upload from blocks reads ahead of those it sends: while `parts_in_flight` parts are
/// on the wire, the next is read from the file and summed (its checksum, and its SHA-256 when
/// signed), so it goes out as soon as one of them is answered instead of after its own read. With
/// parts sent without `100 Continue`, it raised the parts at the server of a signed 2 GiB upload
/// to `brisk serve` from 2.6–2.7 of 4 to 3.0 on average (its access log; 4.67–5.02 s → 4.42–4.72,
/// BENCHMARKS.md "Upload parts without `100 Continue`"); once `brisk serve` wrote bodies off its
/// workers, 1–4 % (3.18–3.27 s against 3.21–3.42). One more block of memory (8 MiB by default).
pub const UPLOAD_READ_AHEAD: usize = 1;

/// S3's smallest part (all but the last): 5 MiB.
pub const MIN_PART_SIZE: usize = 5 * 1024 * 1024;

/// S3's most parts per upload.
pub const MAX_PARTS: u64 = 10_000;

/// Bytes that transfers have completed, shared with whoever shows progress (a bar, a log line).
///
/// Cloning shares the counter, so one counter given to many transfers adds them up (a recursive
/// copy's aggregate bar). A part counts when it is done: acknowledged by the server for an upload,
/// written to the file for a download. The count therefore moves in steps of one part (8 MiB by
/// default), never counts bytes twice when a request is retried, and reading it costs one atomic
/// load, so a progress bar can poll it as often as it redraws.
#[derive(Debug, Clone, Default)]
pub struct TransferProgress(Arc<AtomicU64>);

impl TransferProgress {
    /// A counter at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes completed so far.
    pub fn bytes(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts `n` more bytes completed (the transfers call it; a caller may too, for work done
    /// outside them, such as a server-side copy).
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
}

/// Two progress values are equal when they share one counter.
impl PartialEq for TransferProgress {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for TransferProgress {}

/// How a transfer is cut and scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferOptions {
    /// Bytes per part (uploads: at least [`MIN_PART_SIZE`]); at most the pool's largest block,
    /// [`MAX_BLOCK_SIZE`] (8 MiB).
    pub part_size: usize,
    /// Parts in flight at once (at least 1).
    pub parts_in_flight: usize,
    /// How upload parts are protected.
    pub payload_signing: PayloadSigning,
    /// The checksum sent with each upload part (and the algorithm the multipart upload is created
    /// with). CRC32C unless chosen otherwise.
    pub checksum: UploadChecksum,
    /// Where completed bytes are counted, for progress reports (none by default).
    pub progress: Option<TransferProgress>,
    /// Downloads of an object with no stored checksum whose ETag is the MD5 of its bytes (a
    /// single-part upload: 32 hex digits, no `-<parts>`) check the file against that MD5 in a
    /// second pass over it (about 1.5–2 CPU s/GiB). Off by default; S3 objects encrypted with
    /// SSE-KMS or SSE-C have ETags that are not MD5s, and then fail the check.
    pub verify_md5_etag: bool,
    /// The object's size, when the caller knows it already (from a listing, or a HEAD of its
    /// own). A download of an object no larger than one part is then one GET into a buffer of the
    /// object's size, checked as [`Client::get_bytes`] checks it, with no HEAD before it: half the
    /// requests for a tree of small objects. The hint only picks the path: the file holds what the
    /// GET returned, and an object that has grown past one part meanwhile is streamed in ranges as
    /// any other (its first GET dropped unread). Ignored by uploads, and with `verify_md5_etag`.
    pub known_size: Option<u64>,
    /// The object's HEAD, when the caller made it already ([`Client::head_for_download`]): a
    /// download of that object then makes no HEAD of its own and takes its size, ETag and stored
    /// checksum from it. Ignored for another object, and by uploads.
    pub known_head: Option<DownloadHead>,
    /// Whether a download of a large object measures if one stream carries it as fast as
    /// `parts_in_flight` do, and goes on with one if it does (see [`StreamMeasure`]): on by
    /// default. `None` keeps `parts_in_flight` streams throughout. Ignored by uploads.
    pub measure_streams: Option<StreamMeasure>,
    /// The `Content-Type` an upload stores with the object (on its PUT, or on the multipart
    /// upload it creates; Azure: `x-ms-blob-content-type`). None leaves it to the service
    /// (S3: `binary/octet-stream`). Ignored by downloads.
    pub content_type: Option<String>,
    /// The other headers and the user metadata an upload stores (see [`ObjectHeaders`]).
    /// Ignored by downloads.
    pub headers: ObjectHeaders,
    /// Store the object only if no object exists under the key (`If-None-Match: *`), as
    /// [`PutOptions::if_none_match_any`](crate::PutOptions::if_none_match_any) does for one PUT:
    /// on the single PUT (Azure: Put Blob) of an upload that fits in one part, and on the
    /// CompleteMultipartUpload (Azure: Put Block List) of one that does not, so that the
    /// condition is checked when the object would appear, whoever wrote the key while the parts
    /// were sent. A key that exists fails the upload with [`Error::PreconditionFailed`] and its
    /// multipart upload is aborted: the object that was there stays as it was. Ignored by
    /// downloads.
    pub if_none_match_any: bool,
}

impl Default for TransferOptions {
    fn default() -> Self {
        Self {
            part_size: DEFAULT_PART_SIZE,
            parts_in_flight: DEFAULT_PARTS_IN_FLIGHT,
            payload_signing: PayloadSigning::Auto,
            checksum: UploadChecksum::Crc32c,
            progress: None,
            verify_md5_etag: false,
            known_size: None,
            known_head: None,
            measure_streams: Some(StreamMeasure::default()),
            content_type: None,
            headers: ObjectHeaders::default(),
            if_none_match_any: false,
        }
    }
}

impl TransferOptions {
    /// Counts `n` completed bytes on the progress counter, if there is one.
    /// What a single PUT of an upload stores: these options' signing, checksum, headers and
    /// condition.
    pub(crate) fn put_options(&self) -> crate::PutOptions {
        crate::PutOptions {
            payload_signing: self.payload_signing,
            checksum: self.checksum,
            content_type: self.content_type.clone(),
            headers: self.headers.clone(),
            if_none_match_any: self.if_none_match_any,
        }
    }

    pub(crate) fn count(&self, n: u64) {
        if let Some(progress) = &self.progress {
            progress.add(n);
        }
    }

    fn check(&self, upload: bool) -> Result<()> {
        let min = if upload { MIN_PART_SIZE } else { 1 };
        if self.part_size < min || self.part_size > MAX_BLOCK_SIZE {
            return Err(Error::InvalidArgument {
                what: format!(
                    "part size {} is outside {min}..={MAX_BLOCK_SIZE} bytes",
                    self.part_size
                ),
            });
        }
        if self.parts_in_flight == 0 {
            return Err(Error::InvalidArgument {
                what: "parts_in_flight must be at least 1".into(),
            });
        }
        Ok(())
    }
}

impl Client {
    /// Azure checks each block against `x-ms-content-crc64`: its uploads compute CRC-64 while they
    /// read, whatever was chosen for S3.
    pub(crate) fn with_dialect_checksum(&self, mut options: TransferOptions) -> TransferOptions {
        if self.is_azure() {
            options.checksum = UploadChecksum::Crc64Nvme;
        }
        options
    }
}

/// Checks options for an upload (part size within S3's and the pool's limits, at least one part in
/// flight).
pub(crate) fn check_upload_options(options: &TransferOptions) -> Result<()> {
    options.check(true)
}

/// What an upload produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadResult {
    /// The object's ETag (`"<hex>-<parts>"` for a multipart upload).
    pub etag: Option<String>,
    /// Bytes uploaded.
    pub size: u64,
    /// Parts sent (1 for a file that fits in one part, sent as a single PUT).
    pub parts: u32,
}

impl Client {
    /// Uploads the file at `path` to `bucket`/`key`: one PUT if it fits in one part, else a multipart
    /// upload with up to `parts_in_flight` parts in flight, each from a pooled block. On failure the
    /// multipart upload is aborted.
    ///
    /// A `path` that is not a regular file (a named pipe such as `/dev/stdin` or a shell's
    /// `<(command)`, a device) has no size to plan parts from and cannot be read at offsets: it is
    /// read front to back to its end, as [`Client::upload_reader`] reads a stream.
    pub async fn upload(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        check_bucket(bucket)?;
        check_key(key)?;
        options.check(true)?;
        if is_special_file(path) {
            return self.upload_in_order(bucket, key, path, options).await;
        }
        let options = self.with_dialect_checksum(options);
        let file = std::fs::File::open(path).map_err(|e| file_error(path, "opening", e))?;
        let size = file
            .metadata()
            .map_err(|e| file_error(path, "reading the size of", e))?
            .len();
        let file = Arc::new(file);
        let part_size = options.part_size as u64;
        if size <= part_size && size > 0 && self.sends_from_files(options.payload_signing) {
            let body = FileBody::new(Arc::clone(&file), path, 0, size, self.buffer_pool());
            let etag = self.put_file_body(bucket, key, &body, &options).await?;
            options.count(size);
            return Ok(UploadResult {
                etag,
                size,
                parts: 1,
            });
        }
        if size <= part_size {
            let block = self.buffer_pool().get(size as usize).await?;
            let signed = self.signs_payload(options.payload_signing);
            let (block, sums) = read_part_summed(
                &file,
                path,
                0,
                block,
                size as usize,
                options.checksum,
                signed,
            )
            .await?;
            let put = self
                .put_summed(
                    bucket,
                    key,
                    &block[..size as usize],
                    &options.put_options(),
                    Some(sums),
                )
                .await?;
            options.count(size);
            return Ok(UploadResult {
                etag: put.etag,
                size,
                parts: 1,
            });
        }
        let parts = size.div_ceil(part_size);
        if parts > MAX_PARTS {
            return Err(Error::InvalidArgument {
                what: format!(
                    "{size} bytes in parts of {part_size} would need {parts} parts; S3 allows {MAX_PARTS}"
                ),
            });
        }
        let upload_id = self.create_multipart_upload(bucket, key, &options).await?;
        let uploaded = self
            .upload_parts(bucket, key, &upload_id, &file, path, size, &options)
            .await;
        let completed = match uploaded {
            Ok(parts) => {
                self.complete_multipart_upload(bucket, key, &upload_id, parts, Some(&options))
                    .await
            }
            Err(e) => Err(e),
        };
        match completed {
            Ok(etag) => Ok(UploadResult {
                etag: Some(etag),
                size,
                parts: parts as u32,
            }),
            Err(e) => {
                // Best effort: the upload's failure is what the caller needs to see.
                let _ = self.abort_multipart_upload(bucket, key, &upload_id).await;
                Err(e)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn upload_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        file: &Arc<std::fs::File>,
        path: &Path,
        size: u64,
        options: &TransferOptions,
    ) -> Result<Vec<CompletedPart>> {
        let part_size = options.part_size as u64;
        let count = size.div_ceil(part_size);
        let mut done = Vec::with_capacity(count as usize);
        let mut tasks: JoinSet<Result<CompletedPart>> = JoinSet::new();
        let mut next = 0u64;
        let signed = self.signs_payload(options.payload_signing);
        let from_files = self.sends_from_files(options.payload_signing);
        // Parts read into blocks are read and summed ahead of their turn to send; parts sent from
        // the file read as they go.
        let sending = Arc::new(tokio::sync::Semaphore::new(options.parts_in_flight));
        let most_tasks = if from_files {
            options.parts_in_flight
        } else {
            options.parts_in_flight + UPLOAD_READ_AHEAD
        };
        while next < count || !tasks.is_empty() {
            while next < count && tasks.len() < most_tasks {
                let offset = next * part_size;
                let len = part_size.min(size - offset) as usize;
                let part_number = (next + 1) as u32;
                let checksum = options.checksum;
                let progress = options.progress.clone();
                let (client, bucket, key, upload_id, file, path) = (
                    self.clone(),
                    bucket.to_owned(),
                    key.to_owned(),
                    upload_id.to_owned(),
                    Arc::clone(file),
                    path.to_owned(),
                );
                if from_files {
                    tasks.spawn(async move {
                        let body =
                            FileBody::new(file, &path, offset, len as u64, client.buffer_pool());
                        let part = client
                            .upload_part_file(
                                &bucket,
                                &key,
                                &upload_id,
                                part_number,
                                &body,
                                checksum,
                            )
                            .await?;
                        if let Some(progress) = progress {
                            progress.add(len as u64);
                        }
                        Ok(part)
                    });
                    next += 1;
                    continue;
                }
                let sending = Arc::clone(&sending);
                tasks.spawn(async move {
                    // Once it has its block, the part queues for its turn to send while it
                    // reads, so parts are sent in the order they got their blocks (the semaphore
                    // is fair) whichever read ends first. A turn is only ever held with a block,
                    // so a budget with room for fewer blocks than parts cannot leave every turn
                    // waiting for a block held by a part waiting for a turn. A part that fails
                    // closes the semaphore before giving up its turn, so the part read ahead is
                    // not sent after the upload has failed.
                    let block = client.buffer_pool().get(len).await?;
                    let (read, turn) = tokio::join!(
                        read_part_summed(&file, &path, offset, block, len, checksum, signed),
                        sending.acquire()
                    );
                    let (block, sums) = read?;
                    let Ok(_turn) = turn else {
                        return Err(Error::UnexpectedResponse {
                            what: format!("part {part_number} not sent: an earlier part failed"),
                        });
                    };
                    let part = client
                        .upload_part(
                            &bucket,
                            &key,
                            &upload_id,
                            part_number,
                            &block[..len],
                            signed,
                            checksum,
                            Some(sums),
                        )
                        .await
                        .inspect_err(|_| sending.close())?;
                    if let Some(progress) = progress {
                        progress.add(len as u64);
                    }
                    Ok(part)
                });
                next += 1;
            }
            if let Some(part) = next_finished_part(&mut tasks, "upload").await? {
                done.push(part);
            }
        }
        done.sort_by_key(|p| p.part_number);
        Ok(done)
    }

    /// CreateMultipartUpload with `options`' checksum algorithm and content type.
    pub(crate) async fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        options: &TransferOptions,
    ) -> Result<String> {
        if self.is_azure() {
            // Blocks are staged under ids of their own; there is no upload to create (the content
            // type goes with the block list).
            return Ok(String::new());
        }
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
        if self.is_azure() {
            let crc64 = known
                .filter(|_| algorithm == UploadChecksum::Crc64Nvme)
                .and_then(|k| crate::azure::crc64_from_s3_base64(&k.checksum));
            return self
                .azure_put_block(bucket, key, part_number, data, crc64)
                .await;
        }
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

    /// PutObject of the file range `body` (a whole file that fits in one part), sent as
    /// [`upload_part_file`](Self::upload_part_file) sends a part; returns the ETag.
    async fn put_file_body(
        &self,
        bucket: &str,
        key: &str,
        body: &FileBody,
        options: &TransferOptions,
    ) -> Result<Option<String>> {
        let trailer = TrailingChecksum::new(options.checksum);
        let mut spec =
            RequestSpec::new("PUT", Some(bucket), Some(key)).aws_chunked_file(body, &trailer);
        spec = options
            .headers
            .add_to(spec, options.content_type.as_deref(), false);
        if options.if_none_match_any {
            spec = spec.header("if-none-match", "*");
        }
        let response = self.send(&spec).await?;
        let etag = response.header("etag").map(str::to_owned);
        finish(response).await?;
        Ok(etag)
    }

    /// Whether uploads from files under `signing` send their bodies from the file with `sendfile`
    /// and the checksum as an aws-chunked trailer: unsigned payloads to an S3 endpoint over plain
    /// HTTP. A signed payload needs its SHA-256 before the head (a pass over the bytes in user space
    /// anyway), TLS encrypts in user space, and Azure takes blocks with a CRC-64 header.
    pub(crate) fn sends_from_files(&self, signing: PayloadSigning) -> bool {
        !self.signs_payload(signing)
            && !self.is_azure()
            && self.config().endpoint.scheme == crate::config::Scheme::Http
    }
}

/// The part an UploadPart response acknowledged, with the checksum that was sent for it.
async fn completed_part(
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
        if self.is_azure() {
            return self.azure_put_block_list(bucket, key, parts, stored).await;
        }
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

    pub(crate) async fn abort_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<()> {
        if self.is_azure() {
            // Uncommitted blocks are discarded by the service after a week; nothing to abort.
            return Ok(());
        }
        let mut spec = RequestSpec::new("DELETE", Some(bucket), Some(key));
        push_query(&mut spec.query, "uploadId", upload_id);
        let response = self.send(&spec).await?;
        finish(response).await
    }

    /// Downloads `bucket`/`key` to `path` with up to `parts_in_flight` ranged GETs in flight, each
    /// into a pooled block, all pinned to the object's ETag. The bytes go to a temporary file beside
    /// `path`, renamed over it once complete. Returns the object's size.
    ///
    /// The file is checked against the object's stored checksum with no second pass over it: each
    /// range's CRC is computed as the range is written, and the ranges' CRCs are combined in order.
    /// A full-object CRC (CRC32, CRC32C, CRC64NVME: what brisk's uploads store) is compared with
    /// the combination of all ranges; a composite CRC (per part, `<base64>-<parts>`, what other
    /// tools' multipart uploads may store) is rebuilt from ranges cut on the object's part
    /// boundaries (part 1's size from a HEAD with `partNumber=1`; parts of equal size but the
    /// last, which is how every SDK uploads). A mismatch does not say which range was damaged, so
    /// the object is downloaded once more; a second mismatch is [`Error::ChecksumMismatch`], with no
    /// file left behind. A whole-object SHA-256 or SHA-1 (a single PUT's) is checked in a second
    /// pass over the file, as is an MD5 ETag when `verify_md5_etag` asks for it; composite SHA
    /// checksums, and composite checksums of parts of unequal size, are not checked (the `debug`
    /// event says so). An object of at most one part whose size the caller gave
    /// ([`TransferOptions::known_size`]) is one GET checked as [`Client::get_bytes`] checks it.
    ///
    /// A `path` that exists and is not a regular file (`/dev/null`, a named pipe) is not replaced:
    /// the object is streamed into it front to back, its stored checksum checked at the end.
    pub async fn download(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: TransferOptions,
    ) -> Result<u64> {
        options.check(false)?;
        if is_special_file(path) {
            return self.download_in_place(bucket, key, path, &options).await;
        }
        let known = options
            .known_head
            .as_ref()
            .filter(|h| h.bucket == bucket && h.key == key);
        if options
            .known_size
            .or(known.map(|h| h.meta.content_length))
            .is_some_and(|size| size <= options.part_size as u64)
            && !options.verify_md5_etag
            && let Some(size) = self.download_whole(bucket, key, path, &options).await?
        {
            return Ok(size);
        }
        let (meta, stored) = match known {
            Some(head) => (head.meta.clone(), head.stored.clone()),
            None => self.head_with_checksum(bucket, key).await?,
        };
        let etag = meta.etag.ok_or_else(|| Error::UnexpectedResponse {
            what: "HEAD answered without an ETag; a parallel download can not be pinned".into(),
        })?;
        let size = meta.content_length;
        let check = self
            .download_check(bucket, key, &etag, size, stored, options.verify_md5_etag)
            .await?;
        let target = Target {
            bucket,
            key,
            etag: &etag,
            size,
        };
        let mut attempts = 0;
        loop {
            attempts += 1;
            let temp = TempFile::beside(path);
            // Progress counts the bytes once: a second attempt is not reported again.
            let downloaded = self
                .download_to(&target, &temp.path, &options, &check, attempts == 1)
                .await;
            let mut computed = match downloaded {
                // A range that did not match the MD5 Azure sent with it (logged where it was
                // found): the attempt is damaged like one whose whole checksum does not match.
                Err(Error::ChecksumMismatch { .. }) if attempts < DOWNLOAD_ATTEMPTS => continue,
                other => other?,
            };
            if let Some(algorithm) = check.second_pass() {
                computed = digest_file(&temp.path, algorithm).await?;
            }
            if let Some((expected, computed)) = check.mismatch(computed) {
                tracing::warn!(
                    bucket, key, attempt = attempts, algorithm = check.algorithm_name(),
                    %expected, %computed,
                    "downloaded bytes do not match the object's checksum"
                );
                if attempts < DOWNLOAD_ATTEMPTS {
                    continue; // `temp` is dropped, and with it the damaged file
                }
                return Err(Error::ChecksumMismatch {
                    bucket: bucket.to_owned(),
                    key: key.to_owned(),
                    algorithm: check.algorithm_name(),
                    expected,
                    computed,
                });
            }
            temp.persist(path)?;
            return Ok(size);
        }
    }

    /// [`upload`](Self::upload) of a source that is not a regular file: its size reads as 0 and it
    /// cannot be read at offsets, so planning parts from the size uploaded an empty object and said
    /// it had succeeded. It is streamed instead, as `upload_reader` streams stdin.
    async fn upload_in_order(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        // Opening a named pipe waits for its writer: on the blocking pool.
        let source = path.to_owned();
        let file = tokio::task::spawn_blocking(move || std::fs::File::open(source))
            .await
            .map_err(failed_file_task)?
            .map_err(|e| file_error(path, "opening", e))?;
        self.upload_from_read(bucket, key, file, options).await
    }

    /// [`download`](Self::download) to a destination that exists and is not a regular file
    /// (`/dev/null`, a named pipe, a terminal): the object is streamed into it front to back, as
    /// `cat` would ([`download_to_writer`](Self::download_to_writer)). A temporary file renamed
    /// over it would replace the device or pipe with a plain file (or, without the right to
    /// write beside it, fail).
    async fn download_in_place(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: &TransferOptions,
    ) -> Result<u64> {
        // The GET first: a missing object fails before a named pipe's open waits for its reader
        // (on the blocking pool).
        let object = self.get_stream(bucket, key).await?;
        let target = path.to_owned();
        let file = tokio::task::spawn_blocking(move || {
            std::fs::OpenOptions::new().write(true).open(target)
        })
        .await
        .map_err(failed_file_task)?
        .map_err(|e| file_error(path, "opening", e))?;
        self.write_stream(object, file, &path.display().to_string(), options)
            .await
    }

    /// Streams `bucket`/`key` into `out` front to back (stdout, a pipe, a socket, a file opened
    /// by the caller) through one pooled block of at most the part size, counting on the
    /// options' progress; returns the bytes written. Writes run on the blocking pool, with the
    /// block moved there and back, so the bytes are written from where they landed (tokio's
    /// `Stdout` or `File` copies each piece into a buffer of its own first: `brisk cat` of 1 GiB
    /// into `/dev/null` took 0.24–0.26 CPU s that way, 0.17–0.18 written in place: BENCHMARKS.md,
    /// "`brisk cat` written from the block"), and a
    /// slow reader never holds up the runtime. A connection that fails mid-body is resumed and
    /// the stored checksum is verified as the stream ends ([`Client::get_stream`]); what was
    /// written before a failure stays written. A write that fails is [`Error::File`] with the
    /// `io::Error` as its source (a reader that went away: `ErrorKind::BrokenPipe`).
    pub async fn download_to_writer<W>(
        &self,
        bucket: &str,
        key: &str,
        out: W,
        options: TransferOptions,
    ) -> Result<u64>
    where
        W: std::io::Write + Send + 'static,
    {
        options.check(false)?;
        let object = self.get_stream(bucket, key).await?;
        self.write_object_stream(object, out, options).await
    }

    /// [`download_to_writer`](Self::download_to_writer) of an object whose GET the caller has
    /// already started ([`Client::get_stream`]): its length is known from the response head
    /// before a byte is written (for a progress bar's total), with no HEAD before the GET.
    pub async fn write_object_stream<W>(
        &self,
        object: ObjectStream,
        out: W,
        options: TransferOptions,
    ) -> Result<u64>
    where
        W: std::io::Write + Send + 'static,
    {
        options.check(false)?;
        self.write_stream(object, out, "the writer", &options).await
    }

    /// The loop of [`download_to_writer`](Self::download_to_writer); `what` names `out` in errors.
    async fn write_stream<W>(
        &self,
        mut object: ObjectStream,
        mut out: W,
        what: &str,
        options: &TransferOptions,
    ) -> Result<u64>
    where
        W: std::io::Write + Send + 'static,
    {
        let len = options.part_size.clamp(1, MAX_BLOCK_SIZE);
        let mut block = self.buffer_pool().get(len).await.map_err(Error::Memory)?;
        let write_error = |doing: &str, source| Error::File {
            what: format!("{doing} {what}"),
            source,
        };
        let mut written = 0u64;
        loop {
            let n = object.read(&mut block.unfilled_mut()[..len]).await?;
            if n == 0 {
                break;
            }
            let wrote;
            (out, block, wrote) = tokio::task::spawn_blocking(move || {
                let wrote = out.write_all(&block.unfilled_mut()[..n]);
                (out, block, wrote)
            })
            .await
            .map_err(failed_file_task)?;
            wrote.map_err(|e| write_error("writing", e))?;
            written += n as u64;
            options.count(n as u64);
        }
        drop(block);
        tokio::task::spawn_blocking(move || out.flush())
            .await
            .map_err(failed_file_task)?
            .map_err(|e| write_error("flushing", e))?;
        Ok(written)
    }

    /// [`download`](Self::download) of an object known to fit in one part: one GET into an exact
    /// buffer of its size (checked against its stored checksum as it is read, and read again once
    /// if the check fails, as a streamed download is), then written to a temporary file beside
    /// `path`, synced and renamed over it. The file is created here and written on the blocking
    /// pool, so a dropped download leaves nothing: its file is removed and the write, if it is
    /// still running, goes to the removed file. `None`, with nothing written, when the GET says the
    /// object has grown past one part since its size was taken: it is then streamed as any other.
    async fn download_whole(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: &TransferOptions,
    ) -> Result<Option<u64>> {
        let mut attempts = 0;
        let bytes = loop {
            attempts += 1;
            match self
                .get_whole(bucket, key, "download", options.part_size as u64)
                .await
            {
                Err(Error::ChecksumMismatch {
                    algorithm,
                    expected,
                    computed,
                    ..
                }) if attempts < DOWNLOAD_ATTEMPTS => {
                    tracing::warn!(
                        bucket, key, attempt = attempts, algorithm, %expected, %computed,
                        "downloaded bytes do not match the object's checksum"
                    );
                }
                read => match read? {
                    Some(bytes) => break bytes,
                    None => return Ok(None),
                },
            }
        };
        let temp = TempFile::beside(path);
        let file =
            std::fs::File::create(&temp.path).map_err(|e| file_error(&temp.path, "creating", e))?;
        let size = bytes.len() as u64;
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut file = file;
            file.write_all(&bytes).and_then(|()| file.sync_all())
        })
        .await
        .map_err(|e| Error::UnexpectedResponse {
            what: format!("file write task failed: {e}"),
        })?
        .map_err(|e| file_error(&temp.path, "writing", e))?;
        temp.persist(path)?;
        options.count(size);
        Ok(Some(size))
    }

    /// What a download of an object stored with `stored` can check, and how it must cut its
    /// ranges to do so.
    async fn download_check(
        &self,
        bucket: &str,
        key: &str,
        etag: &str,
        size: u64,
        stored: StoredChecksum,
        md5_etag: bool,
    ) -> Result<DownloadCheck> {
        if let Some(full) = stored.full {
            let algorithm = full.algorithm().s3_name();
            if FullObjectCrc::new(full.algorithm()).is_ok() {
                tracing::debug!(
                    bucket,
                    key,
                    algorithm,
                    "the download will be checked against the object's full-object checksum"
                );
                return Ok(DownloadCheck::Full(full));
            }
            tracing::debug!(
                bucket,
                key,
                algorithm,
                "the download will be checked against the object's checksum in a second pass over the file"
            );
            return Ok(DownloadCheck::Digest(full));
        }
        if let Some(composite) = stored.composite {
            let layout = self.first_part_layout(bucket, key, etag).await?;
            return Ok(match layout {
                Some((part_size, parts))
                    if parts == composite.parts
                        && part_size > 0
                        && size.div_ceil(part_size) == u64::from(parts) =>
                {
                    tracing::debug!(
                        bucket,
                        key,
                        algorithm = composite.value.algorithm().s3_name(),
                        parts,
                        part_size,
                        "the download will be checked against the object's composite checksum, part by part"
                    );
                    DownloadCheck::Composite {
                        expected: composite,
                        part_size,
                    }
                }
                _ => {
                    tracing::debug!(
                        bucket,
                        key,
                        ?layout,
                        parts = composite.parts,
                        "the object's parts are not of equal size; its composite checksum is not checked"
                    );
                    DownloadCheck::None
                }
            });
        }
        if let Some(md5) = stored.blob_md5 {
            tracing::debug!(
                bucket,
                key,
                "the download will be checked against the blob's Content-MD5 in a second pass over the file"
            );
            return Ok(DownloadCheck::Md5(md5));
        }
        if let Some(algorithm) = stored.any {
            tracing::debug!(
                bucket,
                key,
                algorithm = algorithm.s3_name(),
                "the object's checksum is composite and not a CRC; this download is not checked end to end"
            );
            return Ok(DownloadCheck::None);
        }
        match (md5_etag, etag.trim_matches('"').parse_md5_hex()) {
            (true, Some(md5)) => {
                tracing::debug!(
                    bucket,
                    key,
                    "the object has no stored checksum; the download will be checked against its ETag (MD5) in a second pass"
                );
                Ok(DownloadCheck::Md5(md5))
            }
            (true, None) => {
                tracing::debug!(
                    bucket,
                    key,
                    etag,
                    "the object has no stored checksum and its ETag is not an MD5; this download is not checked end to end"
                );
                Ok(DownloadCheck::None)
            }
            (false, _) => {
                tracing::debug!(
                    bucket,
                    key,
                    "the object has no stored checksum; this download is not checked end to end"
                );
                Ok(DownloadCheck::None)
            }
        }
    }

    /// One attempt of [`download`](Self::download) into `temp`; returns what `check` computed
    /// over the bytes written.
    ///
    /// S3: `parts_in_flight` workers, each with one connection and two pooled blocks of
    /// [`DOWNLOAD_CHUNK`] bytes, take the next span of consecutive `part_size` ranges (up to
    /// [`DOWNLOAD_SPAN`]), stream it with one GET through the blocks (socket → block, summed range
    /// by range as it lands; block → file while the other block fills) and take the next. The
    /// memory held is `parts_in_flight × 2 × DOWNLOAD_CHUNK` (8 MiB by default) instead of a whole
    /// part per range. One thread makes the writes to the file, in turn.
    async fn download_to(
        &self,
        target: &Target<'_>,
        temp: &Path,
        options: &TransferOptions,
        check: &DownloadCheck,
        count: bool,
    ) -> Result<Computed> {
        let size = target.size;
        let file = std::fs::File::create(temp).map_err(|e| file_error(temp, "creating", e))?;
        file.set_len(size)
            .map_err(|e| file_error(temp, "sizing", e))?;
        let file = Arc::new(file);
        let computed = self
            .download_streamed(target, &file, temp, options, check, count)
            .await?;
        tokio::task::spawn_blocking(move || file.sync_all())
            .await
            .map_err(|e| Error::UnexpectedResponse {
                what: format!("sync task failed: {e}"),
            })?
            .map_err(|e| file_error(temp, "syncing", e))?;
        Ok(computed)
    }

    /// The S3 body of [`download_to`](Self::download_to): the workers described there.
    async fn download_streamed(
        &self,
        target: &Target<'_>,
        file: &Arc<std::fs::File>,
        temp: &Path,
        options: &TransferOptions,
        check: &DownloadCheck,
        count: bool,
    ) -> Result<Computed> {
        let size = target.size;
        // A worker that has ended may still have a write queued while the one started in its
        // place queues its own: room for two per stream.
        let (writes, writer) = start_file_writer(Arc::clone(file), 2 * options.parts_in_flight);
        // Azure sends the MD5 of a range of up to 4 MiB: one part per GET keeps it, and a stream
        // running alone asks for no more.
        let md5_per_part = self.is_azure() && options.part_size as u64 <= TRANSACTIONAL_MD5_MAX;
        let job = Arc::new(StreamedDownload {
            bucket: target.bucket.to_owned(),
            key: target.key.to_owned(),
            etag: target.etag.to_owned(),
            temp: temp.to_owned(),
            chunk: DOWNLOAD_CHUNK.min(options.part_size),
            algorithm: check.algorithm(),
            progress: options.progress.clone().filter(|_| count),
            parts: std::sync::Mutex::new(PartQueue {
                ranges: Ranges::new(size, options.part_size, check),
                index: 0,
                span_parts: if md5_per_part {
                    1
                } else {
                    span_parts(size, options.part_size as u64, options.parts_in_flight)
                },
                scalable: !md5_per_part,
            }),
            crc: std::sync::Mutex::new(RangeCrcs::new(check, size)),
            streams: StreamCount::new(size, options.parts_in_flight, options.measure_streams),
            file: Arc::clone(file),
            writes,
        });
        let mut workers = JoinSet::new();
        for _ in 0..options.parts_in_flight {
            workers.spawn(stream_ranges(self.clone(), Arc::clone(&job)));
        }
        // The first failure ends the attempt; dropping the set aborts the other workers. Workers
        // that end early leave their spans to the others; more are started when the measuring
        // wants all streams back.
        loop {
            tokio::select! {
                done = workers.join_next() => match done {
                    Some(done) => done.map_err(|e| Error::UnexpectedResponse {
                        what: format!("download worker failed: {e}"),
                    })??,
                    None => break,
                },
                () = job.streams.wants_more() => {
                    for _ in 0..job.streams.to_start() {
                        workers.spawn(stream_ranges(self.clone(), Arc::clone(&job)));
                    }
                }
            }
        }
        // Every worker has ended and dropped its handle: the job is this function's alone.
        let job = Arc::into_inner(job).expect("the workers have ended");
        let crc = job.crc.into_inner().unwrap_or_else(|e| e.into_inner());
        // Dropping the job's sender ends the writer, whose writes the workers have all awaited.
        drop(job.writes);
        writer.await.map_err(|e| Error::UnexpectedResponse {
            what: format!("file writer failed: {e}"),
        })?;
        Ok(crc.finish())
    }
}

/// The blocks a streamed download range passes through, two per range in flight: 1 MiB each, so
/// that four ranges in flight hold 8 MiB instead of a whole 8 MiB part each (a 4 GiB download to
/// tmpfs: 13 MiB peak RSS; BENCHMARKS.md, "Download to a file"), with few enough file writes per
/// GiB (1,024) that handing each to the download's writer thread costs nothing measurable.
pub(crate) const DOWNLOAD_CHUNK: usize = 1024 * 1024;

/// How much one GET of a streamed download asks for, at most: consecutive parts up to 64 MiB
/// (8 default parts), so that a 4 GiB download is 64 requests instead of 512. Each request costs
/// the server a lookup and the client a round trip before its first byte; on MinIO the 512 cost
/// more server CPU than the bytes' own transfer did (BENCHMARKS.md, "Download to a file").
pub(crate) const DOWNLOAD_SPAN: u64 = 64 * 1024 * 1024;

/// Parts per GET: as many as fit in [`DOWNLOAD_SPAN`], but no more than an even share of the
/// object among the workers, so that a small object still spreads over them; at least one.
fn span_parts(size: u64, part_size: u64, workers: usize) -> u64 {
    let part_size = part_size.max(1);
    let parts = size.div_ceil(part_size);
    (DOWNLOAD_SPAN / part_size)
        .min(parts / workers.max(1) as u64)
        .max(1)
}

/// What the workers of one streamed download attempt share.
struct StreamedDownload {
    bucket: String,
    key: String,
    etag: String,
    temp: PathBuf,
    /// The size of each worker's block.
    chunk: usize,
    algorithm: Option<ChecksumAlgorithm>,
    /// Where progress is counted, on the attempt that counts it.
    progress: Option<TransferProgress>,
    /// The parts not yet taken.
    parts: std::sync::Mutex<PartQueue>,
    crc: std::sync::Mutex<RangeCrcs>,
    /// How many workers run (see [`StreamCount`]).
    streams: StreamCount,
    /// The file, for the writes a worker running alone makes itself.
    file: Arc<std::fs::File>,
    /// The download's one file writer (see [`start_file_writer`]).
    writes: std::sync::mpsc::SyncSender<FileWrite>,
}

impl StreamedDownload {
    /// The next span for a worker: as long as all workers' spans together while it runs alone
    /// (the same bytes in flight, a quarter of the requests, each of which leaves the one
    /// connection idle for a round trip).
    fn next_span(&self) -> Option<(u64, u64, u64)> {
        let scale = self.streams.span_scale();
        self.parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_span(scale)
    }

    fn parts_of(&self, offset: u64, len: u64) -> Ranges {
        self.parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .parts_of(offset, len)
    }
}

/// A streamed download's parts (`part_size` ranges, cut at the stored parts' boundaries) not yet
/// taken, handed out a span of consecutive parts at a time.
struct PartQueue {
    ranges: Ranges,
    /// The index of the next part.
    index: u64,
    /// How many consecutive parts one GET asks for (see [`DOWNLOAD_SPAN`]).
    span_parts: u64,
    /// Whether a span may be longer while one stream runs alone (not where each GET must stay
    /// one part).
    scalable: bool,
}

impl PartQueue {
    /// The next span, of `scale` times the usual parts where spans may be longer: the index of
    /// its first part, its offset and its length.
    fn next_span(&mut self, scale: usize) -> Option<(u64, u64, u64)> {
        let (offset, mut len) = self.ranges.next()?;
        let first = self.index;
        self.index += 1;
        let parts = if self.scalable {
            self.span_parts * scale as u64
        } else {
            self.span_parts
        };
        while self.index - first < parts {
            let Some((_, more)) = self.ranges.next() else {
                break;
            };
            len += more;
            self.index += 1;
        }
        Some((first, offset, len))
    }

    /// The parts of the span at `offset`, `len` bytes long, one by one: the ones
    /// [`next_span`](Self::next_span) joined into it.
    fn parts_of(&self, offset: u64, len: u64) -> Ranges {
        Ranges {
            size: offset + len,
            next: offset,
            ..self.ranges
        }
    }
}

/// A write made by a worker running alone that takes longer than this (1 MiB to the page cache
/// takes 0.15–0.6 ms) says the storage is throttling writers: the worker hands its blocks to the
/// writer thread from then on, so that the runtime's thread does not wait on storage.
const SLOW_WRITE_HERE: std::time::Duration = std::time::Duration::from_millis(5);

/// A worker writing its own blocks yields to the runtime's other tasks once per this many blocks
/// (8 MiB: a few milliseconds).
const WRITES_HERE_PER_YIELD: u32 = 8;

/// The low-water mark a streamed download's worker sets while it waits for the file writer: 4 MiB,
/// which Linux caps at half the largest receive buffer (3 MiB by default). Measured against
/// leaving the mark at a block's worth: from MinIO, about half the wake-ups again.
const WAKE_AFTER_WHILE_WRITING: usize = 4 << 20;

/// One worker of a streamed download: ranges one after another on one connection, each read
/// through the worker's two blocks into the file at its offset.
///
/// The worker fills one block from the socket, summing each read as it lands (the bytes are still
/// in the CPU's cache), hands it to a blocking write and fills the other meanwhile, so the socket
/// and the file are busy at once. A worker holds at most two blocks and one write in flight. A
/// worker running alone (see [`StreamCount`]) writes each block itself instead, and ends between
/// spans when fewer streams are wanted.
async fn stream_ranges(client: Client, job: Arc<StreamedDownload>) -> Result<()> {
    // The block is taken with the first range: a worker that finds no range holds none.
    let Some(first) = job.next_span() else {
        job.streams.ended();
        return Ok(());
    };
    let block = client.buffer_pool().get(job.chunk).await?;
    let mut writer = ChunkWriter::new(Arc::clone(&job));
    let streamed = stream_ranges_through(&client, &job, first, block, &mut writer).await;
    // The last write is awaited even when a read failed, so that no write to the file outlives
    // the attempt.
    let written = writer.finish().await;
    streamed.and(written)
}

async fn stream_ranges_through(
    client: &Client,
    job: &StreamedDownload,
    mut span: (u64, u64, u64),
    mut block: PooledBlock,
    writer: &mut ChunkWriter,
) -> Result<()> {
    loop {
        let (mut index, offset, len) = span;
        let mut stream = client
            .get_range_stream(&job.bucket, &job.key, &job.etag, offset, len)
            .await?;
        // A block is filled from the socket at a time: a wake-up for less is one too many.
        stream.wake_after(job.chunk);
        // Each part is summed on its own: the parts' CRCs are what the object's checksum is
        // rebuilt from.
        for (part_offset, part_len) in job.parts_of(offset, len) {
            let mut sum = job.algorithm.map(Checksummer::new);
            let end = part_offset + part_len;
            let mut at = part_offset;
            while at < end {
                let want = (end - at).min(job.chunk as u64) as usize;
                let mut filled = 0;
                while filled < want {
                    let n = stream.read(&mut block[filled..want]).await?;
                    if n == 0 {
                        return Err(Error::UnexpectedResponse {
                            what: format!(
                                "range at {offset} ended after {} of {len} bytes",
                                at - offset + filled as u64
                            ),
                        });
                    }
                    if let Some(sum) = &mut sum {
                        sum.update(&block[filled..filled + n]);
                    }
                    filled += n;
                }
                if !(job.streams.alone() && writer.write_here(&block, at, filled).await?) {
                    // While the worker waits for the writer, the segments that keep arriving
                    // would each wake it for nothing.
                    stream.wake_after(WAKE_AFTER_WHILE_WRITING);
                    block = writer.write(client, block, at, filled).await?;
                    stream.wake_after(job.chunk);
                }
                at += filled as u64;
                if let Some(progress) = &job.progress {
                    progress.add(filled as u64);
                }
                job.streams.landed(filled as u64);
            }
            job.crc.lock().unwrap_or_else(|e| e.into_inner()).landed(
                index,
                sum.map(Checksummer::finalize),
                part_offset,
                part_len,
            );
            index += 1;
        }
        // The end of the stream gives its connection back to the pool.
        let rest = stream.read(&mut block[..1]).await?;
        debug_assert_eq!(rest, 0);
        if job.streams.retire() {
            return Ok(());
        }
        match job.next_span() {
            Some(next) => span = next,
            None => {
                job.streams.ended();
                return Ok(());
            }
        }
    }
}

/// What the file writer gives back for one write: the block, or why it was not written.
type Written = std::io::Result<PooledBlock>;

/// One positioned write for a download's file writer; the block comes back through `done`, the
/// sending worker's reply channel.
struct FileWrite {
    block: PooledBlock,
    offset: u64,
    len: usize,
    done: tokio::sync::mpsc::Sender<Written>,
}

/// Starts a download's file writer: one thread of the blocking pool that makes the writes sent to
/// it, in turn, until every sender is dropped. The queue (allocated once, here) has `slots`: as
/// many as writes can be queued at once (each worker has at most one), so it never fills and a
/// send never waits or allocates.
///
/// One writer, not one blocking task per write: concurrent writes to one file contend for its
/// inode lock, which the kernel spins on (a fifth of a 4-way download's CPU to tmpfs), and a task
/// per write cost about seven futex calls per 1 MiB written (scheduling it, the turn it waited
/// for, waking its awaiter) where a queue costs two.
fn start_file_writer(
    file: Arc<std::fs::File>,
    slots: usize,
) -> (
    std::sync::mpsc::SyncSender<FileWrite>,
    tokio::task::JoinHandle<()>,
) {
    let (writes, queue) = std::sync::mpsc::sync_channel::<FileWrite>(slots.max(1));
    let writer = tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::FileExt;
        for write in queue {
            let written = file
                .write_all_at(&write.block[..write.len], write.offset)
                .map(|()| write.block);
            // The worker's reply channel holds one, and it has no other write out, so this never
            // finds it full; a worker that has gone (its attempt failed) no longer wants its block.
            let _ = write.done.try_send(written);
        }
    });
    (writes, writer)
}

/// A streamed-download worker's side of the file writer: at most one of its writes in flight.
struct ChunkWriter {
    job: Arc<StreamedDownload>,
    /// Where the writer gives this worker's blocks back: one channel for the whole worker, so a
    /// write costs no allocation.
    done: tokio::sync::mpsc::Sender<Written>,
    written: tokio::sync::mpsc::Receiver<Written>,
    /// Whether a write is in flight.
    pending: bool,
    /// The worker's second block, back from the writer, while the worker writes its blocks itself.
    spare: Option<PooledBlock>,
    /// Whether one of the worker's own writes was slow (storage throttling writers): it then
    /// hands every block to the writer thread, as the runtime's thread must not wait on storage.
    slow_here: bool,
    /// Blocks the worker has written itself.
    written_here: u32,
}

impl ChunkWriter {
    fn new(job: Arc<StreamedDownload>) -> Self {
        let (done, written) = tokio::sync::mpsc::channel(1);
        Self {
            job,
            done,
            written,
            pending: false,
            spare: None,
            slow_here: false,
            written_here: 0,
        }
    }

    /// Writes `block[..len]` at `offset` on this thread, while the worker runs alone: one stream
    /// from a server that is the bound, where handing each block to the writer thread costs a
    /// wake-up on each side and a cache's worth of copying across cores, and the client needs one
    /// thread, not two (BENCHMARKS.md, "Download streams chosen by measurement"). Returns false,
    /// having written nothing, once a write here has taken longer than [`SLOW_WRITE_HERE`].
    async fn write_here(&mut self, block: &PooledBlock, offset: u64, len: usize) -> Result<bool> {
        use std::os::unix::fs::FileExt;
        if self.slow_here {
            return Ok(false);
        }
        if self.pending {
            // The block handed off before: kept for when blocks are handed off again.
            self.spare = Some(self.join().await?);
        }
        let started = std::time::Instant::now();
        self.job
            .file
            .write_all_at(&block[..len], offset)
            .map_err(|e| file_error(&self.job.temp, "writing", e))?;
        if started.elapsed() > SLOW_WRITE_HERE {
            self.slow_here = true;
        }
        // A socket with data waiting does not yield: let the runtime's other tasks run, every
        // few blocks (on a multi-thread runtime each yield can wake an idle worker thread to
        // steal the task).
        self.written_here += 1;
        if self.written_here.is_multiple_of(WRITES_HERE_PER_YIELD) {
            tokio::task::yield_now().await;
        }
        Ok(true)
    }

    /// Starts writing `block[..len]` at `offset` and returns the block to fill next: the one the
    /// previous write gave back (waiting for it), or on the first write a second block.
    ///
    /// The second block is taken only if the memory budget has room now: a worker waiting for it
    /// while holding its first could wait forever on workers doing the same. Without it the worker
    /// waits for each write before reading on, as with a single block.
    async fn write(
        &mut self,
        client: &Client,
        block: PooledBlock,
        offset: u64,
        len: usize,
    ) -> Result<PooledBlock> {
        let next = if let Some(spare) = self.spare.take() {
            spare
        } else if self.pending {
            self.join().await?
        } else {
            match client.buffer_pool().try_get(self.job.chunk) {
                Ok(second) => second,
                Err(_) => {
                    self.send(block, offset, len)?;
                    return self.join().await;
                }
            }
        };
        self.send(block, offset, len)?;
        // The write handed off before is often done by now, and a socket with data waiting does
        // not yield either: without this a download on a current-thread runtime could run through
        // a whole span before anything else ran (or before a drop could take effect).
        tokio::task::yield_now().await;
        Ok(next)
    }

    fn send(&mut self, block: PooledBlock, offset: u64, len: usize) -> Result<()> {
        self.job
            .writes
            .send(FileWrite {
                block,
                offset,
                len,
                done: self.done.clone(),
            })
            .map_err(|_| stopped())?;
        self.pending = true;
        Ok(())
    }

    /// Waits for the write in flight and takes its block back.
    async fn join(&mut self) -> Result<PooledBlock> {
        self.pending = false;
        self.written
            .recv()
            .await
            .ok_or_else(stopped)?
            .map_err(|e| file_error(&self.job.temp, "writing", e))
    }

    /// Waits for the write in flight, if any.
    async fn finish(mut self) -> Result<()> {
        if self.pending {
            self.join().await?;
        }
        Ok(())
    }
}

fn stopped() -> Error {
    Error::UnexpectedResponse {
        what: "the download's file writer has stopped".into(),
    }
}

/// Attempts of a download whose assembled bytes do not match the stored full-object checksum.
const DOWNLOAD_ATTEMPTS: u32 = 2;

/// What a download reads: the object, pinned to the ETag its HEAD returned.
struct Target<'a> {
    bucket: &'a str,
    key: &'a str,
    etag: &'a str,
    size: u64,
}

/// What a download checks the bytes it wrote against.
enum DownloadCheck {
    /// Nothing: the object has no checksum a download can rebuild.
    None,
    /// The CRC of the whole object.
    Full(ChecksumValue),
    /// A composite CRC: the CRC of the concatenated CRCs of parts of `part_size` bytes.
    Composite {
        expected: MultipartChecksum,
        part_size: u64,
    },
    /// A digest that cannot be combined from ranges (SHA-256, SHA-1): a second pass over the file.
    Digest(ChecksumValue),
    /// The ETag of a single-part object, the MD5 of its bytes: a second pass over the file.
    Md5(Md5Digest),
}

/// What a download computed over the bytes it wrote.
enum Computed {
    Nothing,
    Full(ChecksumValue),
    Composite(MultipartChecksum),
    Md5(Md5Digest),
}

/// The algorithm of a second pass over a downloaded file.
#[derive(Clone, Copy)]
enum SecondPass {
    Checksum(ChecksumAlgorithm),
    Md5,
}

/// Reads the file at `path` from the start and digests it, on the blocking pool.
async fn digest_file(path: &Path, algorithm: SecondPass) -> Result<Computed> {
    use std::io::Read;
    let owned = path.to_owned();
    tokio::task::spawn_blocking(move || -> std::io::Result<Computed> {
        let mut file = std::fs::File::open(&owned)?;
        let mut buf = vec![0u8; SUMMED_READ];
        match algorithm {
            SecondPass::Checksum(algorithm) => {
                let mut sum = Checksummer::new(algorithm);
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        return Ok(Computed::Full(sum.finalize()));
                    }
                    sum.update(&buf[..n]);
                }
            }
            SecondPass::Md5 => {
                let mut sum = Md5::new();
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        return Ok(Computed::Md5(sum.finalize()));
                    }
                    sum.update(&buf[..n]);
                }
            }
        }
    })
    .await
    .map_err(|e| Error::UnexpectedResponse {
        what: format!("digest task failed: {e}"),
    })?
    .map_err(|e| file_error(path, "reading back", e))
}

/// An ETag that is the MD5 of a single-part object's bytes: 32 hex digits.
trait Md5Etag {
    fn parse_md5_hex(&self) -> Option<Md5Digest>;
}

impl Md5Etag for str {
    fn parse_md5_hex(&self) -> Option<Md5Digest> {
        (self.len() == 32)
            .then(|| Md5Digest::from_hex(self).ok())
            .flatten()
    }
}

impl DownloadCheck {
    /// The CRC computed next to each range's write, if any.
    fn algorithm(&self) -> Option<ChecksumAlgorithm> {
        match self {
            Self::None | Self::Digest(_) | Self::Md5(_) => None,
            Self::Full(value) => Some(value.algorithm()),
            Self::Composite { expected, .. } => Some(expected.value.algorithm()),
        }
    }

    /// What a second pass over the finished file must compute, if anything.
    fn second_pass(&self) -> Option<SecondPass> {
        match self {
            Self::Digest(value) => Some(SecondPass::Checksum(value.algorithm())),
            Self::Md5(_) => Some(SecondPass::Md5),
            _ => None,
        }
    }

    fn algorithm_name(&self) -> &'static str {
        match self {
            Self::Md5(_) => "MD5 (ETag)",
            Self::Digest(value) => value.algorithm().s3_name(),
            _ => self.algorithm().map_or("none", ChecksumAlgorithm::s3_name),
        }
    }

    /// The part boundaries ranges must not cross.
    fn part_size(&self) -> Option<u64> {
        match self {
            Self::Composite { part_size, .. } => Some(*part_size),
            _ => None,
        }
    }

    /// `(expected, computed)` as S3 writes them when `computed` differs from what is stored.
    fn mismatch(&self, computed: Computed) -> Option<(String, String)> {
        match (self, computed) {
            (Self::Full(expected), Computed::Full(got)) if got != *expected => {
                Some((expected.to_base64(), got.to_base64()))
            }
            (Self::Composite { expected, .. }, Computed::Composite(got)) if got != *expected => {
                Some((expected.to_string(), got.to_string()))
            }
            (Self::Digest(expected), Computed::Full(got)) if got != *expected => {
                Some((expected.to_base64(), got.to_base64()))
            }
            (Self::Md5(expected), Computed::Md5(got)) if got != *expected => {
                Some((expected.to_hex(), got.to_hex()))
            }
            _ => None,
        }
    }
}

/// The ranges of a download, in order: `step` bytes each, never across a multiple of `boundary`
/// (the object's part boundaries, when a composite checksum is rebuilt part by part).
struct Ranges {
    size: u64,
    step: u64,
    boundary: Option<u64>,
    next: u64,
}

impl Ranges {
    /// The `part_size` ranges of an object of `size` bytes, cut where `check`'s parts end.
    fn new(size: u64, part_size: usize, check: &DownloadCheck) -> Self {
        Self {
            size,
            step: part_size as u64,
            boundary: check.part_size(),
            next: 0,
        }
    }
}

impl Iterator for Ranges {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.next >= self.size {
            return None;
        }
        let limit = self
            .boundary
            .map_or(u64::MAX, |p| (self.next / p + 1).saturating_mul(p));
        let end = self
            .next
            .saturating_add(self.step.max(1))
            .min(limit)
            .min(self.size);
        let range = (self.next, end - self.next);
        self.next = end;
        Some(range)
    }
}

/// The CRCs of a download's ranges, combined in range order as they land in any order: into one
/// CRC of the whole object, or into one CRC per part whose CRCs make the composite checksum.
/// Ranges land at most a window out of order (the parts of one span per worker, 32 by default), so
/// the ranges waiting for an earlier one are few whatever the object's size.
struct RangeCrcs {
    /// The CRC of the bytes combined so far (of the current part, for a composite).
    combined: Option<FullObjectCrc>,
    /// The composite so far and the part size, when rebuilding one.
    composite: Option<(CompositeChecksum, u64)>,
    size: u64,
    waiting: BTreeMap<u64, (ChecksumValue, u64, u64)>,
    next: u64,
}

impl RangeCrcs {
    fn new(check: &DownloadCheck, size: u64) -> Self {
        let algorithm = check.algorithm();
        Self {
            combined: algorithm.map(|a| FullObjectCrc::new(a).expect("a CRC algorithm")),
            composite: match check {
                DownloadCheck::Composite {
                    expected,
                    part_size,
                } => Some((
                    CompositeChecksum::new(expected.value.algorithm())
                        .expect("a composite CRC algorithm"),
                    *part_size,
                )),
                _ => None,
            },
            size,
            waiting: BTreeMap::new(),
            next: 0,
        }
    }

    /// Range `index` (counted from 0) of `len` bytes at `offset` landed with this CRC.
    fn landed(&mut self, index: u64, crc: Option<ChecksumValue>, offset: u64, len: u64) {
        let (Some(_), Some(crc)) = (self.combined.as_ref(), crc) else {
            return;
        };
        self.waiting.insert(index, (crc, offset, len));
        while let Some((crc, offset, len)) = self.waiting.remove(&self.next) {
            let combined = self.combined.as_mut().expect("checked above");
            combined
                .push_part(&crc, len)
                .expect("every range's CRC is of the same algorithm");
            self.next += 1;
            let end = offset + len;
            if let Some((composite, part_size)) = self.composite.as_mut()
                && (end % *part_size == 0 || end == self.size)
            {
                // A part is complete: its CRC goes into the composite, the next part starts anew.
                let algorithm = crc.algorithm();
                let part = std::mem::replace(
                    combined,
                    FullObjectCrc::new(algorithm).expect("a CRC algorithm"),
                );
                composite
                    .push_part(&part.finish())
                    .expect("every part's CRC is of the same algorithm");
            }
        }
    }

    fn finish(self) -> Computed {
        debug_assert!(self.waiting.is_empty(), "every range was combined");
        match (self.combined, self.composite) {
            (None, _) => Computed::Nothing,
            (Some(_), Some((composite, _))) => Computed::Composite(composite.finish()),
            (Some(combined), None) => Computed::Full(combined.finish()),
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

/// Bytes read per `pread` by [`read_part_summed`]: 256 KiB, small enough that the checksum reads
/// them from the CPU's L2 cache right after the kernel wrote them there. Summing a whole 8 MiB part
/// after reading it read it back from memory: 19 % of an unsigned upload's client CPU went to
/// CRC32C that way (perf, 2 GiB from tmpfs to `brisk serve`).
const SUMMED_READ: usize = 256 * 1024;

/// What a part's request declares about its bytes: its checksum and, for a signed payload, its
/// SHA-256 ([`PartSummer`] takes both in one pass).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartSums {
    /// The part's checksum (base64, as its header carries it).
    pub(crate) checksum: String,
    /// The SHA-256 a signed payload declares, when the part was summed for one.
    pub(crate) payload: Option<PayloadHash>,
}

impl PartSums {
    /// The sums of a body already in memory, in one pass.
    pub(crate) fn of(algorithm: UploadChecksum, data: &[u8], signed: bool) -> Self {
        let mut summer = PartSummer::new(algorithm, signed);
        summer.update(data);
        summer.finish()
    }

    /// What `x-amz-content-sha256` declares for `data`: its SHA-256 when `signed` (taken now if it
    /// was not summed for a signature), else `UNSIGNED-PAYLOAD`.
    pub(crate) fn payload_hash(&self, signed: bool, data: &[u8]) -> PayloadHash {
        match (signed, self.payload) {
            (false, _) => PayloadHash::Unsigned,
            (true, Some(hash)) => hash,
            (true, None) => PayloadHash::of(data),
        }
    }
}

/// Takes a part's [`PartSums`] piece by piece. A SHA-256 checksum is the payload's hash as well,
/// so a signed part with one is hashed once.
pub(crate) struct PartSummer {
    checksum: Checksummer,
    /// The payload's SHA-256, when signed and the checksum is not SHA-256 itself.
    payload: Option<Checksummer>,
    signed: bool,
}

impl PartSummer {
    pub(crate) fn new(algorithm: UploadChecksum, signed: bool) -> Self {
        Self {
            checksum: Checksummer::new(algorithm.algorithm()),
            payload: (signed && algorithm != UploadChecksum::Sha256)
                .then(|| Checksummer::new(ChecksumAlgorithm::Sha256)),
            signed,
        }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        self.checksum.update(data);
        if let Some(payload) = &mut self.payload {
            payload.update(data);
        }
    }

    pub(crate) fn finish(self) -> PartSums {
        let checksum = self.checksum.finalize();
        let sha256 = match self.payload {
            Some(payload) => Some(payload.finalize()),
            None if self.signed => Some(checksum),
            None => None,
        };
        PartSums {
            checksum: checksum.to_base64(),
            payload: sha256.map(|digest| {
                PayloadHash::Sha256(
                    digest
                        .as_bytes()
                        .try_into()
                        .expect("a SHA-256 digest is 32 bytes"),
                )
            }),
        }
    }
}

/// Reads `len` bytes at `offset` of `file` into the start of `block` and computes their checksum,
/// and with `signed` the payload's SHA-256 too, piece by piece as each piece arrives, on the
/// blocking pool (file reads block); the block moves to the blocking thread and back, which moves
/// a handle, not the bytes.
///
/// The SHA-256 of a signed part is taken here rather than when the part is sent: there it held
/// the runtime's thread for the whole part (about 5 ms per 8 MiB) and read the part from memory a
/// second time. Neither showed in the time or CPU of a 2 GiB upload on loopback (BENCHMARKS.md
/// "Upload parts without `100 Continue`"); it keeps the runtime's thread free for the sockets.
async fn read_part_summed(
    file: &Arc<std::fs::File>,
    path: &Path,
    offset: u64,
    mut block: PooledBlock,
    len: usize,
    algorithm: UploadChecksum,
    signed: bool,
) -> Result<(PooledBlock, PartSums)> {
    use std::os::unix::fs::FileExt;
    let file = Arc::clone(file);
    let (block, result) = tokio::task::spawn_blocking(move || {
        let mut summer = PartSummer::new(algorithm, signed);
        let mut at = 0;
        let result = loop {
            if at == len {
                break Ok(summer.finish());
            }
            let end = (at + SUMMED_READ).min(len);
            if let Err(e) = file.read_exact_at(&mut block[at..end], offset + at as u64) {
                break Err(e);
            }
            summer.update(&block[at..end]);
            at = end;
        };
        (block, result)
    })
    .await
    .map_err(|e| Error::UnexpectedResponse {
        what: format!("file read task failed: {e}"),
    })?;
    let sums = result.map_err(|e| file_error(path, "reading", e))?;
    Ok((block, sums))
}

/// Whether `path` exists and is neither a regular file nor a directory (following symbolic
/// links): a device such as `/dev/null`, a named pipe, a socket. Such a destination is written in
/// place, never replaced.
fn is_special_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// A download's temporary file, removed when this is dropped unless it was renamed into place:
/// on an error, and also when the download's future is dropped part way (a cancelled task, Ctrl-C
/// in Python, a progress callback that raised), where no error result is ever seen.
struct TempFile {
    path: PathBuf,
    renamed: bool,
}

impl TempFile {
    fn beside(path: &Path) -> Self {
        Self {
            path: temp_path(path),
            renamed: false,
        }
    }

    /// Renames the file over `path`; it is then no longer this guard's to remove.
    fn persist(mut self, path: &Path) -> Result<()> {
        std::fs::rename(&self.path, path).map_err(|e| file_error(path, "renaming into", e))?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A temporary name beside `path`, unique within the process.
fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.brisk-{}-{n}.part", std::process::id()))
}

/// A task on the blocking pool that wrote or opened a file panicked or was cancelled.
fn failed_file_task(e: tokio::task::JoinError) -> Error {
    Error::UnexpectedResponse {
        what: format!("file task failed: {e}"),
    }
}

fn file_error(path: &Path, doing: &str, source: std::io::Error) -> Error {
    Error::File {
        what: format!("{doing} {}", path.display()),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn a_span_is_up_to_64_mib_of_parts_and_an_even_share_at_most() {
        assert_eq!(
            span_parts(4096 * MIB, 8 * MIB, 4),
            8,
            "64 MiB of 8 MiB parts"
        );
        assert_eq!(
            span_parts(40 * MIB, 8 * MIB, 4),
            1,
            "5 parts over 4 workers"
        );
        assert_eq!(
            span_parts(100 * MIB, 8 * MIB, 4),
            3,
            "13 parts over 4 workers"
        );
        assert_eq!(
            span_parts(4096 * MIB, 100 * MIB, 4),
            1,
            "a part larger than a span"
        );
        assert_eq!(span_parts(0, 8 * MIB, 4), 1);
        assert!(span_parts(10, 0, 0) >= 1, "no division by zero");
    }

    #[test]
    fn spans_split_back_into_exactly_the_parts_they_joined() {
        // 8 MiB steps cut at 5 MiB stored parts: the parts are uneven, and spans must still cover
        // them in order, each part once, with consecutive indices; longer while one stream runs
        // alone (scale 4), except where each GET must stay its spans' parts.
        let size = 97 * MIB + 3;
        let ranges = Ranges {
            size,
            step: 8 * MIB,
            boundary: Some(5 * MIB),
            next: 0,
        };
        let expected: Vec<(u64, u64)> = Ranges { ..ranges }.collect();
        for (scalable, scales) in [(true, [1, 1]), (true, [1, 4]), (false, [4, 4])] {
            let mut queue = PartQueue {
                ranges: Ranges { ..ranges },
                index: 0,
                span_parts: 3,
                scalable,
            };
            let mut seen = Vec::new();
            let mut spans = 0;
            let mut longest = 0;
            while let Some((first, offset, len)) = queue.next_span(scales[spans % 2]) {
                assert_eq!(first, seen.len() as u64, "indices run on from span to span");
                let parts: Vec<_> = queue.parts_of(offset, len).collect();
                let most = if scalable { 3 * scales[spans % 2] } else { 3 };
                assert!(!parts.is_empty() && parts.len() <= most, "{parts:?}");
                assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), len);
                longest = longest.max(parts.len());
                seen.extend(parts);
                spans += 1;
            }
            assert_eq!(seen, expected);
            if !(scalable && scales[1] == 4) {
                assert_eq!(spans, expected.len().div_ceil(3), "spans of 3 parts");
            }
            let expect_longest = if scalable && scales[1] == 4 { 12 } else { 3 };
            assert_eq!(
                longest, expect_longest,
                "scalable {scalable}, scales {scales:?}"
            );
        }
    }

    /// A part read for a signed upload carries its payload's SHA-256, taken in the same pass as
    /// its checksum (or the checksum itself, when that is SHA-256); one read for an unsigned
    /// upload carries none. Parts longer and shorter than the 256 KiB read, at an offset.
    #[tokio::test]
    async fn reading_a_part_sums_it_for_its_header_and_its_signature() {
        let bytes: Vec<u8> = (0..3 * SUMMED_READ + 77)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let path = file.path().to_owned();
        let handle = Arc::new(std::fs::File::open(&path).unwrap());
        let pool = brisk_mem::BufferPool::new(brisk_mem::MemoryBudget::new(64 * MIB as usize));
        for (offset, len) in [
            (0, bytes.len()),
            (5, SUMMED_READ - 9),
            (1000, 2 * SUMMED_READ),
        ] {
            let part = &bytes[offset..offset + len];
            for algorithm in [UploadChecksum::Crc32c, UploadChecksum::Sha256] {
                for signed in [false, true] {
                    let block = pool.get(len).await.unwrap();
                    let (block, sums) = read_part_summed(
                        &handle,
                        &path,
                        offset as u64,
                        block,
                        len,
                        algorithm,
                        signed,
                    )
                    .await
                    .unwrap();
                    assert_eq!(&block[..len], part);
                    assert_eq!(sums.checksum, algorithm.compute(part), "{algorithm:?}");
                    let expected = signed.then(|| PayloadHash::of(part));
                    assert_eq!(sums.payload, expected, "{algorithm:?}, signed {signed}");
                    // A body already in memory is summed the same way.
                    assert_eq!(PartSums::of(algorithm, part, signed), sums);
                    let declared = sums.payload_hash(signed, part);
                    let unsigned = PayloadHash::Unsigned;
                    assert_eq!(declared, expected.unwrap_or(unsigned));
                }
            }
        }
    }
}
