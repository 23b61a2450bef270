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
//! [`Client::download`](crate::Client::download)).
//!
//! # Where it is
//!
//! This module holds what the transfers share: their options ([`TransferOptions`]), progress
//! ([`TransferProgress`]) and result ([`UploadResult`]), and S3's limits on parts. The file
//! upload driver is `upload.rs`; the multipart primitives it shares with
//! [`ObjectWriter`](crate::ObjectWriter) and [`Client::copy_object`](crate::Client::copy_object)
//! are `multipart.rs`; the download, its file writer and its checks are `download/`; a part's
//! checksums are `part_sums.rs`, the temporary file `local_file.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use brisk_mem::MAX_BLOCK_SIZE;

use crate::error::{Error, Result};
use crate::integrity::UploadChecksum;
use crate::objects::{DownloadHead, ObjectHeaders, PayloadSigning};
use crate::stream_count::StreamMeasure;

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
/// BENCHMARKS-log.md "Upload parts without `100 Continue`"); once `brisk serve` wrote bodies off its
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
    /// The object's size, when the caller knows it already (from a listing, or a HEAD of its own).
    /// A download of an object no larger than one part is then one GET into a buffer of the
    /// object's size, checked as [`Client::get_bytes`](crate::Client::get_bytes) checks it, with no
    /// HEAD before it: half the requests for a tree of small objects. The hint only picks the path:
    /// the file holds what the GET returned, and an object that has grown past one part meanwhile
    /// is streamed in ranges as any other (its first GET dropped unread). Ignored by uploads, and
    /// with `verify_md5_etag`.
    pub known_size: Option<u64>,
    /// The object's HEAD, when the caller made it already
    /// ([`Client::head_for_download`](crate::Client::head_for_download)): a download of that object
    /// then makes no HEAD of its own and takes its size, ETag and stored checksum from it. Ignored
    /// for another object, and by uploads.
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

    /// Checks the part size (uploads: within S3's and the pool's limits) and the parts in flight.
    pub(crate) fn check(&self, upload: bool) -> Result<()> {
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
