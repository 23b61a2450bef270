//! [`Client::upload_reader`]: uploads from an [`AsyncRead`] whose length is not known in advance;
//! [`Client::upload_from_read`] from a blocking [`std::io::Read`] (stdin, a pipe, a device);
//! [`Client::upload_object_stream`] from an object being read (a copy between services).
//!
//! The reader is read into pooled blocks one part at a time: an async reader on the runtime, a
//! blocking one on the blocking pool with the block moved there and back, so its bytes land in the
//! part straight from the read (tokio's `Stdin` or `File` would read into a buffer of their own
//! and copy from it). If it ends within the first part, the
//! object is one PUT from that block; otherwise a multipart upload starts and each full block becomes
//! a part, with up to `parts_in_flight` parts being sent while the next one is read.
//!
//! # Part size
//!
//! The length is unknown, so the part size cannot be chosen from it. Parts start at
//! `options.part_size` and double every [`PART_SIZE_DOUBLING_INTERVAL`] parts up to the pool's largest
//! block ([`MAX_BLOCK_SIZE`], 8 MiB), which keeps small streams in small parts and lets large ones
//! reach 10,000 × 8 MiB ≈ 78 GiB, S3's part limit times the largest block. A stream longer than that
//! fails with [`Error::InvalidArgument`] before part 10,001 is sent (and the upload is aborted).
//!
//! # Memory
//!
//! At most `parts_in_flight + 1` blocks are held: the ones being sent and the one being filled,
//! each paid from the client's budget (a part waits for its block when the budget is full).
//!
//! # Failure
//!
//! A failure of the reader or of any request aborts the multipart upload, so no parts linger.

use brisk_mem::{MAX_BLOCK_SIZE, PooledBlock};
use brisk_wire::xml::CompletedPart;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinSet;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::objects::PutOptions;
use crate::request::{check_bucket, check_key};
use crate::stream::ObjectStream;
use crate::transfer::{MAX_PARTS, TransferOptions, UploadResult, next_finished_part};

/// Parts between doublings of the part size of a stream of unknown length: 1,000. With 5 MiB parts
/// the size reaches the 8 MiB block limit at part 1,001; a stream never runs out of parts before it
/// runs into the 78 GiB ceiling.
pub const PART_SIZE_DOUBLING_INTERVAL: u32 = 1_000;

/// The size of part `part_number` (1-based) of a stream whose first parts are `first` bytes.
pub fn stream_part_size(first: usize, part_number: u32) -> usize {
    let doublings = (part_number.saturating_sub(1) / PART_SIZE_DOUBLING_INTERVAL).min(8);
    first
        .saturating_mul(1usize << doublings)
        .min(MAX_BLOCK_SIZE)
}

impl Client {
    /// Uploads everything `reader` yields to `bucket`/`key`: one PUT if it ends within the first
    /// part, else a multipart upload (see [`crate::upload_stream`]). Returns the bytes read.
    pub async fn upload_reader<R: AsyncRead + Unpin>(
        &self,
        bucket: &str,
        key: &str,
        reader: &mut R,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        self.upload_source(bucket, key, Source::Async(reader), options)
            .await
    }

    /// [`upload_reader`](Self::upload_reader) from a blocking reader (stdin, a named pipe, a
    /// device, a socket): each part is read on the blocking pool straight into its pooled block,
    /// so a slow reader never holds up the runtime and no bytes pass through a buffer of the
    /// reader's own. Returns what `upload_reader` returns.
    pub async fn upload_from_read<R: std::io::Read + Send + 'static>(
        &self,
        bucket: &str,
        key: &str,
        reader: R,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        let source: Source<'_, tokio::io::Empty> = Source::Blocking(Some(Box::new(reader)));
        self.upload_source(bucket, key, source, options).await
    }

    /// Uploads what `source` (an object being read, from this client or another: another
    /// service, account or endpoint) yields to `bucket`/`key`, each part read from the source's
    /// connection straight into its pooled block: a copy between services with no buffer between
    /// the two sides. The source's stored checksum is checked as it ends (before the upload
    /// completes), and a source that fails, or whose bytes do not match, fails the upload, which
    /// is aborted. Returns what [`upload_reader`](Self::upload_reader) returns.
    pub async fn upload_object_stream(
        &self,
        bucket: &str,
        key: &str,
        source: ObjectStream,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        let source: Source<'_, tokio::io::Empty> = Source::Object(Box::new(source));
        self.upload_source(bucket, key, source, options).await
    }

    async fn upload_source<R: AsyncRead + Unpin>(
        &self,
        bucket: &str,
        key: &str,
        mut reader: Source<'_, R>,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        check_bucket(bucket)?;
        check_key(key)?;
        crate::transfer::check_upload_options(&options)?;
        let options = self.with_dialect_checksum(options);
        let first_size = stream_part_size(options.part_size, 1);
        let block = self.buffer_pool().get(first_size).await?;
        let (block, len) = reader.fill(block, first_size).await?;
        if len < first_size {
            let put = self
                .put_with(
                    bucket,
                    key,
                    &block[..len],
                    &PutOptions {
                        payload_signing: options.payload_signing,
                        checksum: options.checksum,
                        content_type: options.content_type.clone(),
                        headers: options.headers.clone(),
                        ..PutOptions::default()
                    },
                )
                .await?;
            options.count(len as u64);
            return Ok(UploadResult {
                etag: put.etag,
                size: len as u64,
                parts: 1,
            });
        }
        let upload_id = self.create_multipart_upload(bucket, key, &options).await?;
        let sent = self
            .send_stream_parts(bucket, key, &upload_id, &mut reader, block, &options)
            .await;
        let completed = match sent {
            Ok((parts, size)) => {
                let count = parts.len() as u32;
                self.complete_multipart_upload(bucket, key, &upload_id, parts, Some(&options))
                    .await
                    .map(|etag| (etag, size, count))
            }
            Err(e) => Err(e),
        };
        match completed {
            Ok((etag, size, parts)) => Ok(UploadResult {
                etag: Some(etag),
                size,
                parts,
            }),
            Err(e) => {
                // Best effort: the upload's failure is what the caller needs to see.
                let _ = self.abort_multipart_upload(bucket, key, &upload_id).await;
                Err(e)
            }
        }
    }

    /// Sends `first` (a full first part) and every further part the reader yields; returns the
    /// parts in order and the total size.
    async fn send_stream_parts<R: AsyncRead + Unpin>(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        reader: &mut Source<'_, R>,
        first: PooledBlock,
        options: &TransferOptions,
    ) -> Result<(Vec<CompletedPart>, u64)> {
        let signed = self.signs_payload(options.payload_signing);
        let mut done = Vec::new();
        let mut tasks: JoinSet<Result<CompletedPart>> = JoinSet::new();
        let mut next: Option<(PooledBlock, usize)> =
            Some((first, stream_part_size(options.part_size, 1)));
        let mut part_number = 1u32;
        let mut size = 0u64;
        loop {
            while tasks.len() < options.parts_in_flight {
                let Some((block, len)) = next.take() else {
                    break;
                };
                if u64::from(part_number) > MAX_PARTS {
                    return Err(Error::InvalidArgument {
                        what: format!(
                            "the stream is longer than {MAX_PARTS} parts ({size} bytes sent so far); S3 allows {MAX_PARTS} parts"
                        ),
                    });
                }
                size += len as u64;
                let part = StreamPart {
                    upload_id,
                    number: part_number,
                    block,
                    len,
                    signed,
                };
                self.spawn_stream_part(&mut tasks, bucket, key, part, options);
                part_number += 1;
                // A part shorter than its size was the last one.
                let wanted = stream_part_size(options.part_size, part_number);
                let block = self.buffer_pool().get(wanted).await?;
                let (block, read) = reader.fill(block, wanted).await?;
                if read > 0 {
                    next = Some((block, read));
                }
                if read < wanted {
                    break;
                }
            }
            match next_finished_part(&mut tasks, "upload").await? {
                Some(part) => done.push(part),
                None if next.is_none() => break,
                None => {}
            }
        }
        done.sort_by_key(|p| p.part_number);
        Ok((done, size))
    }
}

/// A full block of a stream, ready to be sent as part `number` of `upload_id`.
pub(crate) struct StreamPart<'a> {
    pub upload_id: &'a str,
    pub number: u32,
    pub block: PooledBlock,
    /// The bytes of `block` that are the part.
    pub len: usize,
    pub signed: bool,
}

impl Client {
    /// Sends `part` on a task of its own in `tasks`, counting its bytes in `options.progress` once
    /// the server has them.
    pub(crate) fn spawn_stream_part(
        &self,
        tasks: &mut JoinSet<Result<CompletedPart>>,
        bucket: &str,
        key: &str,
        part: StreamPart<'_>,
        options: &TransferOptions,
    ) {
        let (client, bucket, key) = (self.clone(), bucket.to_owned(), key.to_owned());
        let upload_id = part.upload_id.to_owned();
        let StreamPart {
            number,
            block,
            len,
            signed,
            ..
        } = part;
        let checksum = options.checksum;
        let progress = options.progress.clone();
        tasks.spawn(async move {
            let part = client
                .upload_part(
                    &bucket,
                    &key,
                    &upload_id,
                    number,
                    &block[..len],
                    signed,
                    checksum,
                    None,
                )
                .await?;
            if let Some(progress) = progress {
                progress.add(len as u64);
            }
            Ok(part)
        });
    }
}

/// Where a stream upload's parts come from.
enum Source<'r, R> {
    /// An async reader, read on the runtime.
    Async(&'r mut R),
    /// A blocking reader, read on the blocking pool (taken out while a read runs there).
    Blocking(Option<Box<dyn std::io::Read + Send>>),
    /// An object being read.
    Object(Box<ObjectStream>),
}

impl<R: AsyncRead + Unpin> Source<'_, R> {
    /// Reads into `block` until `len` bytes or the end of the stream; returns the block and how
    /// many bytes it holds.
    async fn fill(&mut self, mut block: PooledBlock, len: usize) -> Result<(PooledBlock, usize)> {
        let failed = |filled: usize, source| Error::File {
            what: format!("reading the upload stream after {filled} bytes of a part"),
            source,
        };
        match self {
            Self::Async(reader) => {
                let mut filled = 0;
                while filled < len {
                    let n = reader
                        .read(&mut block[filled..len])
                        .await
                        .map_err(|e| failed(filled, e))?;
                    if n == 0 {
                        break;
                    }
                    filled += n;
                }
                Ok((block, filled))
            }
            Self::Object(stream) => {
                let mut filled = 0;
                while filled < len {
                    let n = stream.read(&mut block[filled..len]).await?;
                    if n == 0 {
                        break;
                    }
                    filled += n;
                }
                Ok((block, filled))
            }
            Self::Blocking(slot) => {
                let mut reader = slot.take().ok_or_else(|| Error::UnexpectedResponse {
                    what: "the upload stream's reader was lost by a failed read".into(),
                })?;
                let (reader, block, read) = tokio::task::spawn_blocking(move || {
                    let mut filled = 0;
                    let read = loop {
                        if filled == len {
                            break Ok(filled);
                        }
                        match reader.read(&mut block[filled..len]) {
                            Ok(0) => break Ok(filled),
                            Ok(n) => filled += n,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => break Err((filled, e)),
                        }
                    };
                    (reader, block, read)
                })
                .await
                .map_err(|e| Error::UnexpectedResponse {
                    what: format!("upload stream read task failed: {e}"),
                })?;
                *slot = Some(reader);
                let filled = read.map_err(|(filled, e)| failed(filled, e))?;
                Ok((block, filled))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::{DEFAULT_PART_SIZE, MIN_PART_SIZE};

    #[test]
    fn part_size_grows_to_the_block_limit() {
        let mib = 1024 * 1024;
        assert_eq!(stream_part_size(MIN_PART_SIZE, 1), 5 * mib);
        assert_eq!(stream_part_size(MIN_PART_SIZE, 1_000), 5 * mib);
        assert_eq!(stream_part_size(MIN_PART_SIZE, 1_001), 8 * mib);
        assert_eq!(stream_part_size(DEFAULT_PART_SIZE, 10_000), 8 * mib);
        assert_eq!(stream_part_size(MIN_PART_SIZE, u32::MAX), 8 * mib);
    }

    #[test]
    fn ten_thousand_parts_hold_78_gib() {
        let total: u64 = (1..=MAX_PARTS as u32)
            .map(|n| stream_part_size(MIN_PART_SIZE, n) as u64)
            .sum();
        assert!(total > 75 * (1u64 << 30), "{total}");
    }
}
